// The model over the paged KV cache (cache/paged_kv_cache.h).
//
// Every comparison here is exact (bit for bit), never within a tolerance:
//   - paged vs contiguous: set_rows converts a row the same way whatever slot
//     it lands in, and flash attention visits positions in ascending order on
//     a fixed tile grid whatever the layout (op.h "Attention inputs",
//     backend/cpu/drivers/flash_attn_tiled.h), so a permuted, fragmented block
//     allocation cannot change a bit;
//   - a batch mixing sequences, prefill chunks and decode tokens vs each
//     sequence alone in one prefill: every op computes an output row from its
//     own input row(s) in an order fixed by the inner dimensions
//     (tests/model/batch_test.cc), and attention rows depend only on their own
//     q and visible K/V rows, not on the chunking;
//   - prefix sharing: the shared blocks hold exactly the K/V the sequence
//     would have computed itself (same rows, same conversion), so computing
//     only the suffix gives the same logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "cache/paged_kv_cache.h"
#include "test_util.h"

namespace folio::model::testing {
namespace paged_kv_cache_test {

using Rows = std::vector<std::vector<float>>;  // logits per position

std::unique_ptr<Model> load(const std::string& path) {
  Result<std::unique_ptr<Model>> m = Model::load(path);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<cache::PagedKvCache> paged(const Model& m, DType kv, int32_t n_blocks,
                                           int32_t block_size = 8, int n_seq = 0) {
  cache::KvCacheOptions o;
  o.type = kv;
  o.block_size = block_size;
  o.n_blocks = n_blocks;
  o.n_ctx = 256;
  o.n_seq = n_seq;
  o.max_seqs = 8;           // sliding-window pages hold this many sequences' windows
  o.max_step_tokens = 256;  // and a step this long
  Result<std::unique_ptr<cache::PagedKvCache>> c =
      cache::PagedKvCache::create(m.config().cache_geometry(), o);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  // The null block pads block tables and stands for blocks dropped out of a
  // window: no kernel may read it. NaN there would reach the logits.
  for (int il = 0; il < (*c)->n_layer(); ++il) {
    for (const TensorView& t : {(*c)->k_view(il), (*c)->v_view(il)}) {
      std::memset(t.data, 0xff, static_cast<size_t>(t.nb[3]));
    }
  }
  return std::move(c).value();
}

std::vector<int32_t> tokens_of(int64_t n_vocab, int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i)
    t.push_back(static_cast<int32_t>((i * 37 + salt * 101 + 11) % n_vocab));
  return t;
}

bool same_bits(const float* a, const std::vector<float>& b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}

// Alone on a contiguous cache: the prompt as one batch, then `steps` greedy
// tokens one at a time. Logits of every position fed; `gen` gets the tokens.
Rows solo(const Model& m, DType kv, const std::vector<int32_t>& prompt, int steps,
          std::vector<int32_t>* gen = nullptr) {
  auto ctx = ForwardContext::cpu(2);
  auto cache = m.make_cache({256, 1, kv});
  EXPECT_TRUE(cache.ok());
  const int64_t nv = m.config().n_vocab;
  Rows rows;
  Result<std::vector<float>> pre = eval_all(m, **cache, *ctx, prompt);
  EXPECT_TRUE(pre.ok()) << pre.status().to_string();
  if (!pre.ok()) return rows;
  for (size_t i = 0; i < prompt.size(); ++i) {
    rows.emplace_back(pre->begin() + static_cast<int64_t>(i) * nv,
                      pre->begin() + static_cast<int64_t>(i + 1) * nv);
  }
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(rows.back().data(), nv);
    if (gen != nullptr) gen->push_back(next);
    Result<std::vector<float>> row = eval_one(m, **cache, *ctx, next);
    EXPECT_TRUE(row.ok()) << row.status().to_string();
    if (!row.ok()) break;
    rows.push_back(*row);
  }
  return rows;
}

// Feeds tokens[begin, end) of sequence `seq` as one batch (all outputs).
Result<TensorView> feed(const Model& m, cache::KvCache& cache, ForwardContext& ctx, int seq,
                        const std::vector<int32_t>& tokens, size_t begin, size_t end) {
  cache::Batch b;
  for (size_t i = begin; i < end; ++i) b.add(tokens[i], static_cast<int32_t>(i), seq, true);
  return m.forward(b, cache, ctx);
}

// Scrambles the free queue: sequences of assorted lengths are computed
// (real K/V, some full blocks registered) and removed in a shuffled order.
void fragment(const Model& m, cache::PagedKvCache& cache, ForwardContext& ctx) {
  const int64_t nv = m.config().n_vocab;
  cache::Batch b;
  std::vector<int> ids;
  const int lens[] = {13, 29, 8, 21, 17, 3};
  for (int i = 0; i < 6; ++i) {
    Result<int> s = cache.add_sequence();
    ASSERT_TRUE(s.ok());
    ids.push_back(*s);
    const std::vector<int32_t> t = tokens_of(nv, lens[i], 50 + i);
    for (int p = 0; p < lens[i]; ++p) b.add(t[static_cast<size_t>(p)], p, *s, false);
  }
  ASSERT_TRUE(m.forward(b, cache, ctx).ok());
  for (int i : {2, 0, 5, 4, 1, 3})
    ASSERT_TRUE(cache.remove_sequence(ids[static_cast<size_t>(i)]).ok());
}

struct ModelCase {
  std::string path;
  std::string name;
};

std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> v;
  for (const char* n : {"tiny-llama", "tiny-qwen3"}) {
    v.push_back({shared_models_dir() + "/" + n + "-f32.gguf", n});
  }
  for (const char* n :
       {"tiny-qwen2", "tiny-qwen3moe", "tiny-gemma3", "tiny-gemma3-swa2-softcap",
        "tiny-llama-rope-linear", "tiny-llama-yarn", "tiny-llama-mha", "tiny-gpt-oss",
                        "tiny-phi3", "tiny-mistral3", "tiny-glm4moe", "tiny-gemma4",
                        "tiny-gemma4-moe"}) {
    v.push_back({local_refdata_dir() + "/" + n + "-f32.gguf", n});
  }
  return v;
}

