// Embedder on tiny random-weight embedding models (bert, nomic-bert) against
// llama.cpp's llama-embedding (tests/engine/refdata, made by
// scripts/gen_embedding_refs.py): every pooling type, raw and L2-normalised,
// all inputs in one call as llama.cpp batches them. Then batching
// invariance, the token count, concurrent callers, and every error.
#include "engine/embedder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "gguf/gguf_writer.h"

namespace folio {
namespace embedder_test {

using nlohmann::json;
using Inputs = std::vector<std::vector<int32_t>>;

const std::string kRefdata = std::string(FOLIO_SOURCE_DIR) + "/tests/engine/refdata/";

json load_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("missing reference file " + path);
  return json::parse(f);
}

struct Loaded {
  json ref;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

// The model and tokenizer of `name` (tiny-bert, tiny-nomic-bert) with its
// references, loaded once.
Loaded& loaded(const std::string& name) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Loaded l;
  l.ref = load_json(kRefdata + name + ".json");
  auto m = model::Model::load(kRefdata + l.ref["model"].get<std::string>());
  if (!m.ok()) throw std::runtime_error(m.status().to_string());
  l.model = std::move(m).value();
  auto t = tokenizer::Tokenizer::from_gguf(l.model->file());
  if (!t.ok()) throw std::runtime_error(t.status().to_string());
  l.tok = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
  return cache.emplace(name, std::move(l)).first->second;
}

Inputs ref_inputs(const json& ref) {
  Inputs in;
  for (const json& c : ref["embed"]) in.push_back(c["tokens"].get<std::vector<int32_t>>());
  return in;
}

std::unique_ptr<Embedder> make(const Loaded& l, EmbedderOptions o = {}) {
  auto e = Embedder::create(*l.model, *l.tok, o);
  if (!e.ok()) throw std::runtime_error(e.status().to_string());
  return std::move(e).value();
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

// ---------------------------------------------------------------------------
// Parity with llama.cpp

struct ParityCase {
  const char* model;
  const char* pooling;
  model::PoolingType type;
  // Max |diff| allowed on L2-normalised vectors (and twice that relative to
  // a vector's largest component, raw or normalised). bert: ggml's GELU reads
  // an fp16 table (measured: 1.2e-4; the generator's NumPy float64 forward
  // differs from llama.cpp by as much); nomic-bert: 2e-7.
  double max_abs;
};

class EmbedderParity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(EmbedderParity, MatchesLlamaCpp) {
  const ParityCase& p = GetParam();
  Loaded& l = loaded(p.model);
  const Inputs inputs = ref_inputs(l.ref);
  EmbedderOptions o;
  o.pooling = p.type;
  o.n_threads = 2;
  std::unique_ptr<Embedder> e = make(l, o);
  for (const bool normalize : {true, false}) {
    const json& want = l.ref["embeddings"][p.pooling][normalize ? "normalized" : "raw"];
    int64_t n_tokens = -1;
    auto got = e->embed(inputs, normalize, &n_tokens);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), inputs.size());
    int64_t total = 0;
    for (const auto& in : inputs) total += static_cast<int64_t>(in.size());
    EXPECT_EQ(n_tokens, total);
    double worst_cos = 1.0, worst_abs = 0.0, worst_rel = 0.0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<float> ref = want[i].get<std::vector<float>>();
      const std::vector<float>& v = (*got)[i];
      ASSERT_EQ(v.size(), ref.size()) << "input " << i;
      // Pooling none: compare token by token.
      const size_t e_dim = static_cast<size_t>(e->n_embd());
      for (size_t off = 0; off < v.size(); off += e_dim) {
        const std::vector<float> a(v.begin() + off, v.begin() + off + e_dim);
        const std::vector<float> b(ref.begin() + off, ref.begin() + off + e_dim);
        worst_cos = std::min(worst_cos, cosine(a, b));
        double norm = 0;
        for (float x : b) norm = std::max(norm, std::fabs(static_cast<double>(x)));
        const double d = max_abs_diff(a, b);
        worst_abs = std::max(worst_abs, d);
        worst_rel = std::max(worst_rel, d / norm);
      }
    }
    std::printf("[ parity ] %-16s pooling %-4s %-10s min cosine %.9f  max |diff| %.3g  "
                "(relative to the vector's max |x|: %.3g)\n",
                p.model, p.pooling, normalize ? "normalized" : "raw", worst_cos, worst_abs,
                worst_rel);
    EXPECT_GT(worst_cos, 0.9999);
    EXPECT_LT(worst_rel, 2 * p.max_abs) << "relative to the largest component";
    if (normalize) {
      EXPECT_LT(worst_abs, p.max_abs);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, EmbedderParity,
    ::testing::Values(ParityCase{"tiny-bert", "mean", model::PoolingType::kMean, 5e-4},
                      ParityCase{"tiny-bert", "cls", model::PoolingType::kCls, 5e-4},
                      ParityCase{"tiny-bert", "last", model::PoolingType::kLast, 5e-4},
                      ParityCase{"tiny-bert", "none", model::PoolingType::kNone, 5e-4},
                      ParityCase{"tiny-nomic-bert", "mean", model::PoolingType::kMean, 5e-6},
                      ParityCase{"tiny-nomic-bert", "cls", model::PoolingType::kCls, 5e-6},
                      ParityCase{"tiny-nomic-bert", "last", model::PoolingType::kLast, 5e-6},
                      ParityCase{"tiny-nomic-bert", "none", model::PoolingType::kNone, 5e-6}),
    [](const ::testing::TestParamInfo<ParityCase>& i) {
      std::string s = std::string(i.param.model) + "_" + i.param.pooling;
      for (char& c : s) {
        if (c == '-') c = '_';
      }
      return s;
    });

TEST(Embedder, TokenizesLikeLlamaCpp) {
  for (const char* name : {"tiny-bert", "tiny-nomic-bert"}) {
    Loaded& l = loaded(name);
    std::unique_ptr<Embedder> e = make(l);
    for (const json& c : l.ref["tokenize"]) {
      const std::string text = c["text"].get<std::string>();
      EXPECT_EQ(e->tokenize(text), c["tokens"].get<std::vector<int32_t>>()) << name << ": " << text;
    }
  }
}

TEST(Embedder, ModelDefaultsAndAccessors) {
  Loaded& l = loaded("tiny-bert");
  const model::ModelConfig& c = l.model->config();
  EXPECT_TRUE(c.is_embedding());
  EXPECT_FALSE(c.causal_attn);
  EXPECT_EQ(c.pooling, model::PoolingType::kMean);
  EXPECT_TRUE(c.learned_pos);
  EXPECT_EQ(c.n_token_types, 2);
  std::unique_ptr<Embedder> e = make(l);
  EXPECT_EQ(e->pooling(), model::PoolingType::kMean);  // the file's pooling_type
  EXPECT_EQ(e->n_embd(), 64);
  EXPECT_EQ(e->n_ctx_train(), 64);
  EXPECT_NE(c.summary().find("embedding model (pooling mean)"), std::string::npos) << c.summary();
  const model::ModelConfig& n = loaded("tiny-nomic-bert").model->config();
  EXPECT_TRUE(n.fused_qkv);
  EXPECT_EQ(n.rope.mode, RopeMode::kNeox);
  EXPECT_FLOAT_EQ(n.rope.freq_base, 1000.0f);
}

// ---------------------------------------------------------------------------
// Batching: a vector does not depend on what else is in the call

TEST(Embedder, BatchingDoesNotChangeVectors) {
  for (const char* name : {"tiny-bert", "tiny-nomic-bert"}) {
    Loaded& l = loaded(name);
    const Inputs inputs = ref_inputs(l.ref);
    std::unique_ptr<Embedder> all = make(l);
    auto together = all->embed(inputs, true);
    ASSERT_TRUE(together.ok()) << together.status().to_string();
    // One forward per input (max_batch_tokens 1: every input runs alone).
    EmbedderOptions small;
    small.max_batch_tokens = 1;
    std::unique_ptr<Embedder> alone = make(l, small);
    // Reversed order, and each input on its own.
    Inputs reversed(inputs.rbegin(), inputs.rend());
    auto rev = alone->embed(reversed, true);
    ASSERT_TRUE(rev.ok()) << rev.status().to_string();
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto one = all->embed({inputs[i]}, true);
      ASSERT_TRUE(one.ok());
      EXPECT_LT(max_abs_diff((*one)[0], (*together)[i]), 1e-5) << name << " input " << i;
      EXPECT_LT(max_abs_diff((*rev)[inputs.size() - 1 - i], (*together)[i]), 1e-5)
          << name << " input " << i;
    }
  }
}

