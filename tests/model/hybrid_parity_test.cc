// llama.cpp parity of the hybrid models (gated DeltaNet + gated attention):
// tests/data's tiny-qwen3next (MoE + shared expert, ssm_ba, kDiv
// head map) and tiny-qwen35 (dense, ssm_beta / ssm_alpha, kMod head map,
// multi-section rope), plus this suite's tiny-qwen35moe and
// tiny-granitehybrid(-moe) (Mamba-2 layers, Granite multipliers; dense FFN,
// or experts with an ungated shared expert) and tiny-lfm2 / tiny-lfm2moe
// (LFM2's short-conv layers: conv taps only, no state matrix; q/k norms,
// tied head; a sliding window on tiny-lfm2's attention layers; dense FFN,
// or leading dense layers then sigmoid-routed experts with a selection
// bias) and tiny-nemotron-h / tiny-nemotron-h-moe (one block per layer:
// Mamba-2, rope-less attention or a relu^2 FFN alone; relu^2 latent experts
// and shared expert). Same
// protocol as parity_test.cc: the prompt as one batch (prefill logits of
// every position), then the reference continuation fed one token at a time
// (teacher forcing: decode logits, and folio's argmax at every step equals
// llama.cpp's greedy token). Decode steps run the fused in-place state ops.
//
// Tolerances as the dense models' (tests/data README): F32 KV 1e-3 max
// |Δlogit| (measured ~1e-5); F16 KV 4e-3 prefill / 1.3e-2 decode (the
// spread of llama.cpp's own f16-KV + flash-attention variant; the LFM2
// models' prefill 8e-3, see below); every greedy
// token must match. Each case runs with a paged and a contiguous attention
// part (their logits are bit-identical: hybrid_cache_test.cc).
// The Vulkan instantiation runs every layer, the recurrent-state pool and the
// KV cache on the device, to the same tolerances.
#include <gtest/gtest.h>

#include "cache/kv_cache.h"
#include "llamacpp_parity.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace hybrid_parity_test {

struct Param {
  std::string name;  // file stem: <name>-f32.gguf, <name>.<case>.*
  std::string dir;
  std::string kase;
  DType kv = DType::F32;
  bool paged = false;
  bool vulkan = false;  // layers, recurrent state and KV cache on the Vulkan device
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return test_name(info.param.name + "_" + info.param.kase + "_" + dtype_name(info.param.kv) +
                   (info.param.paged ? "_paged" : "_contiguous") +
                   (info.param.vulkan ? "_vulkan" : ""));
}

std::vector<Param> params(DType kv) {
  std::vector<Param> v;
  const std::pair<const char*, std::string> models[] = {{"tiny-qwen3next", shared_models_dir()},
                                                        {"tiny-qwen35", shared_models_dir()},
                                                        {"tiny-qwen35moe", local_refdata_dir()},
                                                        {"tiny-granitehybrid", local_refdata_dir()},
                                                        {"tiny-granitehybrid-moe", local_refdata_dir()},
                                                        {"tiny-lfm2", local_refdata_dir()},
                                                        {"tiny-lfm2moe", local_refdata_dir()},
                                                        {"tiny-nemotron-h", local_refdata_dir()},
                                                        {"tiny-nemotron-h-moe", local_refdata_dir()}};
  for (const auto& [name, dir] : models) {
    for (const char* c : {"short", "long"}) {
      for (bool paged : {false, true}) v.push_back({name, dir, c, kv, paged});
    }
  }
  return v;
}

class HybridParity : public ::testing::TestWithParam<Param> {};

TEST_P(HybridParity, PrefillAndGreedyDecodeMatchLlamaCpp) {
  const Param& p = GetParam();
  const std::string model_path = p.dir + "/" + p.name + "-f32.gguf";
  const std::string base = p.dir + "/" + p.name + "." + p.kase;
  for (const std::string& f : {model_path, base + ".prefill.npy", base + ".decode.npy"}) {
    if (!file_exists(f)) FAIL() << "reference file missing: " << f;
  }
  Backend* device = nullptr;
  if (p.vulkan) {
    FOLIO_VULKAN_OR_SKIP(vk);
    device = vk;
  }
  LoadOptions lo;
  if (device != nullptr) lo.offload_type = &device->default_buffer_type();
  Result<std::unique_ptr<Model>> model = Model::load(model_path, lo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  ASSERT_TRUE(m.config().is_hybrid());
  const bool f16 = p.kv != DType::F32;
  // The LFM2 models' F16-KV prefill bound is wider: llama.cpp's own f16-KV +
  // flash-attention run differs from its F32 reference by 7.5e-3 / 8.0e-3
  // (prefill) and 1.0e-2 / 7.9e-3 (decode) on tiny-lfm2 / tiny-lfm2moe
  // (q/k-normed heads, tied head); folio's F16 KV measures 5.4e-3 / 4.4e-3
  // prefill, 2.9e-3 / 3.2e-3 decode.
  const bool lfm2 = p.name.rfind("tiny-lfm2", 0) == 0;
  const float tol_prefill = f16 ? (lfm2 ? 8e-3f : 4e-3f) : 1e-3f;
  const float tol_decode = f16 ? 1.3e-2f : 1e-3f;

  auto ctx = ForwardContext::with_device(device, 2);
  Result<std::unique_ptr<cache::KvCache>> cache =
      m.make_cache(cache_options(p.kv, 512, 1, p.paged, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  expect_llamacpp_parity(m, **cache, *ctx, base, {tol_prefill, tol_decode},
                         p.name + "." + p.kase + " kv " + dtype_name(p.kv) +
                             (p.paged ? " paged" : " contiguous") + (p.vulkan ? " vulkan" : ""));
}

INSTANTIATE_TEST_SUITE_P(F32Kv, HybridParity, ::testing::ValuesIn(params(DType::F32)), param_name);
INSTANTIATE_TEST_SUITE_P(F16Kv, HybridParity, ::testing::ValuesIn(params(DType::F16)), param_name);

// On the Vulkan device (lavapipe on CI machines, slow): every model's short
// and long cases with a paged F32 cache (what the commands use), and one
// contiguous and one F16 case.
std::vector<Param> vulkan_params() {
  std::vector<Param> v;
  for (Param p : params(DType::F32)) {
    if (!p.paged && !(p.name == std::string("tiny-qwen35") && p.kase == "short")) continue;
    p.vulkan = true;
    v.push_back(p);
  }
  for (Param p : params(DType::F16)) {
    if (!p.paged || p.kase != "short" || p.name != std::string("tiny-qwen3next")) continue;
    p.vulkan = true;
    v.push_back(p);
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(Vulkan, HybridParity, ::testing::ValuesIn(vulkan_params()), param_name);

}  // namespace
}  // namespace folio::model::testing