struct LayoutParam {
  ModelCase model;
  DType kv;
};

class PagedVsContiguous : public ::testing::TestWithParam<LayoutParam> {};

// Same chunks on both caches; the paged one allocates from a fragmented pool
// (blocks in a permuted order): every logit row is bit-identical.
TEST_P(PagedVsContiguous, LogitsAreBitIdentical) {
  const LayoutParam& p = GetParam();
  if (!file_exists(p.model.path)) FAIL() << "model missing: " << p.model.path;
  std::unique_ptr<Model> m = load(p.model.path);
  ASSERT_NE(m, nullptr);
  const int64_t nv = m->config().n_vocab;
  std::vector<int32_t> toks = tokens_of(nv, 50, 1);
  constexpr int kSteps = 6;
  auto ctx = ForwardContext::cpu(2);

  auto contiguous = m->make_cache({256, 1, p.kv});
  ASSERT_TRUE(contiguous.ok());
  std::unique_ptr<cache::PagedKvCache> pc = paged(*m, p.kv, /*n_blocks=*/40);
  ASSERT_NE(pc, nullptr);
  fragment(*m, *pc, *ctx);
  Result<int> s = pc->add_sequence();
  ASSERT_TRUE(s.ok());

  auto run = [&](cache::KvCache& cache, int seq, std::vector<int32_t> t) {
    Rows rows;
    const size_t cuts[] = {0, 19, 50};
    for (int c = 0; c < 2; ++c) {
      Result<TensorView> l = feed(*m, cache, *ctx, seq, t, cuts[c], cuts[c + 1]);
      EXPECT_TRUE(l.ok()) << l.status().to_string();
      if (!l.ok()) return rows;
      for (int64_t r = 0; r < l->ne[1]; ++r) {
        rows.emplace_back(l->row<const float>(r), l->row<const float>(r) + nv);
      }
    }
    for (int k = 0; k < kSteps; ++k) {
      t.push_back(argmax(rows.back().data(), nv));
      Result<TensorView> l = feed(*m, cache, *ctx, seq, t, t.size() - 1, t.size());
      EXPECT_TRUE(l.ok()) << l.status().to_string();
      if (!l.ok()) return rows;
      rows.emplace_back(l->row<const float>(0), l->row<const float>(0) + nv);
    }
    return rows;
  };
  const Rows want = run(**contiguous, 0, toks);
  const Rows got = run(*pc, *s, toks);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    EXPECT_TRUE(same_bits(got[r].data(), want[r])) << "position " << r;
  }
  // The allocation really was scattered.
  const std::span<const cache::BlockId> table = pc->manager().block_table(*s).ids();
  EXPECT_FALSE(std::is_sorted(table.begin(), table.end()));
  EXPECT_TRUE(pc->check_invariants().ok());
}