TEST(Embedder, LongInputGrowsTheCacheAndUsesTheWholeContext) {
  Loaded& l = loaded("tiny-bert");
  EmbedderOptions o;
  o.max_batch_tokens = 8;  // smaller than the input: it runs alone in a bigger pool
  std::unique_ptr<Embedder> e = make(l, o);
  std::vector<int32_t> longest(64, 200);  // n_ctx_train tokens exactly
  longest.front() = 101;
  longest.back() = 102;
  auto v = e->embed({longest, {101, 7, 102}}, true);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  double norm = 0;
  for (float x : (*v)[0]) norm += static_cast<double>(x) * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  std::unique_ptr<Embedder> big = make(l);
  auto w = big->embed({longest}, true);
  ASSERT_TRUE(w.ok());
  EXPECT_LT(max_abs_diff((*v)[0], (*w)[0]), 1e-5);
}

TEST(Embedder, ConcurrentCallersGetTheirOwnVectors) {
  Loaded& l = loaded("tiny-bert");
  const Inputs inputs = ref_inputs(l.ref);
  std::unique_ptr<Embedder> e = make(l);
  auto want = e->embed(inputs, true);
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::vector<std::vector<std::vector<float>>> got(4);
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        auto r = e->embed({inputs[t % inputs.size()]}, true);
        if (r.ok()) got[t] = std::move(r).value();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].size(), 1u);
    EXPECT_LT(max_abs_diff(got[t][0], (*want)[t % inputs.size()]), 1e-5);
  }
}

