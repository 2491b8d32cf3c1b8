// Gemma 4's layer layout on tiny-gemma4 (tests/model/refdata/README.md):
// sliding-window layers 0, 2, 4 (head dim 32, 2 KV heads), full-attention
// layers 1, 3, 5 (head dim 64, 1 KV head); layers 4 and 5 share the K/V of
// layers 2 and 3. The shared layers own no cache storage in any cache
// (contiguous, paged, the paged cache's sliding-window pool), and the
// weights they do not need are absent from the file.
#include <gtest/gtest.h>

#include "cache/contiguous_kv_cache.h"
#include "cache/paged_kv_cache.h"
#include "model/model.h"
#include "test_util.h"

namespace folio::model::testing {
namespace gemma4_test {

std::unique_ptr<Model> load_tiny_gemma4() {
  Result<std::unique_ptr<Model>> m = Model::load(local_refdata_dir() + "/tiny-gemma4-f32.gguf");
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(Gemma4, LayerLayoutAndSharedKvSources) {
  auto m = load_tiny_gemma4();
  ASSERT_NE(m, nullptr);
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.n_layer, 6);
  EXPECT_EQ(c.n_kv_shared, 2);
  EXPECT_EQ(c.n_layer_kv(), 4);
  for (int il = 0; il < 4; ++il) EXPECT_EQ(c.kv_source(il), il);
  EXPECT_EQ(c.kv_source(4), 2);  // sliding window: n_kv - 2
  EXPECT_EQ(c.kv_source(5), 3);  // full attention: n_kv - 1
  for (int il = 0; il < 6; ++il) {
    const bool swa = il % 2 == 0;
    EXPECT_EQ(c.is_swa(il), swa) << il;
    EXPECT_EQ(c.head_dim_k_of(il), swa ? 32 : 64) << il;
    EXPECT_EQ(c.head_dim_v_of(il), swa ? 32 : 64) << il;
    const RopeParams rp = c.rope_params(il);
    EXPECT_EQ(rp.n_dims, swa ? 32 : 64) << il;
    EXPECT_EQ(rp.freq_base, swa ? 10000.0f : 1000000.0f) << il;
  }
  EXPECT_EQ(c.kq_scale(), 1.0f);
  EXPECT_EQ(c.n_embd_per_layer, 16);
  EXPECT_EQ(c.final_softcap, 30.0f);

  const ModelWeights& w = m->weights();
  EXPECT_FALSE(w.rope_freqs.empty());
  EXPECT_FALSE(w.per_layer_tok_embd.empty());
  for (int il = 0; il < 6; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    EXPECT_EQ(l.wk.empty(), il >= 4) << il;
    EXPECT_EQ(l.attn_k_norm.empty(), il >= 4) << il;
    EXPECT_EQ(l.wv.empty(), il >= 4 || il % 2 == 1) << il;  // full layers: V from k
    EXPECT_FALSE(l.out_scale.empty()) << il;
    EXPECT_FALSE(l.pl_inp_gate.empty()) << il;
  }
}

// The 26B-A4B shape on tiny-gemma4-moe: every layer routed beside its
// dense FFN, softmax routing with renormalised weights, the fused gate/up
// expert table and the per-expert scale, no per-layer inputs.
TEST(Gemma4, MixtureOfExpertsBesideTheDenseFfn) {
  Result<std::unique_ptr<Model>> m =
      Model::load(local_refdata_dir() + "/tiny-gemma4-moe-f32.gguf");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_TRUE(c.moe_with_dense_ffn);
  EXPECT_TRUE(c.moe_gate_up_fused);
  EXPECT_EQ(c.moe.gating, ExpertGating::kSoftmax);
  EXPECT_TRUE(c.moe.norm_weights);
  EXPECT_EQ(c.moe.n_expert, 4);
  EXPECT_EQ(c.moe.n_expert_used, 2);
  EXPECT_EQ(c.n_embd_per_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) {
    EXPECT_TRUE(c.is_moe(il)) << il;
    const LayerWeights& l = (*m)->weights().layers[static_cast<size_t>(il)];
    EXPECT_FALSE(l.ffn_gate.empty()) << il;  // the dense branch
    EXPECT_FALSE(l.ffn_gate_up_exps.empty()) << il;
    EXPECT_TRUE(l.ffn_gate_exps.empty()) << il;
    EXPECT_FALSE(l.ffn_down_exps_s.empty()) << il;
    EXPECT_FALSE(l.ffn_gate_inp_s.empty()) << il;
    EXPECT_FALSE(l.ffn_post_norm_2.empty()) << il;
  }
}

TEST(Gemma4, SharedLayersHoldNoCacheStorage) {
  auto m = load_tiny_gemma4();
  ASSERT_NE(m, nullptr);
  const cache::KvGeometry g = m->config().cache_geometry();
  ASSERT_EQ(g.n_layer(), 4);
  for (int l = 0; l < 4; ++l) {
    const cache::KvLayerShape& s = g.layers[static_cast<size_t>(l)].kv;
    const bool swa = l % 2 == 0;
    EXPECT_EQ(s.n_kv_head, swa ? 2 : 1);
    EXPECT_EQ(s.head_dim_k, swa ? 32 : 64);
    EXPECT_EQ(s.window, swa ? 16 : 0);
  }

  // Contiguous: K and V of the 4 owning layers, nothing more. Per position
  // and sequence: 2 * (2 * 32 + 1 * 64) floats per layer pair.
  cache::KvCacheOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  auto contiguous = cache::ContiguousKvCache::create(g, o);
  ASSERT_TRUE(contiguous.ok()) << contiguous.status().to_string();
  EXPECT_EQ((*contiguous)->n_layer(), 4);
  EXPECT_EQ((*contiguous)->bytes(), size_t{2} * 2 * (2 * 32 + 1 * 64) * 64 * 2 * sizeof(float));

  // Paged: the full-attention layers 1, 3 in the main group, the
  // sliding-window layers 0, 2 in the window's pool; no group for 4 or 5.
  o.storage = cache::KvStorage::kPaged;
  o.block_size = 16;
  o.n_blocks = 9;
  o.max_seqs = 2;
  auto paged = cache::PagedKvCache::create(g, o);
  ASSERT_TRUE(paged.ok()) << paged.status().to_string();
  EXPECT_EQ((*paged)->n_layer(), 4);
  EXPECT_EQ((*paged)->n_groups(), 2);
  EXPECT_EQ((*paged)->kv_group(1), 0);
  EXPECT_EQ((*paged)->kv_group(3), 0);
  EXPECT_EQ((*paged)->kv_group(0), 1);
  EXPECT_EQ((*paged)->kv_group(2), 1);
  // One block of the main group: K and V of layers 1 and 3 (1 head of 64).
  EXPECT_EQ((*paged)->block_bytes(), size_t{16} * 2 * 2 * 64 * sizeof(float));
}

}  // namespace
}  // namespace folio::model::testing
