// The Vulkan command stream of a one-sequence decode step of the bundled
// dense llama (SmolLM2 135M Q4_1, every layer, the head and a paged KV
// cache on the device): dispatches and barriers per layer, counted by the
// backend (Backend::stream_counters). A barrier is recorded only where a
// dispatch overlaps unsynchronised work (backend/vulkan/vk_hazards.h;
// vulkan_hazards_test.cc shows independent work sharing a stage), so a
// layer's barriers are its dependency chain. With the device fusions a
// layer is six stages of one dispatch each: attention norm + Q/K/V (one
// product over the weights joined at load, the norm in its prologue:
// kRmsNormMulMat) -> rope with the K/V cache write (kRopeSetRows) ->
// attention -> output projection + residual (kMulMatAdd) -> ffn norm +
// gate/up + SwiGLU (kRmsNormMulMat in the GLU mode) -> down + residual
// (kMulMatAdd). The step's own work (uploads, the first norm, the last
// layer's unfused ends, the output norm and head, the read-back) adds a
// little per layer.
#include <gtest/gtest.h>

#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "default_model.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace vulkan_stream_test {

StreamCounters difference(const StreamCounters& a, const StreamCounters& b) {
  return {b.dispatches - a.dispatches, b.barriers - a.barriers, b.submits - a.submits};
}

// A decode step of `n_seqs` sequences of `m` (every layer, the head and a
// paged F16 KV cache, plus a hybrid's state pools, on `device`): the
// counters of the third forward (a prompt token, then two steps, which must
// record the same stream), printed per layer.
StreamCounters decode_step_counters(const Model& m, Backend* device, const char* what,
                                    int n_seqs = 1) {
  Result<std::unique_ptr<cache::KvCache>> cache =
      m.make_cache(cache_options(DType::F16, 64, n_seqs, /*paged=*/true, device));
  EXPECT_TRUE(cache.ok()) << cache.status().to_string();
  if (!cache.ok()) return {};
  auto ctx = ForwardContext::with_device(device, 2);

  cache::Batch batch;
  auto step = [&](int32_t token, int32_t pos) -> StreamCounters {
    const StreamCounters before = *device->stream_counters();
    batch.clear();
    for (int q = 0; q < n_seqs; ++q) batch.add(token + q, pos, q, true);
    Result<TensorView> logits = m.forward(batch, **cache, *ctx);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    return difference(before, *device->stream_counters());
  };
  step(1, 0);  // the prompt; pipelines compile here
  const StreamCounters a = step(42, 1);
  const StreamCounters b = step(7, 2);
  // The same shape records the same stream.
  EXPECT_EQ(a.dispatches, b.dispatches);
  EXPECT_EQ(a.barriers, b.barriers);
  const int n_layer = m.config().n_layer;
  std::printf(
      "%s decode step of %d: %llu dispatches, %llu barriers, %llu submits over %d layers "
      "(%.2f / %.2f per layer)\n",
      what, n_seqs, static_cast<unsigned long long>(b.dispatches),
      static_cast<unsigned long long>(b.barriers), static_cast<unsigned long long>(b.submits),
      n_layer, static_cast<double>(b.dispatches) / n_layer,
      static_cast<double>(b.barriers) / n_layer);
  return b;
}

std::unique_ptr<Model> load_on(const std::string& path, Backend* device) {
  Result<std::unique_ptr<Model>> model = load_offloaded(path, device);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return model.ok() ? std::move(model).value() : nullptr;
}

// A dense llama's decode step under its ceilings; a step of several
// sequences (up to kFusedStepTokens: 2 here, to keep lavapipe quick) takes
// the same fused stream (the norms in the products, the residual adds in
// their epilogues: the matvecs take up to 8 columns; vulkan_fusion_test
// checks the bits of 8).
TEST(VulkanStream, DenseLlamaDecodeStepStaysUnderItsCeilings) {
  const std::string path = folio::testing::chat_model_path();
  if (!file_exists(path)) FAIL() << folio::testing::kChatModelHint << ": " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  const std::unique_ptr<Model> m = load_on(path, device);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->config().arch, "llama");
  const StreamCounters a = decode_step_counters(*m, device, "SmolLM2");
  const int n_layer = m->config().n_layer;
  const double dispatches = static_cast<double>(a.dispatches) / n_layer;
  const double barriers = static_cast<double>(a.barriers) / n_layer;
  // Whole step over the layers: the step's own work (uploads of ids and
  // positions, the output norm and head, the logits read-back) included.
  // A fused layer is 6 dispatches (Q/K/V with the input norm, rope with
  // the cache writes, attention, the output projection with the residual
  // add, gate / up with the norm and the GLU, down with the add) on either
  // path: int8 products read their input quantized by the dispatch that
  // wrote it (the product before's last workgroup, normalising it where a
  // norm follows; attention's write pass), only the first layer's by
  // quant_act_q8. 6.27 and 6.37 on lavapipe (10.23 and 10.30 with a
  // quantizer dispatch before each int8 product).
  EXPECT_LE(dispatches, 6.3);
  EXPECT_LE(barriers, 6.4);
  const StreamCounters two = decode_step_counters(*m, device, "SmolLM2", 2);
  EXPECT_EQ(two.dispatches, a.dispatches);
  EXPECT_EQ(two.barriers, a.barriers);
}