std::vector<LayoutParam> layout_params() {
  std::vector<LayoutParam> v;
  for (const ModelCase& m : model_cases()) {
    for (DType kv : {DType::F32, DType::F16, DType::BF16, DType::Q8_0}) v.push_back({m, kv});
  }
  return v;
}

std::string layout_name(const ::testing::TestParamInfo<LayoutParam>& info) {
  return test_name(info.param.model.name + "_" + dtype_name(info.param.kv));
}

INSTANTIATE_TEST_SUITE_P(Models, PagedVsContiguous, ::testing::ValuesIn(layout_params()),
                         layout_name);

// --- prefix sharing --------------------------------------------------------

struct PrefixParam {
  std::string model;
  DType kv;
};

class PrefixSharing : public ::testing::TestWithParam<PrefixParam> {};

// A computes P (37 tokens, blocks of 8) and keeps decoding. B's prompt starts
// with P's first 32 tokens: B takes A's 4 full blocks and computes only its
// suffix, in the same batch as A's decode token. Later, with A gone, C takes
// the warm blocks again. Every logit row and greedy token equals the
// sequence's solo run.
TEST_P(PrefixSharing, SharedPrefixGivesTheSoloLogits) {
  const PrefixParam& p = GetParam();
  if (!file_exists(p.model)) FAIL() << "model missing: " << p.model;
  std::unique_ptr<Model> m = load(p.model);
  ASSERT_NE(m, nullptr);
  const int64_t nv = m->config().n_vocab;
  const std::vector<int32_t> pa = tokens_of(nv, 37, 2);
  std::vector<int32_t> pb(pa.begin(), pa.begin() + 32);
  for (int32_t t : tokens_of(nv, 11, 9)) pb.push_back(t);
  constexpr int kSteps = 8;
  std::vector<int32_t> gen_a, gen_b;
  const Rows solo_a = solo(*m, p.kv, pa, kSteps, &gen_a);
  const Rows solo_b = solo(*m, p.kv, pb, kSteps, &gen_b);

  auto ctx = ForwardContext::cpu(2);
  std::unique_ptr<cache::PagedKvCache> cache = paged(*m, p.kv, /*n_blocks=*/64);
  ASSERT_NE(cache, nullptr);
  const int a = *cache->add_sequence();
  std::vector<int32_t> ta = pa;
  Result<TensorView> la = feed(*m, *cache, *ctx, a, ta, 0, ta.size());
  ASSERT_TRUE(la.ok());
  ta.push_back(gen_a[0]);
  ASSERT_TRUE(feed(*m, *cache, *ctx, a, ta, ta.size() - 1, ta.size()).ok());  // A holds 38

  const int b = *cache->add_sequence();
  Result<int64_t> taken = cache->take_cached_prefix(b, pb);
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_EQ(*taken, 32);
  EXPECT_EQ(cache->seq_len(b), 32);
  for (int i = 0; i < 4; ++i) {
    const cache::BlockId blk = cache->manager().block_table(b)[i];
    EXPECT_EQ(blk, cache->manager().block_table(a)[i]);
    EXPECT_EQ(cache->manager().pool().ref(blk), 2);
  }

  // One batch: A's next decode token, then B's 11 suffix tokens.
  ta.push_back(gen_a[1]);
  cache::Batch batch;
  batch.add(ta.back(), static_cast<int32_t>(ta.size() - 1), a, true);
  for (size_t i = 32; i < pb.size(); ++i) batch.add(pb[i], static_cast<int32_t>(i), b, true);
  Result<TensorView> mixed = m->forward(batch, *cache, *ctx);
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  EXPECT_TRUE(same_bits(mixed->row<const float>(0), solo_a[ta.size() - 1]));
  for (size_t i = 32; i < pb.size(); ++i) {
    EXPECT_TRUE(same_bits(mixed->row<const float>(static_cast<int64_t>(i - 31)), solo_b[i]))
        << "B position " << i;
  }
  // Both continue greedily, together.
  std::vector<int32_t> tb = pb;
  for (int k = 0; k < kSteps - 2; ++k) {
    tb.push_back(gen_b[static_cast<size_t>(k)]);
    ta.push_back(gen_a[static_cast<size_t>(k) + 2]);
    batch.clear();
    batch.add(tb.back(), static_cast<int32_t>(tb.size() - 1), b, true);
    batch.add(ta.back(), static_cast<int32_t>(ta.size() - 1), a, true);
    Result<TensorView> step = m->forward(batch, *cache, *ctx);
    ASSERT_TRUE(step.ok()) << step.status().to_string();
    EXPECT_TRUE(same_bits(step->row<const float>(0), solo_b[tb.size() - 1])) << "B step " << k;
    EXPECT_TRUE(same_bits(step->row<const float>(1), solo_a[ta.size() - 1])) << "A step " << k;
    EXPECT_EQ(argmax(step->row<const float>(0), nv), gen_b[static_cast<size_t>(k) + 1]);
  }
  ASSERT_TRUE(cache->check_invariants().ok());

  // A and B end; their blocks stay warm. C (prompt P) takes 4 of them again:
  // the block holding P's last token is never taken.
  ASSERT_TRUE(cache->remove_sequence(a).ok());
  ASSERT_TRUE(cache->remove_sequence(b).ok());
  EXPECT_TRUE(cache->manager().pool().idle());
  const int c = *cache->add_sequence();
  taken = cache->take_cached_prefix(c, pa);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(*taken, 32);
  Result<TensorView> lc = feed(*m, *cache, *ctx, c, pa, 32, pa.size());
  ASSERT_TRUE(lc.ok());
  for (size_t i = 32; i < pa.size(); ++i) {
    EXPECT_TRUE(same_bits(lc->row<const float>(static_cast<int64_t>(i - 32)), solo_a[i]))
        << "C position " << i;
  }
  // A prompt of exactly 32 tokens: its 4th block holds the last token.
  const int d = *cache->add_sequence();
  EXPECT_EQ(*cache->take_cached_prefix(d, std::span(pa).first(32)), 24);
  // Only an empty sequence takes a prefix.
  EXPECT_EQ(cache->take_cached_prefix(d, pa).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(cache->remove_sequence(c).ok());
  ASSERT_TRUE(cache->remove_sequence(d).ok());
  EXPECT_TRUE(cache->manager().pool().idle());
  EXPECT_TRUE(cache->check_invariants().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Models, PrefixSharing,
    ::testing::Values(PrefixParam{shared_models_dir() + "/tiny-llama-f32.gguf", DType::F32},
                      PrefixParam{shared_models_dir() + "/tiny-llama-f32.gguf", DType::F16},
                      PrefixParam{local_refdata_dir() + "/tiny-gemma3-f32.gguf", DType::F32},
                      PrefixParam{local_refdata_dir() + "/tiny-gemma3-f32.gguf", DType::F16}),
    [](const ::testing::TestParamInfo<PrefixParam>& info) {
      const std::string file = info.param.model.substr(info.param.model.rfind('/') + 1);
      return std::string(file.find("gemma") != std::string::npos ? "gemma3" : "llama") + "_" +
             dtype_name(info.param.kv);
    });

// --- batches of many sequences ----------------------------------------------

class ManySequences : public ::testing::TestWithParam<PrefixParam> {};

// Six sequences start at different steps; each step every active sequence
// contributes a prefill chunk of random size or one decode token, and the
// pieces are interleaved at random (per sequence in position order). Every
// token's logits equal the sequence's solo run at that position.
TEST_P(ManySequences, MixedPrefillAndDecodeEqualSoloRuns) {
  const PrefixParam& p = GetParam();
  if (!file_exists(p.model)) FAIL() << "model missing: " << p.model;
  std::unique_ptr<Model> m = load(p.model);
  ASSERT_NE(m, nullptr);
  const int64_t nv = m->config().n_vocab;
  constexpr int kSteps = 6;
  const int lens[] = {5, 17, 33, 9, 40, 24};
  struct Seq {
    std::vector<int32_t> tokens;  // known tokens: prompt, then greedy ones
    std::vector<int32_t> gen;     // solo greedy continuation
    Rows want;                    // solo logits per position
    size_t prompt_len = 0;
    int id = -1;
  };
  std::vector<Seq> seqs(6);
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].tokens = tokens_of(nv, lens[i], static_cast<int>(i) + 20);
    seqs[i].prompt_len = seqs[i].tokens.size();
    seqs[i].want = solo(*m, p.kv, seqs[i].tokens, kSteps, &seqs[i].gen);
  }
  auto ctx = ForwardContext::cpu(2);
  std::unique_ptr<cache::PagedKvCache> cache = paged(*m, p.kv, /*n_blocks=*/48);
  ASSERT_NE(cache, nullptr);
  std::mt19937 rng(7);
  size_t n_mixed = 0;  // steps with prefill chunks and decode tokens together
  for (int step = 0; step < 64; ++step) {
    // Pieces: (sequence, first index, end index).
    std::vector<std::tuple<size_t, size_t, size_t>> pieces;
    bool any_prefill = false, any_decode = false;
    for (size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      if (static_cast<int>(i) > step) continue;  // starts later
      if (s.id < 0) s.id = *cache->add_sequence();
      const auto len = static_cast<size_t>(cache->seq_len(s.id));
      if (len >= s.prompt_len + kSteps) continue;  // done
      const size_t chunk = len < s.prompt_len ? 1 + rng() % 12 : 1;
      const size_t end = std::min(s.tokens.size(), len + chunk);
      (len < s.prompt_len ? any_prefill : any_decode) = true;
      pieces.emplace_back(i, len, end);
    }
    if (pieces.empty()) break;
    n_mixed += any_prefill && any_decode;
    // Random merge of the pieces, each in order.
    std::vector<size_t> order;
    for (size_t k = 0; k < pieces.size(); ++k) {
      order.insert(order.end(), std::get<2>(pieces[k]) - std::get<1>(pieces[k]), k);
    }
    std::shuffle(order.begin(), order.end(), rng);
    cache::Batch batch;
    std::vector<std::pair<size_t, size_t>> rows;  // (sequence, position) per batch row
    std::vector<size_t> next(pieces.size());
    for (size_t k = 0; k < pieces.size(); ++k) next[k] = std::get<1>(pieces[k]);
    for (size_t k : order) {
      const size_t i = std::get<0>(pieces[k]);
      const size_t pos = next[k]++;
      batch.add(seqs[i].tokens[pos], static_cast<int32_t>(pos), seqs[i].id, true);
      rows.emplace_back(i, pos);
    }
    Result<TensorView> l = m->forward(batch, *cache, *ctx);
    ASSERT_TRUE(l.ok()) << l.status().to_string();
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto [i, pos] = rows[r];
      ASSERT_LT(pos, seqs[i].want.size());
      EXPECT_TRUE(same_bits(l->row<const float>(static_cast<int64_t>(r)), seqs[i].want[pos]))
          << "step " << step << " sequence " << i << " position " << pos;
      if (pos + 1 == seqs[i].tokens.size() && seqs[i].tokens.size() < seqs[i].prompt_len + kSteps) {
        const int32_t t = argmax(l->row<const float>(static_cast<int64_t>(r)), nv);
        EXPECT_EQ(t, seqs[i].gen[seqs[i].tokens.size() - seqs[i].prompt_len]);
        seqs[i].tokens.push_back(t);
      }
    }
  }
  EXPECT_GT(n_mixed, 3u);
  for (const Seq& s : seqs) {
    EXPECT_EQ(cache->seq_len(s.id), static_cast<int64_t>(s.prompt_len + kSteps));
    ASSERT_TRUE(cache->remove_sequence(s.id).ok());
  }
  EXPECT_TRUE(cache->manager().pool().idle());
  EXPECT_TRUE(cache->check_invariants().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Models, ManySequences,
    ::testing::Values(PrefixParam{shared_models_dir() + "/tiny-qwen3-f32.gguf", DType::F16},
                      PrefixParam{local_refdata_dir() + "/tiny-qwen3moe-f32.gguf", DType::F32},
                      PrefixParam{local_refdata_dir() + "/tiny-gemma3-f32.gguf", DType::F16}),
    [](const ::testing::TestParamInfo<PrefixParam>& info) {
      const std::string& path = info.param.model;
      std::string s = path.substr(path.rfind('/') + 1);
      return test_name(s.substr(0, s.find("-f32")) + "_" + dtype_name(info.param.kv));
    });

