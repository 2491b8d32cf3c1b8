// The hybrid cache and the recurrent layers' state handling, on the refdata
// hybrid models (tiny-qwen3next: kDiv head map, MoE; tiny-qwen35: kMod,
// dense):
//   - several sequences in one batch (prefill chunks and decode tokens
//     interleaved, even token by token across sequences) give exactly the
//     logits each gives alone;
//   - the fused in-place decode ops and the unfused path (gather -> plain op
//     -> scatter) give bit-identical logits and states;
//   - a paged attention part equals a contiguous one, bit for bit;
//   - fork copies the state, remove releases the slot, truncate / prefix
//     rules, and a failed forward marks exactly the sequences whose state it
//     may have changed as lost.
// Exactness: the plain DeltaNet op may use a chunked form for long prompts
// (not bit-identical to token by token), so runs compared across different
// prompt splits use TestContexts::token_by_token(); everything else is on
// the best kernels.
#include <gtest/gtest.h>

#include <cstring>

#include "gguf/gguf_writer.h"
#include "hybrid_test_util.h"

namespace folio::model::testing {
namespace hybrid_cache_test {

std::unique_ptr<Model> load(const std::string& name) {
  return load_hybrid(name);
}

std::vector<int32_t> tokens(int n, int salt, int64_t n_vocab) {
  return test_tokens(n, salt, n_vocab);
}

// Runs `streams` through `cache` until each has generated its tokens. Per
// step: every stream still in its prompt feeds a chunk (sizes cycle through
// `chunks`), every other one its next greedy token. interleave: the chunks
// of the first two prefilling streams alternate token by token in the batch
// (their tokens are not consecutive).
Status run_streams(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                   std::vector<Stream>& streams, const std::vector<int>& chunks, bool interleave) {
  const int64_t nv = m.config().n_vocab;
  for (Stream& s : streams) {
    if (s.seq < 0) {
      FOLIO_ASSIGN_OR_RETURN(s.seq, cache.add_sequence());
    }
  }
  cache::Batch batch;
  std::vector<size_t> owner;  // stream of each output row
  for (int step = 0;; ++step) {
    batch.clear();
    owner.clear();
    struct Piece {
      size_t stream;
      std::vector<int32_t> toks;
      int32_t pos;
      bool out_last;
    };
    std::vector<Piece> pieces;
    for (size_t i = 0; i < streams.size(); ++i) {
      Stream& s = streams[i];
      if (s.done()) continue;
      if (s.fed < s.prompt.size()) {
        const size_t n =
            std::min(s.prompt.size() - s.fed,
                     static_cast<size_t>(chunks[static_cast<size_t>(step + i) % chunks.size()]));
        pieces.push_back({i,
                          std::vector<int32_t>(s.prompt.begin() + static_cast<int64_t>(s.fed),
                                               s.prompt.begin() + static_cast<int64_t>(s.fed + n)),
                          static_cast<int32_t>(s.fed), s.fed + n == s.prompt.size()});
        s.fed += n;
      } else {
        pieces.push_back({i,
                          {s.generated.back()},
                          static_cast<int32_t>(s.prompt.size() + s.generated.size() - 1),
                          true});
      }
    }
    if (pieces.empty()) return Status();
    std::vector<size_t> order(pieces.size());
    for (size_t p = 0; p < pieces.size(); ++p) order[p] = p;
    size_t first = 0;
    if (interleave && pieces.size() >= 2 && pieces[0].toks.size() > 1 &&
        pieces[1].toks.size() > 1) {
      // Alternate the first two pieces' tokens.
      const Piece &a = pieces[0], &b = pieces[1];
      const size_t n = std::max(a.toks.size(), b.toks.size());
      for (size_t k = 0; k < n; ++k) {
        for (const Piece* p : {&a, &b}) {
          if (k >= p->toks.size()) continue;
          const bool out = p->out_last && k + 1 == p->toks.size();
          if (out) owner.push_back(p->stream);
          batch.add(p->toks[k], p->pos + static_cast<int32_t>(k), streams[p->stream].seq, out);
        }
      }
      first = 2;
    }
    for (size_t p = first; p < pieces.size(); ++p) {
      const Piece& pc = pieces[p];
      for (size_t k = 0; k < pc.toks.size(); ++k) {
        const bool out = pc.out_last && k + 1 == pc.toks.size();
        if (out) owner.push_back(pc.stream);
        batch.add(pc.toks[k], pc.pos + static_cast<int32_t>(k), streams[pc.stream].seq, out);
      }
    }
    FOLIO_ASSIGN_OR_RETURN(const TensorView logits, m.forward(batch, cache, ctx));
    for (size_t r = 0; r < owner.size(); ++r) {
      Stream& s = streams[owner[r]];
      const float* row = static_cast<const float*>(logits.data) + static_cast<int64_t>(r) * nv;
      s.rows.emplace_back(row, row + nv);
      s.generated.push_back(argmax(row, nv));
    }
  }
}

std::vector<Stream> three_streams(int64_t nv) {
  std::vector<Stream> s(3);
  s[0].prompt = tokens(70, 1, nv);
  s[0].n_gen = 6;
  s[1].prompt = tokens(5, 2, nv);
  s[1].n_gen = 9;
  s[2].prompt = tokens(33, 3, nv);
  s[2].n_gen = 5;
  return s;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_same_streams(const std::vector<Stream>& a, const std::vector<Stream>& b,
                         const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].generated, b[i].generated) << what << ": stream " << i;
    ASSERT_EQ(a[i].rows.size(), b[i].rows.size()) << what << ": stream " << i;
    for (size_t r = 0; r < a[i].rows.size(); ++r) {
      EXPECT_TRUE(same_bits(a[i].rows[r], b[i].rows[r]))
          << what << ": stream " << i << " row " << r;
    }
  }
}