// ---------------------------------------------------------------------------
// Errors

TEST(Embedder, RejectsBadInputsBeforeRunning) {
  Loaded& l = loaded("tiny-bert");
  std::unique_ptr<Embedder> e = make(l);
  auto none = e->embed({}, true);
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  auto empty = e->embed({{101, 102}, {}}, true);
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("input 1 is empty"), std::string::npos)
      << empty.status().to_string();
  auto too_long = e->embed({{101, 102}, std::vector<int32_t>(65, 200)}, true);
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("input 1 has 65 tokens, more than the model's "
                                              "context of 64"),
            std::string::npos)
      << too_long.status().to_string();
  const int32_t n_vocab = static_cast<int32_t>(l.model->config().n_vocab);
  auto bad_id = e->embed({{101, n_vocab, 102}}, true);
  EXPECT_EQ(bad_id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_id.status().message().find("token id"), std::string::npos);
  auto neg_id = e->embed({{-1}}, true);
  EXPECT_EQ(neg_id.status().code(), StatusCode::kInvalidArgument);
  // The Embedder still works after the errors.
  auto ok = e->embed({{101, 7, 102}}, false);
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
}

TEST(Embedder, RejectsGenerativeModelsAndRankPooling) {
  auto llama = model::Model::load(std::string(FOLIO_REFDATA_DIR) + "/models/tiny-llama-f32.gguf");
  ASSERT_TRUE(llama.ok()) << llama.status().to_string();
  auto tok = tokenizer::Tokenizer::from_gguf((*llama)->file());
  ASSERT_TRUE(tok.ok());
  auto e = Embedder::create(**llama, *tok);
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("not an embedding model"), std::string::npos)
      << e.status().to_string();

  Loaded& l = loaded("tiny-bert");
  EmbedderOptions rank;
  rank.pooling = model::PoolingType::kRank;
  EXPECT_EQ(Embedder::create(*l.model, *l.tok, rank).status().code(), StatusCode::kUnsupported);
  EmbedderOptions zero;
  zero.max_batch_tokens = 0;
  EXPECT_EQ(Embedder::create(*l.model, *l.tok, zero).status().code(),
            StatusCode::kInvalidArgument);

  // The model layer: no logits from an encoder, no hidden states from a decoder.
  auto ctx = model::ForwardContext::cpu(1);
  cache::KvCacheOptions co;
  co.n_ctx = 16;
  auto cache = l.model->make_cache(co);
  ASSERT_TRUE(cache.ok());
  cache::Batch b;
  b.add(101, 0, 0, true);
  EXPECT_EQ(l.model->forward(b, **cache, *ctx).status().code(), StatusCode::kUnsupported);
  auto lcache = (*llama)->make_cache(co);
  ASSERT_TRUE(lcache.ok());
  EXPECT_EQ((*llama)->embed(b, **lcache, *ctx).status().code(), StatusCode::kUnsupported);
  // Non-causal: a sequence is fed whole, never continued by a later batch.
  cache::Batch first;
  first.add(101, 0, 0, true);
  first.add(102, 1, 0, true);
  auto h = l.model->embed(first, **cache, *ctx);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(h->ne[0], 64);
  EXPECT_EQ(h->ne[1], 2);
  cache::Batch more;
  more.add(7, 2, 0, true);
  Status s = l.model->embed(more, **cache, *ctx).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("fed whole"), std::string::npos) << s.to_string();
}