// --- shortage, failure, sequences ---------------------------------------------

std::string llama_path() {
  return shared_models_dir() + "/tiny-llama-f32.gguf";
}

TEST(PagedKvCache, ShortPoolIsResourceExhaustedAndChangesNothing) {
  if (!file_exists(llama_path())) FAIL();
  std::unique_ptr<Model> m = load(llama_path());
  ASSERT_NE(m, nullptr);
  auto ctx = ForwardContext::cpu(2);
  std::unique_ptr<cache::PagedKvCache> cache = paged(*m, DType::F16, /*n_blocks=*/5, 8, 2);
  ASSERT_NE(cache, nullptr);
  const std::vector<int32_t> t = tokens_of(m->config().n_vocab, 20, 3);
  ASSERT_TRUE(feed(*m, *cache, *ctx, 0, t, 0, t.size()).ok());  // 3 of 4 blocks
  Result<TensorView> r = feed(*m, *cache, *ctx, 1, t, 0, t.size());
  ASSERT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
  EXPECT_EQ(ctx->kv_plan().pages.n_missing_blocks, 2);
  EXPECT_EQ(cache->seq_len(1), 0);
  EXPECT_EQ(cache->manager().pool().n_used(), 3);
  // n_ctx is a limit on one sequence, not a shortage.
  cache::Batch b;
  for (int p = 0; p < 257; ++p) b.add(1, p, 1, false);
  cache::KvPlan plan;
  EXPECT_EQ(cache->plan(b, plan).code(), StatusCode::kOutOfRange);
  // Freeing the first sequence makes room.
  ASSERT_TRUE(cache->remove_sequence(0).ok());
  EXPECT_TRUE(feed(*m, *cache, *ctx, 1, t, 0, t.size()).ok());
  EXPECT_TRUE(cache->check_invariants().ok());
}