// Each stream alone: its own cache, the prompt as one batch.
std::vector<Stream> solo(const Model& m, ForwardContext& ctx, std::vector<Stream> streams) {
  for (Stream& s : streams) {
    auto cache = test_cache(m, true, 1);
    std::vector<Stream> one{s};
    Status st = run_streams(m, *cache, ctx, one, {1 << 20}, false);
    EXPECT_TRUE(st.ok()) << st.to_string();
    s = one[0];
  }
  return streams;
}

class HybridModels : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridModels, MixedBatchEqualsSoloRuns) {
  auto m = load(GetParam());
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto ctx = contexts.token_by_token();
  const std::vector<Stream> alone = solo(*m, *ctx, three_streams(m->config().n_vocab));
  for (bool interleave : {false, true}) {
    for (bool paged : {true, false}) {
      auto cache = test_cache(*m, paged, 3);
      std::vector<Stream> mixed = three_streams(m->config().n_vocab);
      Status st = run_streams(*m, *cache, *ctx, mixed, {7, 16, 3, 24}, interleave);
      ASSERT_TRUE(st.ok()) << st.to_string();
      expect_same_streams(alone, mixed, interleave ? "interleaved" : "mixed");
      EXPECT_TRUE(cache->check_invariants().ok());
    }
  }
}

TEST_P(HybridModels, FusedDecodeEqualsUnfusedBitForBit) {
  auto m = load(GetParam());
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto fused = contexts.fused();
  auto unfused = contexts.unfused();
  auto c1 = test_cache(*m, true, 3);
  auto c2 = test_cache(*m, true, 3);
  std::vector<Stream> a = three_streams(m->config().n_vocab);
  std::vector<Stream> b = a;
  const uint64_t ops_before = unfused->ops_run();
  ASSERT_TRUE(run_streams(*m, *c1, *fused, a, {9, 40}, false).ok());
  ASSERT_TRUE(run_streams(*m, *c2, *unfused, b, {9, 40}, false).ok());
  EXPECT_GT(unfused->ops_run() - ops_before, fused->ops_run());  // gathers and scatters
  expect_same_streams(a, b, "fused vs unfused");
  // The states themselves (every recurrent layer, every sequence).
  for (int il = 0; il < m->config().n_layer; ++il) {
    if (!m->config().is_recurrent(il)) continue;
    for (const Stream& s : a) {
      for (auto view : {&cache::KvCache::conv_state, &cache::KvCache::ssm_state}) {
        const TensorView p1 = (c1.get()->*view)(il), p2 = (c2.get()->*view)(il);
        if (view == &cache::KvCache::ssm_state && p1.empty()) {  // conv-only layer (short conv)
          EXPECT_TRUE(p2.empty());
          continue;
        }
        const size_t stride = p1.nb[p1.ne[3] > 1 ? 3 : 2];
        EXPECT_EQ(0, std::memcmp(static_cast<char*>(p1.data) + c1->slot_of(s.seq) * stride,
                                 static_cast<char*>(p2.data) + c2->slot_of(s.seq) * stride, stride))
            << "layer " << il;
      }
    }
  }
}