// A prefill chunk of the same model (32 tokens, on an empty paged cache):
// Q/K/V are one product over the joined weights there too, its parts
// strided views of the product's columns, which the hazard tracker keeps
// apart (q's and k's norms or writes share a stage), and one rope takes q
// and k and writes K and V to the cache (kRopeSetRows on strided views).
// Int8 products (a device with integer dot products) quantize their input
// once for all three. Ceilings from the counts on lavapipe, whole chunk
// per layer: 13.17 dispatches and 13.37 barriers with int8 products (20.07
// and 15.27 with three products, two ropes and two cache writes, before
// the last layer's products for the output row quantized their inputs
// too); the float path (FOLIO_VULKAN_INT8=0) 9.13 and 9.23 (14.13 and
// 10.23).
TEST(VulkanStream, DenseLlamaPrefillChunkTakesQkvInOneProduct) {
  const std::string path = folio::testing::chat_model_path();
  if (!file_exists(path)) FAIL() << folio::testing::kChatModelHint << ": " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  const std::unique_ptr<Model> m = load_on(path, device);
  ASSERT_NE(m, nullptr);
  Result<std::unique_ptr<cache::KvCache>> cache =
      m->make_cache(cache_options(DType::F16, 64, 1, /*paged=*/true, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  auto ctx = ForwardContext::with_device(device, 2);
  cache::Batch batch;
  for (int32_t i = 0; i < 32; ++i) batch.add(1 + i, i, 0, i == 31);
  const StreamCounters before = *device->stream_counters();
  ASSERT_TRUE(m->forward(batch, **cache, *ctx).ok());
  const StreamCounters a = difference(before, *device->stream_counters());
  const int n_layer = m->config().n_layer;
  const double dispatches = static_cast<double>(a.dispatches) / n_layer;
  const double barriers = static_cast<double>(a.barriers) / n_layer;
  std::printf("SmolLM2 prefill chunk: %.2f dispatches, %.2f barriers per layer\n", dispatches,
              barriers);
  EXPECT_LE(dispatches, 13.2);
  EXPECT_LE(barriers, 13.4);
}

// The hybrid decoder's one-token step with the same fusions: each DeltaNet
// or gated-attention layer takes its input norm into its input products
// (kRmsNormMulMat) and its residual add into its output product
// (kMulMatAdd), a DeltaNet layer's four input projections are one product
// over the weights joined at load, and the dense FFN is two dispatches
// (norm + gate/up + SwiGLU, down + residual). Whole-step ceilings (the tiny
// model's four layers carry the step's own work): 63 dispatches and 50
// barriers, from 80 and 56 unfused.
TEST(VulkanStream, DenseHybridDecodeStepStaysUnderItsCeilings) {
  const std::string path = shared_models_dir() + "/tiny-qwen35-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  const std::unique_ptr<Model> m = load_on(path, device);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->config().arch, "qwen35");
  for (int il = 0; il < m->config().n_layer; ++il) {  // the DeltaNet input projections joined
    const LayerWeights& l = m->weights().layers[static_cast<size_t>(il)];
    EXPECT_EQ(l.ssm_proj_joint.empty(), !m->config().is_recurrent(il)) << "layer " << il;
  }
  const StreamCounters a = decode_step_counters(*m, device, "tiny-qwen35");
  EXPECT_LE(a.dispatches, 63u);
  EXPECT_LE(a.barriers, 50u);
}

// Gemma 3's sandwich-norm layer: its GeGLU gate/up runs in the decode
// matvec's GLU epilogue (kMulMatGlu), one stage fewer than the product and
// the GLU, and each block's end (post norm, residual add, next norm) is one
// dispatch (kRmsNormAddRmsNorm), two stages fewer. Whole-step ceilings for
// the tiny model's six layers: 65 dispatches and 62 barriers, from 81 and
// 78 with neither, 75 and 72 with the GLU alone.
TEST(VulkanStream, Gemma3DecodeStepStaysUnderItsCeilings) {
  const std::string path = local_refdata_dir() + "/tiny-gemma3-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  const std::unique_ptr<Model> m = load_on(path, device);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->config().arch, "gemma3");
  const StreamCounters a = decode_step_counters(*m, device, "tiny-gemma3");
  EXPECT_LE(a.dispatches, 65u);
  EXPECT_LE(a.barriers, 62u);
}

// Post norms with no next norm after them: a block's post norm and its
// residual add are one dispatch (kRmsNormAdd): exaone4's two per layer,
// gemma4's FFN and per-layer-input ends and its MoE branches' sum.
// Whole-step ceilings, from (dispatches, barriers) before: exaone4 28, 25
// (32, 29), tiny-gemma4 136, 130 (148, 142), tiny-gemma4-moe 132, 111
// (140, 119).
TEST(VulkanStream, PostNormDecodeStepStaysUnderItsCeilings) {
  struct Case {
    const char* file;
    const char* arch;
    uint64_t dispatches, barriers;
  };
  for (const Case& c : {Case{"/llama-archs/exaone4-dense.gguf", "exaone4", 28, 25},
                        Case{"/tiny-gemma4-f32.gguf", "gemma4", 136, 130},
                        Case{"/tiny-gemma4-moe-f32.gguf", "gemma4", 132, 111}}) {
    const std::string path = local_refdata_dir() + c.file;
    if (!file_exists(path)) FAIL() << "model missing: " << path;
    FOLIO_VULKAN_OR_SKIP(device);
    const std::unique_ptr<Model> m = load_on(path, device);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->config().arch, c.arch);
    const StreamCounters a = decode_step_counters(*m, device, c.file);
    EXPECT_LE(a.dispatches, c.dispatches) << c.file;
    EXPECT_LE(a.barriers, c.barriers) << c.file;
  }
}

// MoE layers: the router is one dispatch (kMoeRoute, from soft_max and
// top_k, and no read-back of the probabilities and ids, no wait and upload
// of the weights per layer: one submit per step), the weighted sum of two
// or more experts another (kMoeSum, from a mul and k - 1 adds: qwen3next),
// and a shared expert adds into the routed output in its down product
// (kMulMatAdd): glm4moe's as it is, qwen2moe's and qwen3next's scaled by
// their gate's sigmoid in the same epilogue. Whole-step ceilings, from
// (dispatches, barriers, submits) before: qwen3moe 41, 36, 2 (43, 44, 5),
// glm4moe 35, 30, 2 (38, 36, 3), qwen2moe 43, 36, 2 (49, 42, 2),
// tiny-qwen3next 101, 76, 4 (121, 108, 9; 113, 88, 4 with the gate, mul
// and add unfused).
TEST(VulkanStream, MoeDecodeStepStaysUnderItsCeilings) {
  struct Case {
    const char* file;
    const char* arch;
    uint64_t dispatches, barriers, submits;
  };
  for (const Case& c : {Case{"/llama-archs/qwen3moe-moe.gguf", "qwen3moe", 41, 36, 2},
                        Case{"/llama-archs/glm4moe-moe.gguf", "glm4moe", 35, 30, 2},
                        Case{"/llama-archs/qwen2moe-moe.gguf", "qwen2moe", 43, 36, 2},
                        Case{"", "qwen3next", 101, 76, 4}}) {
    const std::string path = *c.file != 0 ? local_refdata_dir() + c.file
                                          : shared_models_dir() + "/tiny-qwen3next-f32.gguf";
    if (!file_exists(path)) FAIL() << "model missing: " << path;
    FOLIO_VULKAN_OR_SKIP(device);
    const std::unique_ptr<Model> m = load_on(path, device);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->config().arch, c.arch);
    const StreamCounters a = decode_step_counters(*m, device, c.arch);
    EXPECT_LE(a.dispatches, c.dispatches) << c.arch;
    EXPECT_LE(a.barriers, c.barriers) << c.arch;
    EXPECT_LE(a.submits, c.submits) << c.arch;
  }
}