// A forward that fails after its plan made block copies leaves every
// sequence as it was; the next forward gives the solo logits.
TEST(PagedKvCache, FailedForwardIsDiscarded) {
  if (!file_exists(llama_path())) FAIL();
  std::unique_ptr<Model> m = load(llama_path());
  ASSERT_NE(m, nullptr);
  const int64_t nv = m->config().n_vocab;
  const std::vector<int32_t> t = tokens_of(nv, 12, 4);  // block 1 partial (block size 8)
  std::vector<int32_t> gen;
  const Rows want = solo(*m, DType::F16, t, 1, &gen);
  auto ctx = ForwardContext::cpu(2);
  std::unique_ptr<cache::PagedKvCache> cache = paged(*m, DType::F16, 16, 8, 1);
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(feed(*m, *cache, *ctx, 0, t, 0, t.size()).ok());
  Result<int> child = cache->fork_sequence(0);
  ASSERT_TRUE(child.ok());
  const int32_t used = cache->manager().pool().n_used();

  std::vector<int32_t> next = t;
  next.push_back(gen[0]);
  ForwardContext no_backend(std::vector<Backend*>{});
  Result<TensorView> bad = feed(*m, *cache, no_backend, *child, next, 12, 13);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(no_backend.kv_plan().pages.copies.size(), 1u);  // copy-on-write was prepared
  EXPECT_EQ(cache->seq_len(*child), 12);
  EXPECT_EQ(cache->manager().pool().n_used(), used);
  EXPECT_TRUE(cache->check_invariants().ok());

  for (int s : {*child, 0}) {
    Result<TensorView> ok = feed(*m, *cache, *ctx, s, next, 12, 13);
    ASSERT_TRUE(ok.ok()) << ok.status().to_string();
    EXPECT_TRUE(same_bits(ok->row<const float>(0), want[12])) << "sequence " << s;
  }
  EXPECT_NE(cache->manager().block_table(0).back(), cache->manager().block_table(*child).back());
  EXPECT_TRUE(cache->check_invariants().ok());
}

