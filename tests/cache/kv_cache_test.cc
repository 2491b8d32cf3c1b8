// The KV caches on their own, built from hand-written geometries:
// create_kv_cache's choice, option checks and pool sizing, plan() of the
// paged cache (sequence numbering, block tables, shortage), recurrent state
// of the hybrid cache, what one sequence alone can hold (token_capacity),
// and the one-line summaries.
#include "cache/kv_cache.h"

#include <gtest/gtest.h>

#include <vector>

#include "cache/contiguous_kv_cache.h"
#include "cache/hybrid_kv_cache.h"
#include "cache/kv_sizing.h"
#include "cache/paged_kv_cache.h"

namespace folio::cache {
namespace kv_cache_test {

// `n_layer` attention layers of 2 KV heads of 32 (K) / 64 (V).
KvGeometry attention_geometry(int n_layer) {
  KvGeometry g;
  g.name = "test";
  for (int l = 0; l < n_layer; ++l) g.layers.push_back({false, {2, 32, 64}, {}});
  return g;
}

// Layers 0-2 recurrent (conv taps [3, 40], state [8, 8, 2]), layer 3 attention.
KvGeometry hybrid_geometry() {
  KvGeometry g = attention_geometry(4);
  for (int l = 0; l < 3; ++l) {
    g.layers[static_cast<size_t>(l)].recurrent = true;
    g.layers[static_cast<size_t>(l)].state = {3, 40, 8, 2};
  }
  return g;
}

KvCacheOptions paged_options(int32_t n_blocks, int32_t block_size, int n_seq) {
  KvCacheOptions o;
  o.storage = KvStorage::kPaged;
  o.type = DType::F16;
  o.block_size = block_size;
  o.n_blocks = n_blocks;
  o.n_ctx = 256;
  o.n_seq = n_seq;
  return o;
}

TEST(CreateKvCache, ChoosesTheCacheFromGeometryAndOptions) {
  KvCacheOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  Result<std::unique_ptr<KvCache>> c = create_kv_cache(attention_geometry(3), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_NE(dynamic_cast<ContiguousKvCache*>(c->get()), nullptr);
  EXPECT_FALSE((*c)->paged());
  EXPECT_EQ((*c)->n_layer(), 3);
  EXPECT_EQ((*c)->type(), DType::F32);  // default
  EXPECT_EQ((*c)->k_view(1).ne, (std::array<int64_t, kMaxDims>{32, 2, 64, 2}));
  EXPECT_EQ((*c)->v_table(2).ne, (std::array<int64_t, kMaxDims>{128, 128, 1, 1}));
  EXPECT_TRUE((*c)->conv_state(0).empty());

  o.storage = KvStorage::kPaged;
  c = create_kv_cache(attention_geometry(3), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_NE(dynamic_cast<PagedKvCache*>(c->get()), nullptr);
  EXPECT_TRUE((*c)->paged());
  ASSERT_NE((*c)->block_manager(), nullptr);
  EXPECT_EQ((*c)->block_manager()->pool().n_blocks(), 2 * 4 + 1);  // 2 sequences of 64, null
  EXPECT_TRUE((*c)->has_sequence(1));

  for (KvStorage storage : {KvStorage::kPaged, KvStorage::kContiguous}) {
    o.storage = storage;
    c = create_kv_cache(hybrid_geometry(), o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const auto* h = dynamic_cast<HybridKvCache*>(c->get());
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->paged(), storage == KvStorage::kPaged);
    EXPECT_EQ(h->attention().paged(), storage == KvStorage::kPaged);
    EXPECT_EQ(h->n_layer(), 4);
    EXPECT_EQ(h->attention().n_layer(), 1);
    EXPECT_FALSE(h->k_view(3).empty());
  }

  EXPECT_EQ(create_kv_cache(KvGeometry{}, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(CreateKvCache, AttentionCachesRefuseRecurrentLayers) {
  const KvCacheOptions o;
  EXPECT_EQ(ContiguousKvCache::create(hybrid_geometry(), o).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PagedKvCache::create(hybrid_geometry(), paged_options(16, 8, 1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(HybridKvCache::create(attention_geometry(2), o).status().code(),
            StatusCode::kInvalidArgument);
  KvGeometry all_recurrent = hybrid_geometry();
  all_recurrent.layers[3].recurrent = true;
  all_recurrent.layers[3].state = {3, 40, 8, 2};
  EXPECT_EQ(create_kv_cache(all_recurrent, o).status().code(), StatusCode::kUnsupported);
  KvGeometry no_state = hybrid_geometry();
  no_state.layers[1].state.n_heads = 0;
  EXPECT_EQ(create_kv_cache(no_state, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(HybridKvCache, StateSlotsFollowTheGeometry) {
  KvGeometry g = hybrid_geometry();
  g.layers[1].state = {2, 24, 4, 3};  // layers may differ
  KvCacheOptions o = paged_options(16, 8, 0);
  o.max_seqs = 2;
  o.max_checkpoints = 3;
  Result<std::unique_ptr<HybridKvCache>> c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const HybridKvCache& h = **c;
  EXPECT_EQ(h.state_pool().n_slots(), 2 + 3);
  EXPECT_EQ(h.conv_state(0).ne, (std::array<int64_t, kMaxDims>{3, 40, 5, 1}));
  EXPECT_EQ(h.ssm_state(0).ne, (std::array<int64_t, kMaxDims>{8, 8, 2, 5}));
  EXPECT_EQ(h.conv_state(1).ne, (std::array<int64_t, kMaxDims>{2, 24, 5, 1}));
  EXPECT_EQ(h.ssm_state(1).ne, (std::array<int64_t, kMaxDims>{4, 4, 3, 5}));
  EXPECT_TRUE(h.conv_state(3).empty());
  const size_t slot =
      2 * (3 * 40 + 8 * 8 * 2) * sizeof(float) + (2 * 24 + 4 * 4 * 3) * sizeof(float);
  EXPECT_EQ(h.stats().slot_bytes, slot);
  EXPECT_GE(h.bytes(), h.attention().bytes() + 5 * slot);

  // Checkpoint slots by default: 2 * max_seqs + 2 with prefix caching, none
  // without it or over a contiguous attention part.
  o.max_checkpoints = -1;
  c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->state_pool().n_slots(), 2 + 6);
  o.prefix_caching = false;
  c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->state_pool().n_slots(), 2);
  o.prefix_caching = true;
  o.storage = KvStorage::kContiguous;
  o.n_seq = 3;
  c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->state_pool().n_slots(), 3);
}

// A recurrent layer with_kv (falcon-h1: a Mamba-2 mixer and attention in
// every layer) is in both parts: its state in the pool, its K/V in the
// attention part, in layer order beside the plain attention layers.
TEST(HybridKvCache, LayersWithKvHoldStateAndKv) {
  KvGeometry g = hybrid_geometry();  // layers 0-2 recurrent, 3 attention
  g.layers[1].with_kv = true;
  g.layers[1].kv = {1, 16, 16};
  EXPECT_EQ(g.attention_shapes().size(), 2u);
  KvCacheOptions o;
  o.storage = KvStorage::kContiguous;
  o.n_ctx = 64;
  o.n_seq = 2;
  Result<std::unique_ptr<HybridKvCache>> c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const HybridKvCache& h = **c;
  EXPECT_EQ(h.n_layer(), 4);
  EXPECT_EQ(h.attention().n_layer(), 2);
  EXPECT_FALSE(h.conv_state(1).empty());
  EXPECT_FALSE(h.ssm_state(1).empty());
  // Layer 1 is the part's layer 0, layer 3 its layer 1.
  EXPECT_EQ(h.k_view(1).ne, (std::array<int64_t, kMaxDims>{16, 1, 64, 2}));
  EXPECT_EQ(h.k_view(3).ne, (std::array<int64_t, kMaxDims>{32, 2, 64, 2}));
  EXPECT_TRUE(h.conv_state(3).empty());
  // Without with_kv the same layer holds no K/V.
  g.layers[1].with_kv = false;
  c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->attention().n_layer(), 1);
}

// Draft snapshots: a step with k drafts plans k snapshot slots (after the
// fed token and each draft but the last), refused with kResourceExhausted
// when fewer are free; apply() holds them; verify() copies the snapshot
// after the last accepted token into the sequence's slot and frees them;
// draft slots never go to a new sequence.
TEST(HybridKvCache, DraftSnapshotsRestoreTheAcceptedState) {
  KvCacheOptions o = paged_options(32, 8, 0);
  o.max_seqs = 1;
  o.max_checkpoints = 0;
  o.draft_slots = 3;
  Result<std::unique_ptr<HybridKvCache>> c = HybridKvCache::create(hybrid_geometry(), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  HybridKvCache& h = **c;
  EXPECT_EQ(h.state_pool().n_slots(), 1 + 3);
  Result<int> seq = h.add_sequence();
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(h.add_sequence().status().code(), StatusCode::kResourceExhausted);  // draft slots kept
  KvPlan plan;
  Batch b;
  for (int32_t i = 0; i < 5; ++i) b.add(10 + i, i, *seq, i == 4);
  ASSERT_TRUE(h.plan(b, plan).ok());
  EXPECT_TRUE(plan.recurrent.checkpoints.empty());
  h.prepare(plan);
  h.apply(plan);

  // The token at position 5 and 3 drafts: snapshots after 1, 2 and 3 tokens.
  b.clear();
  b.add(20, 5, *seq, true);
  for (int32_t i = 0; i < 3; ++i) b.add(21 + i, 6 + i, *seq, true, true);
  ASSERT_TRUE(h.plan(b, plan).ok());
  ASSERT_EQ(plan.recurrent.checkpoints.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    const StateCheckpoint& cp = plan.recurrent.checkpoints[static_cast<size_t>(i)];
    EXPECT_TRUE(cp.draft);
    EXPECT_EQ(cp.after, i + 1);
    EXPECT_NE(cp.slot, h.slot_of(*seq));
  }
  // Four drafts need four free slots: refused, nothing changed.
  Batch more = b;
  more.add(24, 9, *seq, true, true);
  KvPlan refused;
  EXPECT_EQ(h.plan(more, refused).code(), StatusCode::kResourceExhausted);
  h.prepare(plan);
  h.apply(plan);
  EXPECT_EQ(h.state_pool().n_held(), 4);
  EXPECT_TRUE(h.check_invariants().ok()) << h.check_invariants().to_string();
  // Stand-ins for what the forward wrote: the state after 2 tokens (1 draft
  // accepted) marked in its snapshot slot, every layer.
  const int32_t snap = plan.recurrent.checkpoints[1].slot;
  const int32_t own = h.slot_of(*seq);
  for (int l = 0; l < 3; ++l) {
    const TensorView conv = h.conv_state(l);
    const TensorView ssm = h.ssm_state(l);
    float* cs = static_cast<float*>(conv.row(0, snap));
    float* ss = static_cast<float*>(ssm.row(0, 0, snap));
    for (int64_t i = 0; i < conv.ne[0] * conv.ne[1]; ++i) cs[i] = 1.0f + static_cast<float>(l);
    for (int64_t i = 0; i < ssm.ne[0] * ssm.ne[1] * ssm.ne[2]; ++i) ss[i] = -2.0f - static_cast<float>(l);
    float* co = static_cast<float*>(conv.row(0, own));
    co[0] = 99.0f;
  }
  EXPECT_EQ(h.verify(*seq, 4).code(), StatusCode::kOutOfRange);  // before the fed token's end
  ASSERT_TRUE(h.verify(*seq, 7).ok());  // the fed token + 1 draft kept
  EXPECT_EQ(h.seq_len(*seq), 7);
  for (int l = 0; l < 3; ++l) {
    const TensorView conv = h.conv_state(l);
    const TensorView ssm = h.ssm_state(l);
    const float* co = static_cast<const float*>(conv.row(0, own));
    const float* so = static_cast<const float*>(ssm.row(0, 0, own));
    for (int64_t i = 0; i < conv.ne[0] * conv.ne[1]; ++i) ASSERT_EQ(co[i], 1.0f + static_cast<float>(l));
    for (int64_t i = 0; i < ssm.ne[0] * ssm.ne[1] * ssm.ne[2]; ++i) ASSERT_EQ(so[i], -2.0f - static_cast<float>(l));
  }
  EXPECT_EQ(h.state_pool().n_held(), 1);
  EXPECT_TRUE(h.check_invariants().ok()) << h.check_invariants().to_string();

  // All drafts accepted: the state stays; a sequence removed with drafts
  // pending frees its snapshots.
  b.clear();
  b.add(30, 7, *seq, true);
  b.add(31, 8, *seq, true, true);
  ASSERT_TRUE(h.plan(b, plan).ok());
  h.prepare(plan);
  h.apply(plan);
  static_cast<float*>(h.conv_state(0).row(0, own))[0] = 7.0f;
  ASSERT_TRUE(h.verify(*seq, 9).ok());
  EXPECT_EQ(static_cast<const float*>(h.conv_state(0).row(0, own))[0], 7.0f);
  b.clear();
  b.add(32, 9, *seq, true);
  b.add(33, 10, *seq, true, true);
  ASSERT_TRUE(h.plan(b, plan).ok());
  h.prepare(plan);
  h.apply(plan);
  EXPECT_EQ(h.state_pool().n_held(), 2);
  ASSERT_TRUE(h.remove_sequence(*seq).ok());
  EXPECT_EQ(h.state_pool().n_held(), 0);
  EXPECT_TRUE(h.check_invariants().ok()) << h.check_invariants().to_string();
}

// An FFN-only layer (nemotron_h) holds nothing: no K/V in the attention part,
// no state in the pool; the attention caches refuse such a geometry (they map
// layers one to one), and the hybrid cache still needs a recurrent layer.
TEST(HybridKvCache, StatelessLayersHoldNothing) {
  KvGeometry g = attention_geometry(5);
  g.layers[0].recurrent = true;
  g.layers[0].state = {3, 40, 8, 2};
  g.layers[1].stateless = true;
  g.layers[4].stateless = true;
  for (KvStorage storage : {KvStorage::kPaged, KvStorage::kContiguous}) {
    KvCacheOptions o = paged_options(16, 8, 1);
    o.storage = storage;
    Result<std::unique_ptr<KvCache>> c = create_kv_cache(g, o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const auto* h = dynamic_cast<HybridKvCache*>(c->get());
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->n_layer(), 5);
    EXPECT_EQ(h->attention().n_layer(), 2);  // layers 2 and 3
    EXPECT_FALSE(h->k_view(2).empty());
    EXPECT_FALSE(h->k_view(3).empty());
    EXPECT_TRUE(h->conv_state(1).empty());
    EXPECT_TRUE(h->ssm_state(4).empty());
    EXPECT_FALSE(h->ssm_state(0).empty());
    EXPECT_EQ(h->stats().slot_bytes, (3 * 40 + 8 * 8 * 2) * sizeof(float));
  }
  KvGeometry no_recurrent = attention_geometry(3);
  no_recurrent.layers[1].stateless = true;
  EXPECT_EQ(ContiguousKvCache::create(no_recurrent, KvCacheOptions{}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PagedKvCache::create(no_recurrent, paged_options(16, 8, 1)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(HybridKvCache::create(no_recurrent, KvCacheOptions{}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(HybridKvCache, ConvOnlyLayersHoldTapsAndNoState) {
  KvGeometry g = hybrid_geometry();
  g.layers[1].state = {2, 24, 0, 0};  // conv taps only (LFM2's short conv)
  KvCacheOptions o = paged_options(16, 8, 0);
  o.max_seqs = 2;
  o.max_checkpoints = 1;
  Result<std::unique_ptr<HybridKvCache>> c = HybridKvCache::create(g, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const HybridKvCache& h = **c;
  EXPECT_EQ(h.conv_state(1).ne, (std::array<int64_t, kMaxDims>{2, 24, 3, 1}));
  EXPECT_TRUE(h.ssm_state(1).empty());
  EXPECT_FALSE(h.ssm_state(0).empty());
  const size_t slot = 2 * (3 * 40 + 8 * 8 * 2) * sizeof(float) + 2 * 24 * sizeof(float);
  EXPECT_EQ(h.stats().slot_bytes, slot);
  // Half a state (head_dim without heads, or heads without head_dim) is no geometry.
  g.layers[1].state = {2, 24, 4, 0};
  EXPECT_EQ(HybridKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  g.layers[1].state = {2, 24, 0, 3};
  EXPECT_EQ(HybridKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(PagedKvCache, PlanGroupsSequencesAndNumbersThemForAttention) {
  Result<std::unique_ptr<PagedKvCache>> made =
      PagedKvCache::create(attention_geometry(2), paged_options(16, 8, /*n_seq=*/3));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  PagedKvCache& cache = **made;
  EXPECT_TRUE(cache.has_sequence(2));
  EXPECT_FALSE(cache.has_sequence(3));
  KvPlan plan;
  Batch b;
  b.add(1, 0, 2, true);  // sequence 2 first: attention sequence 0
  b.add(2, 0, 0, true);
  b.add(3, 1, 2, true);
  ASSERT_TRUE(cache.plan(b, plan).ok());
  EXPECT_EQ(plan.seq_idx, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(plan.kv_len, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(plan.max_blocks, 1);
  ASSERT_EQ(plan.block_table.size(), 2u);
  // Blocks come from the front of a fresh free queue, in batch-entry order.
  EXPECT_EQ(plan.block_table, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(plan.slots, (std::vector<int32_t>{8, 16, 9}));
  EXPECT_EQ(cache.seq_len(2), 0);  // planning changes nothing
  cache.apply(plan);
  EXPECT_EQ(cache.seq_len(2), 2);
  EXPECT_EQ(cache.seq_len(0), 1);

  b.clear();
  b.add(1, 5, 0, true);  // a gap
  Status st = cache.plan(b, plan);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("position 5, expected 1"), std::string::npos) << st.to_string();
  b.clear();
  b.add(1, 0, 7, true);  // no such sequence
  EXPECT_EQ(cache.plan(b, plan).code(), StatusCode::kInvalidArgument);
  b.clear();
  b.add(1, 255, 1, true);
  EXPECT_EQ(cache.plan(b, plan).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cache.check_invariants().ok());
}

TEST(PagedKvCache, ShortPoolSaysHowManyBlocksAreMissing) {
  Result<std::unique_ptr<PagedKvCache>> made =
      PagedKvCache::create(attention_geometry(1), paged_options(5, 8, 2));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  PagedKvCache& cache = **made;
  KvPlan plan;
  Batch b;
  for (int p = 0; p < 20; ++p) b.add(1, p, 0, false);  // 3 of the 4 usable blocks
  ASSERT_TRUE(cache.plan(b, plan).ok());
  EXPECT_EQ(plan.pages.n_missing_blocks, 0);
  cache.apply(plan);
  b.clear();
  for (int p = 0; p < 20; ++p) b.add(1, p, 1, false);
  EXPECT_EQ(cache.plan(b, plan).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(plan.pages.n_missing_blocks, 2);
  EXPECT_EQ(cache.seq_len(1), 0);
  EXPECT_EQ(cache.manager().pool().n_used(), 3);
}

TEST(PagedKvCache, OptionsAndSizing) {
  const KvGeometry g = attention_geometry(3);
  EXPECT_EQ(*parse_kv_type("f16"), DType::F16);
  EXPECT_EQ(*parse_kv_type("bf16"), DType::BF16);
  EXPECT_EQ(*parse_kv_type("q8_0"), DType::Q8_0);
  EXPECT_FALSE(parse_kv_type("q4_0").ok());
  EXPECT_FALSE(parse_kv_type("").ok());

  KvCacheOptions o;
  o.n_seq = 2;
  o.n_ctx = 100;
  Result<std::unique_ptr<PagedKvCache>> c = PagedKvCache::create(g, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->type(), DType::F32);  // default
  EXPECT_EQ((*c)->block_size(), 16);
  EXPECT_EQ((*c)->n_blocks(), 2 * 7 + 1);  // two sequences of 100 positions, null block
  const std::vector<KvLayerShape> shapes = g.attention_shapes();
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ((*c)->block_bytes(), *kv_block_bytes(shapes, DType::F32, 16));
  EXPECT_GE((*c)->bytes(), (*c)->block_bytes() * 15);

  o.memory_mib = 3;
  o.block_size = 32;
  o.type = DType::Q8_0;
  c = PagedKvCache::create(g, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->n_blocks(), *kv_blocks_for_budget(3, shapes, DType::Q8_0, 32));
  EXPECT_LE((*c)->bytes(), (size_t{3} << 20) + 64 * 2 * shapes.size());

  o.n_blocks = 10;  // and memory_mib: not both
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  o.memory_mib = 0;
  o.block_size = 24;
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  o.block_size = 256;
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  o.block_size = 8;
  o.type = DType::BF16;
  EXPECT_TRUE(PagedKvCache::create(g, o).ok());
  o.type = DType::Q4_0;
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kUnsupported);
  o.type = DType::F32;
  o.n_blocks = 0;
  o.n_seq = 0;  // nothing to size the pool from
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  o.n_blocks = 1;  // the null block alone
  EXPECT_EQ(PagedKvCache::create(g, o).status().code(), StatusCode::kInvalidArgument);
  o.n_blocks = 2;
  EXPECT_TRUE(PagedKvCache::create(g, o).ok());
}

// What one sequence alone can hold: the usable blocks of a pool (the null
// block excluded), a contiguous slot's n_ctx, a hybrid cache's attention part.
TEST(KvCache, TokenCapacityOfOneSequence) {
  Result<std::unique_ptr<KvCache>> c =
      create_kv_cache(attention_geometry(1), paged_options(5, 8, 0));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->token_capacity(), 4 * 8);
  EXPECT_EQ((*c)->n_ctx(), 256);  // the context does not limit the pool's figure
  KvCacheOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  c = create_kv_cache(attention_geometry(1), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->token_capacity(), 64);
  KvCacheOptions h = paged_options(7, 16, 0);
  h.max_seqs = 1;
  c = create_kv_cache(hybrid_geometry(), h);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ((*c)->token_capacity(), 6 * 16);
}

// A latent layer (KvLayerShape::v_in_k) stores K rows only: V is a view of
// their first head_dim_v values (same memory, same strides) in both
// layouts, there is no V table, and the memory and the summary count K only.
TEST(KvCache, LatentLayersReadVFromKRows) {
  KvGeometry g;
  g.name = "latent";
  for (int l = 0; l < 2; ++l) g.layers.push_back({false, {1, 96, 64, 0, true}, {}});
  KvCacheOptions contiguous;
  contiguous.n_ctx = 64;
  contiguous.n_seq = 2;
  contiguous.type = DType::F16;
  for (const KvCacheOptions& o : {contiguous, paged_options(32, 16, 0)}) {
    Result<std::unique_ptr<KvCache>> c = create_kv_cache(g, o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const int64_t positions = o.storage == KvStorage::kPaged ? 32 * 16 : 2 * 64;
    for (int l = 0; l < 2; ++l) {
      const TensorView k = (*c)->k_view(l), v = (*c)->v_view(l);
      EXPECT_EQ(v.data, k.data);
      EXPECT_EQ(v.dtype, k.dtype);
      EXPECT_EQ(v.ne[0], 64);
      EXPECT_EQ(k.ne[0], 96);
      for (int i = 1; i < 4; ++i) EXPECT_EQ(v.ne[i], k.ne[i]);
      EXPECT_EQ(v.nb, k.nb);
      EXPECT_TRUE((*c)->v_table(l).empty());
      EXPECT_EQ((*c)->k_table(l).ne[0], 96);
    }
    EXPECT_LE((*c)->bytes(), static_cast<size_t>(2 * positions * 96 * 2 + 2 * 64));
    EXPECT_NE((*c)->summary().find("0.38 KiB per token"), std::string::npos) << (*c)->summary();
  }
}

TEST(KvCache, SummaryNamesWhatTheCacheHolds) {
  KvCacheOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  Result<std::unique_ptr<KvCache>> c = create_kv_cache(attention_geometry(1), o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->summary(), "2 sequences of 64 positions (0.1 MiB, 0.75 KiB per token)");
  c = create_kv_cache(attention_geometry(1), paged_options(32, 16, 0));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->summary(), "32 blocks of 16 tokens (0.2 MiB, 0.38 KiB per token)");
  KvCacheOptions h = paged_options(32, 16, 0);
  h.max_seqs = 2;
  h.max_checkpoints = 4;
  c = create_kv_cache(hybrid_geometry(), h);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->summary(),
            "K/V 32 blocks of 16 tokens (0.2 MiB, 0.38 KiB per token), recurrent state 6 slots of 0.00 MiB (2 "
            "sequences, 4 checkpoints)");
  h.draft_slots = 8;
  c = create_kv_cache(hybrid_geometry(), h);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->summary(),
            "K/V 32 blocks of 16 tokens (0.2 MiB, 0.38 KiB per token), recurrent state 14 slots of 0.00 MiB (2 "
            "sequences, 4 checkpoints, 8 draft snapshots)");
}

}  // namespace
}  // namespace folio::cache