TEST_P(HybridModels, PagedAttentionEqualsContiguous) {
  auto m = load(GetParam());
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto ctx = contexts.fused();
  std::vector<Stream> a = three_streams(m->config().n_vocab), b = a;
  auto paged = test_cache(*m, true, 3);
  auto contiguous = test_cache(*m, false, 3);
  ASSERT_TRUE(run_streams(*m, *paged, *ctx, a, {12, 5}, false).ok());
  ASSERT_TRUE(run_streams(*m, *contiguous, *ctx, b, {12, 5}, false).ok());
  expect_same_streams(a, b, "paged vs contiguous");
}

INSTANTIATE_TEST_SUITE_P(Refdata, HybridModels, ::testing::ValuesIn(kRefdataHybridModels),
                         [](const auto& info) { return test_name(info.param); });

TEST(HybridCache, ForkCopiesStateAndRemoveReleasesSlot) {
  auto m = load("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto ctx = contexts.fused();
  auto cache = test_cache(*m, true, 2);
  const int64_t nv = m->config().n_vocab;
  Result<int> a = cache->add_sequence();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(eval_all(*m, *cache, *ctx, tokens(20, 4, nv), *a).ok());
  Result<int> b = cache->fork_sequence(*a);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NE(cache->slot_of(*a), cache->slot_of(*b));
  EXPECT_EQ(cache->seq_len(*b), 20);
  // Both continue identically from the shared prefix...
  Result<std::vector<float>> ra = eval_one(*m, *cache, *ctx, 42, *a);
  Result<std::vector<float>> rb = eval_one(*m, *cache, *ctx, 42, *b);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_TRUE(same_bits(*ra, *rb));
  // ...and independently afterwards.
  Result<std::vector<float>> ra2 = eval_one(*m, *cache, *ctx, 7, *a);
  Result<std::vector<float>> rb2 = eval_one(*m, *cache, *ctx, 8, *b);
  ASSERT_TRUE(ra2.ok() && rb2.ok());
  EXPECT_FALSE(same_bits(*ra2, *rb2));
  // Both slots are held: a third sequence does not fit (max_seqs 2).
  Result<int> c = cache->add_sequence();
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  const int32_t slot_b = cache->slot_of(*b);
  ASSERT_TRUE(cache->remove_sequence(*b).ok());
  EXPECT_EQ(cache->state_pool().n_held(), 1);
  c = cache->add_sequence();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache->slot_of(*c), slot_b);  // the released slot is reused
  // A reused slot starts from the empty state: same logits as a fresh cache.
  Result<std::vector<float>> rc = eval_all(*m, *cache, *ctx, tokens(20, 4, nv), *c);
  auto fresh = test_cache(*m, true, 1);
  Result<int> f = fresh->add_sequence();
  Result<std::vector<float>> rf = eval_all(*m, *fresh, *ctx, tokens(20, 4, nv), *f);
  ASSERT_TRUE(rc.ok() && rf.ok());
  EXPECT_TRUE(same_bits(*rc, *rf));
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST(HybridCache, TruncateAndPrefixRules) {
  auto m = load("tiny-qwen3next");
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto ctx = contexts.fused();
  auto cache = test_cache(*m, true, 1);  // no checkpoints
  const int64_t nv = m->config().n_vocab;
  const std::vector<int32_t> p = tokens(40, 5, nv);
  Result<int> s = cache->add_sequence();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*cache->take_cached_prefix(*s, p), 0);
  Result<std::vector<float>> first = eval_all(*m, *cache, *ctx, p, *s);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(cache->truncate(*s, 40).ok());  // its own length: nothing to do
  EXPECT_EQ(cache->truncation_point(*s, 32), 0);
  EXPECT_EQ(cache->truncation_point(*s, 40), 40);
  EXPECT_EQ(cache->truncate(*s, 32).code(), StatusCode::kUnsupported);
  EXPECT_EQ(cache->truncate(*s, 39).code(), StatusCode::kUnsupported);
  EXPECT_EQ(cache->truncate(*s, 41).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache->seq_len(*s), 40);
  ASSERT_TRUE(cache->truncate(*s, 0).ok());
  Result<std::vector<float>> again = eval_all(*m, *cache, *ctx, p, *s);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(same_bits(*first, *again));
  // A second sequence with the same prompt gets no prefix without checkpoints
  // (the K/V blocks are cached, the recurrent state is not).
  ASSERT_TRUE(cache->remove_sequence(*s).ok());
  s = cache->add_sequence();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*cache->take_cached_prefix(*s, p), 0);
  cache->clear();
  EXPECT_EQ(cache->seq_len(*s), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST(HybridCache, FailedForwardLosesOnlyStatesItMayHaveChanged) {
  auto m = load("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing";
  TestContexts contexts;
  auto ctx = contexts.fused();
  auto broken = contexts.failing(OpKind::kSsmConv);  // prefill chunks cannot run
  auto cache = test_cache(*m, true, 2);
  const int64_t nv = m->config().n_vocab;
  const std::vector<int32_t> pa = tokens(12, 6, nv), pb = tokens(9, 7, nv);
  const int a = *cache->add_sequence(), b = *cache->add_sequence();
  Result<std::vector<float>> ra = eval_all(*m, *cache, *ctx, pa, a);
  ASSERT_TRUE(ra.ok());

  // a decodes (fused ops run), b's prefill fails: the forward fails.
  cache::Batch batch;
  batch.add(3, 12, a, true);
  for (size_t i = 0; i < pb.size(); ++i) batch.add(pb[i], static_cast<int32_t>(i), b, true);
  Result<TensorView> r = m->forward(batch, *cache, *broken);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(cache->seq_len(a), 12);  // nothing committed
  EXPECT_EQ(cache->seq_len(b), 0);
  EXPECT_TRUE(cache->state_lost(a));   // its state may have been updated in place
  EXPECT_FALSE(cache->state_lost(b));  // empty: zeroed again before its next forward

  // b works as if nothing happened.
  Result<std::vector<float>> rb = eval_all(*m, *cache, *ctx, pb, b);
  ASSERT_TRUE(rb.ok()) << rb.status().to_string();
  auto fresh = test_cache(*m, true, 1);
  const int f = *fresh->add_sequence();
  Result<std::vector<float>> rf = eval_all(*m, *fresh, *ctx, pb, f);
  ASSERT_TRUE(rf.ok());
  EXPECT_TRUE(same_bits(*rb, *rf));

  // a is refused until recomputed.
  Result<std::vector<float>> lost = eval_one(*m, *cache, *ctx, 3, a);
  EXPECT_EQ(lost.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(cache->fork_sequence(a).status().code(), StatusCode::kDataLoss);
  ASSERT_TRUE(cache->truncate(a, 0).ok());
  Result<std::vector<float>> ra2 = eval_all(*m, *cache, *ctx, pa, a);
  ASSERT_TRUE(ra2.ok());
  EXPECT_TRUE(same_bits(*ra, *ra2));
  EXPECT_TRUE(cache->check_invariants().ok());
}

// tiny-qwen3next rewritten the way older qwen3next files store a DeltaNet
// layer's input projection: one ssm_in [E, C + Hv * S] grouped per key head
// as [q (S), k (S), v (r * S), z (r * S)] instead of attn_qkv + attn_gate.
Result<gguf::GgufFile> legacy_qkvz_copy(const std::string& path) {
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::open(path));
  FOLIO_ASSIGN_OR_RETURN(ModelConfig cfg, ModelConfig::from_gguf(f));
  const int64_t e = cfg.n_embd, s = cfg.ssm.d_state, hk = cfg.ssm.n_k_heads;
  const int64_t r = cfg.ssm.n_v_heads / hk, c = cfg.ssm.conv_channels();
  gguf::GgufWriter w;
  FOLIO_RETURN_IF_ERROR(copy_metadata(f, w));
  for (const gguf::TensorInfo& t : f.tensors()) {
    const std::span<const uint8_t> bytes = f.tensor_bytes(t);
    const std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    const std::string name = t.name;
    if (name.ends_with("attn_gate.weight")) continue;
    if (!name.ends_with("attn_qkv.weight")) {
      FOLIO_RETURN_IF_ERROR(
          w.add_tensor(name, t.type_id, shape, std::vector<uint8_t>(bytes.begin(), bytes.end())));
      continue;
    }
    const std::string layer = name.substr(0, name.size() - std::string("attn_qkv.weight").size());
    const gguf::TensorInfo* gate = f.find_tensor(layer + "attn_gate.weight");
    if (gate == nullptr) return not_found("no {}attn_gate.weight", layer);
    const auto* qkv = reinterpret_cast<const float*>(bytes.data());  // rows of E
    const auto* z = reinterpret_cast<const float*>(f.tensor_bytes(*gate).data());
    std::vector<float> out;
    auto rows = [&](const float* src, int64_t first, int64_t n) {
      out.insert(out.end(), src + first * e, src + (first + n) * e);
    };
    for (int64_t kh = 0; kh < hk; ++kh) {
      rows(qkv, kh * s, s);                       // q of key head kh
      rows(qkv, hk * s + kh * s, s);              // k
      rows(qkv, 2 * hk * s + kh * r * s, r * s);  // v of its r value heads
      rows(z, kh * r * s, r * s);                 // z
    }
    std::vector<uint8_t> data(out.size() * sizeof(float));
    std::memcpy(data.data(), out.data(), data.size());
    const std::vector<int64_t> in_shape{e, c + cfg.ssm.d_inner};
    FOLIO_RETURN_IF_ERROR(
        w.add_tensor(layer + "ssm_in.weight", DType::F32, in_shape, std::move(data)));
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  return gguf::GgufFile::parse(bytes);
}

TEST(HybridCache, LegacyFusedQkvzFileGivesTheSameLogits) {
  const std::string path = hybrid_model_path("tiny-qwen3next");
  if (!file_exists(path)) FAIL() << "model missing";
  auto m = load("tiny-qwen3next");
  Result<gguf::GgufFile> legacy_file = legacy_qkvz_copy(path);
  ASSERT_TRUE(legacy_file.ok()) << legacy_file.status().to_string();
  Result<std::unique_ptr<Model>> legacy = Model::from_gguf(std::move(legacy_file).value());
  ASSERT_TRUE(legacy.ok()) << legacy.status().to_string();
  EXPECT_TRUE((*legacy)->config().ssm.fused_qkvz);
  EXPECT_FALSE(m->config().ssm.fused_qkvz);
  TestContexts contexts;
  auto ctx = contexts.fused();
  std::vector<Stream> a = three_streams(m->config().n_vocab), b = a;
  auto c1 = test_cache(*m, true, 3);
  auto c2 = test_cache(**legacy, true, 3);
  ASSERT_TRUE(run_streams(*m, *c1, *ctx, a, {20, 4}, false).ok());
  ASSERT_TRUE(run_streams(**legacy, *c2, *ctx, b, {20, 4}, false).ok());
  expect_same_streams(a, b, "attn_qkv + attn_gate vs ssm_in");
}

TEST(HybridCache, MakeCacheBuildsAHybridCacheForHybridModels) {
  auto m = load("tiny-qwen3next");
  if (m == nullptr) FAIL() << "model missing";
  Result<std::unique_ptr<cache::KvCache>> c = m->make_cache({128, 2, DType::F32});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto* h = dynamic_cast<cache::HybridKvCache*>(c->get());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->n_layer(), m->config().n_layer);
  EXPECT_EQ(h->attention().n_layer(), 1);  // one full-attention layer of 4
  EXPECT_EQ(h->state_pool().n_slots(), 2);
  EXPECT_FALSE(h->conv_state(0).empty());
  EXPECT_TRUE(h->conv_state(3).empty());   // layer 3 is the attention layer
  EXPECT_EQ(h->block_manager(), nullptr);  // contiguous attention part
  // A plain cache has no recurrent state: the forward says so.
  cache::KvGeometry attention_only = m->config().cache_geometry();
  for (cache::LayerGeometry& l : attention_only.layers) l.recurrent = false;
  auto plain = cache::create_kv_cache(attention_only, {128, 1, DType::F32});
  ASSERT_TRUE(plain.ok());
  auto ctx = ForwardContext::cpu(1);
  Result<std::vector<float>> r = eval_all(*m, **plain, *ctx, {1, 2, 3});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace folio::model::testing