// Sequences of the paged cache come and go; ids are reused; clear() empties
// every sequence and returns every block.
TEST(PagedKvCache, SequencesComeAndGo) {
  if (!file_exists(llama_path())) FAIL();
  std::unique_ptr<Model> m = load(llama_path());
  ASSERT_NE(m, nullptr);
  auto ctx = ForwardContext::cpu(2);
  std::unique_ptr<cache::PagedKvCache> cache = paged(*m, DType::F32, 32, 8);
  ASSERT_NE(cache, nullptr);
  const std::vector<int32_t> t = tokens_of(m->config().n_vocab, 20, 5);
  const int a = *cache->add_sequence();
  const int b = *cache->add_sequence();
  ASSERT_TRUE(feed(*m, *cache, *ctx, a, t, 0, 20).ok());
  ASSERT_TRUE(feed(*m, *cache, *ctx, b, t, 0, 9).ok());
  EXPECT_EQ(cache->manager().pool().n_used(), 3 + 2);  // memory follows the tokens held
  ASSERT_TRUE(cache->truncate(a, 8).ok());
  EXPECT_EQ(cache->manager().pool().n_used(), 1 + 2);
  ASSERT_TRUE(cache->remove_sequence(a).ok());
  EXPECT_FALSE(cache->has_sequence(a));
  EXPECT_EQ(cache->remove_sequence(a).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*cache->add_sequence(), a);  // the id is handed out again
  cache->clear();
  EXPECT_EQ(cache->seq_len(b), 0);
  EXPECT_TRUE(cache->manager().pool().idle());
  EXPECT_TRUE(cache->defrag());
  EXPECT_TRUE(cache->check_invariants().ok());
}