// Q/K/V and gate/up are joined at load where the device holds them (one
// buffer, the parts views of its rows), never on the host.
TEST(VulkanStream, DeviceWeightsAreJoinedHostWeightsAreNot) {
  const std::string path = folio::testing::chat_model_path();
  if (!file_exists(path)) FAIL() << folio::testing::kChatModelHint << ": " << path;
  Result<std::unique_ptr<Model>> host = Model::load(path, LoadOptions{});
  ASSERT_TRUE(host.ok()) << host.status().to_string();
  for (const LayerWeights& l : (*host)->weights().layers) {
    EXPECT_TRUE(l.qkv_joint.empty());
    EXPECT_TRUE(l.gate_up_joint.empty());
  }
  FOLIO_VULKAN_OR_SKIP(device);
  Result<std::unique_ptr<Model>> model = load_offloaded(path, device);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (const LayerWeights& l : (*model)->weights().layers) {
    ASSERT_FALSE(l.qkv_joint.empty());
    ASSERT_FALSE(l.gate_up_joint.empty());
    const auto* base = static_cast<const char*>(l.qkv_joint.data);
    EXPECT_EQ(l.wq.data, base);
    EXPECT_EQ(l.wk.data, base + l.wq.ne[1] * l.wq.nb[1]);
    EXPECT_EQ(l.wv.data, base + (l.wq.ne[1] + l.wk.ne[1]) * l.wq.nb[1]);
    EXPECT_EQ(l.qkv_joint.ne[1], l.wq.ne[1] + l.wk.ne[1] + l.wv.ne[1]);
    EXPECT_EQ(l.qkv_joint.dtype, l.wq.dtype);
    const auto* gu = static_cast<const char*>(l.gate_up_joint.data);
    EXPECT_EQ(l.ffn_gate.data, gu);
    EXPECT_EQ(l.ffn_up.data, gu + l.ffn_gate.ne[1] * l.ffn_gate.nb[1]);
    EXPECT_EQ(l.gate_up_joint.ne[1], 2 * l.ffn_gate.ne[1]);
  }
}

}  // namespace vulkan_stream_test
}  // namespace folio::model::testing