// The tiny-bert file with its metadata changed: `drop` removed, `set` replaced.
Status load_variant(const std::string& drop, const std::string& key = "",
                    gguf::Value value = gguf::Value(int64_t{0})) {
  Loaded& l = loaded("tiny-bert");
  const gguf::GgufFile& f = l.model->file();
  gguf::GgufWriter w;
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (kv.key == drop) continue;
    FOLIO_RETURN_IF_ERROR(w.add(kv.key, kv.key == key ? value : kv.value));
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_bytes(t);
    FOLIO_RETURN_IF_ERROR(w.add_tensor(t.name, t.type_id, std::span<const int64_t>(t.ne.data(), t.n_dims),
                                       std::vector<uint8_t>(bytes.begin(), bytes.end())));
  }
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::parse(w.to_bytes()));
  Result<std::unique_ptr<model::Model>> m = model::Model::from_gguf(std::move(file));
  return m.ok() ? Status() : m.status();
}

TEST(Embedder, BertMetadataErrorsNameTheKey) {
  ASSERT_TRUE(load_variant("").ok());  // the rewrite itself loads
  Status s = load_variant("bert.attention.causal");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("bert.attention.causal"), std::string::npos) << s.to_string();
  s = load_variant("bert.attention.layer_norm_epsilon");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("bert.attention.layer_norm_epsilon"), std::string::npos);
  s = load_variant("tokenizer.ggml.token_type_count");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  s = load_variant("", "bert.pooling_type", gguf::Value(uint32_t{4}));
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("rank"), std::string::npos) << s.to_string();
  s = load_variant("", "bert.pooling_type", gguf::Value(uint32_t{9}));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // Without pooling_type a bert file loads with pooling none (llama.cpp's default).
  EXPECT_TRUE(load_variant("bert.pooling_type").ok());
}

}  // namespace
}  // namespace folio