// The contiguous cache's sequence calls: slots handed out, forks copy rows.
TEST(ContiguousKvCacheSequences, AddForkRemove) {
  if (!file_exists(llama_path())) FAIL();
  std::unique_ptr<Model> m = load(llama_path());
  ASSERT_NE(m, nullptr);
  const std::vector<int32_t> t = tokens_of(m->config().n_vocab, 12, 6);
  std::vector<int32_t> gen;
  const Rows want = solo(*m, DType::F16, t, 1, &gen);
  auto ctx = ForwardContext::cpu(2);
  auto cache = m->make_cache({64, 2, DType::F16});
  ASSERT_TRUE(cache.ok());
  cache::KvCache& c = **cache;
  EXPECT_EQ(*c.add_sequence(), 0);
  ASSERT_TRUE(feed(*m, c, *ctx, 0, t, 0, t.size()).ok());
  EXPECT_EQ(*c.take_cached_prefix(1, t), 0);  // no prefix cache
  Result<int> child = c.fork_sequence(0);
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(*child, 1);
  EXPECT_EQ(c.seq_len(1), 12);
  EXPECT_EQ(c.add_sequence().status().code(), StatusCode::kResourceExhausted);
  std::vector<int32_t> next = t;
  next.push_back(gen[0]);
  Result<TensorView> l = feed(*m, c, *ctx, 1, next, 12, 13);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(same_bits(l->row<const float>(0), want[12]));
  ASSERT_TRUE(c.remove_sequence(0).ok());
  EXPECT_EQ(c.seq_len(0), 0);
  EXPECT_EQ(*c.add_sequence(), 0);

  // Slots used by index, never claimed: a fork never lands on its parent or
  // on a slot holding positions.
  auto other = m->make_cache({64, 3, DType::F16});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(feed(*m, **other, *ctx, 1, t, 0, t.size()).ok());
  Result<int> f = (*other)->fork_sequence(1);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, 0);
  EXPECT_EQ((*other)->seq_len(1), 12);
  EXPECT_EQ(*(*other)->add_sequence(), 2);
}

}  // namespace
}  // namespace folio::model::testing
