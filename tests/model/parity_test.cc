// llama.cpp parity on tiny random-weight F32 models (tests/data:
// tiny-llama, tiny-qwen3; this suite's refdata: qwen2, qwen3moe, gemma3,
// llama rope-scaling variants, gpt-oss, phi3, mistral3, glm4moe, gemma4). For each model, case:
//   - prefill: the prompt as one batch from position 0, logits of every
//     position vs M.C.prefill.npy;
//   - decode: the reference continuation fed one token at a time through the
//     KV cache (teacher forcing, so every row stays comparable), logits vs
//     M.C.decode.npy, and folio's argmax at every step (after the prompt and
//     after each fed token) equal to llama.cpp's greedy token: folio's greedy
//     continuation is llama.cpp's.
// Tolerances (max |Δlogit|; logits have std 1-3): 1e-3 with an F32 KV cache;
// gemma3 5e-3 (gemma4 1e-2, see below), because llama.cpp's CPU GELU goes
// through an fp16 table (see tests/model/refdata/README.md: an exact GELU
// lands at ~3e-3). With an F16
// KV cache: the spread llama.cpp's own f16-KV + flash-attention variant shows
// against its F32 run (tests/data/README.md: "up to 3e-3" prefill, measured
// 2.8e-3 on tiny-llama and 3.1e-3 on tiny-qwen3 long; 1.3e-2 decode). folio's
// f16 cache lands at the same 2-3e-3 (rounding K/V to f16 dominates), so the
// gate is 4e-3 prefill (gemma3 8e-3: the f16 spread plus its GELU-table
// allowance; gpt-oss its own measured spread, below) and 1.3e-2 decode, and
// every greedy token must still match.
// Q8_0 KV cache: see q8_params() below.
// Every case runs on both caches: contiguous and paged (blocks of 16 in a
// pool sized for the sequence); their logits are bit-identical
// (paged_kv_cache_test.cc), so the tolerances are the same.
#include <gtest/gtest.h>

#include "cache/kv_cache.h"
#include "llamacpp_parity.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace parity_test {

struct RefModel {
  std::string name;  // file stem: <name>-f32.gguf, <name>.<case>.*
  std::string dir;
};

std::vector<RefModel> ref_models() {
  std::vector<RefModel> v;
  for (const char* n : {"tiny-llama", "tiny-qwen3"}) v.push_back({n, shared_models_dir()});
  for (const char* n :
       {"tiny-qwen2", "tiny-qwen3moe", "tiny-gemma3", "tiny-gemma3-swa2-softcap",
        "tiny-llama-rope-linear", "tiny-llama-yarn", "tiny-llama-mha", "tiny-gpt-oss",
        "tiny-phi3", "tiny-mistral3", "tiny-glm4moe", "tiny-gemma4", "tiny-gemma4-moe"}) {
    v.push_back({n, local_refdata_dir()});
  }
  return v;
}

struct Param {
  RefModel model;
  std::string kase;  // "short" | "long"
  DType kv = DType::F32;
  bool paged = false;
  bool vulkan = false;  // layers and the KV cache on the Vulkan device
  int ngl = -1;         // with vulkan: layers offloaded (-1: all and the head)
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return test_name(info.param.model.name + "_" + info.param.kase + "_" + dtype_name(info.param.kv) +
                   (info.param.paged ? "_paged" : "") + (info.param.vulkan ? "_vulkan" : "") +
                   (info.param.ngl >= 0 ? "_ngl" + std::to_string(info.param.ngl) : ""));
}

std::vector<Param> params(DType kv) {
  std::vector<Param> v;
  for (const RefModel& m : ref_models()) {
    for (const char* c : {"short", "long"}) {
      for (bool paged : {false, true}) v.push_back({m, c, kv, paged});
    }
  }
  return v;
}

class RefParity : public ::testing::TestWithParam<Param> {};

TEST_P(RefParity, PrefillAndGreedyDecodeMatchLlamaCpp) {
  const Param& p = GetParam();
  const std::string model_path = p.model.dir + "/" + p.model.name + "-f32.gguf";
  const std::string base = p.model.dir + "/" + p.model.name + "." + p.kase;
  for (const std::string& f : {model_path, base + ".prefill.npy", base + ".decode.npy"}) {
    if (!file_exists(f)) FAIL() << "reference file missing: " << f;
  }
  Backend* device = nullptr;
  if (p.vulkan) {
    FOLIO_VULKAN_OR_SKIP(vk);
    device = vk;
  }
  LoadOptions lo;
  if (device != nullptr) {
    lo.offload_type = &device->default_buffer_type();
    lo.offload_layers = p.ngl;
  }
  Result<std::unique_ptr<Model>> model = Model::load(model_path, lo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  const bool gemma = m.config().arch == "gemma3" || m.config().arch == "gemma4";
  const bool f16 = p.kv != DType::F32;
  float tol_prefill = f16 ? (gemma ? 8e-3f : 4e-3f) : (gemma ? 5e-3f : 1e-3f);
  float tol_decode = f16 ? 1.3e-2f : (gemma ? 5e-3f : 1e-3f);
  if (f16 && m.config().arch == "gpt-oss") {
    // llama.cpp's own f16-KV + flash-attention run moves this model's logits
    // further (measured against its F32 run: 1.30e-2 prefill, 1.84e-2
    // decode; the larger activations of its scaled experts and biases make
    // f16 K/V rounding count more); folio's f16 cache lands at 1.2e-2.
    tol_prefill = 1.3e-2f;
    tol_decode = 1.9e-2f;
  }
  if (m.config().arch == "gemma4") {
    // Two GELUs per layer (the FFN's and the per-layer input gate's) go
    // through llama.cpp's fp16 table: the float64 NumPy forward with an exact
    // GELU sits 4.7e-3 / 7.4e-3 (short / long prefill) from llama.cpp, as
    // folio does to three digits, and 0.9e-3 / 2.9e-3 with the table emulated
    // (scripts/gen_model_refs.py --selfcheck). Greedy margins are >= 0.07.
    tol_prefill = f16 ? 1.5e-2f : 1e-2f;
    tol_decode = f16 ? 1.3e-2f : 1e-2f;
    if (f16 && m.config().moe.n_expert > 0) {
      // tiny-gemma4-moe: three GELU branches per layer and an expert mix.
      // llama.cpp's own f16-KV + flash-attention run sits 2.1e-2 / 1.8e-2
      // (short / long prefill) and 2.7e-2 / 4.1e-2 (decode) from its F32
      // reference; folio's f16 cache measures 1.0e-2 / 1.8e-2 and 1.6e-2 /
      // 1.1e-2.
      tol_prefill = 2.2e-2f;
      tol_decode = 2.5e-2f;
    }
  }
  if (p.kv == DType::Q8_0) tol_prefill = tol_decode = 0.25f;

  auto ctx = ForwardContext::with_device(device, 2);
  Result<std::unique_ptr<cache::KvCache>> cache =  // sequence 0, 512 positions
      m.make_cache(cache_options(p.kv, 512, 1, p.paged, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  expect_llamacpp_parity(m, **cache, *ctx, base, {tol_prefill, tol_decode},
                         p.model.name + "." + p.kase + " kv " + dtype_name(p.kv) +
                             (p.paged ? " paged" : "") + (p.vulkan ? " vulkan" : "") +
                             (p.ngl >= 0 ? " ngl " + std::to_string(p.ngl) : ""));
}

INSTANTIATE_TEST_SUITE_P(F32Kv, RefParity, ::testing::ValuesIn(params(DType::F32)), param_name);
INSTANTIATE_TEST_SUITE_P(F16Kv, RefParity, ::testing::ValuesIn(params(DType::F16)), param_name);
// A Q8_0 KV cache (no llama.cpp reference: its CPU path needs flash attention
// for quantized V): K/V rounded to 8 bits per 32-element block moves the
// logits by 0.04-0.1 on these models (measured), well inside 0.25, and every
// greedy token stays. Dense models only: in qwen3moe a router margin of 1e-4
// lets one token pick another expert, a legitimate jump of ~2.6 (gpt-oss,
// glm4moe and gemma4-moe, also routed, are left out for the same reason).
std::vector<Param> q8_params() {
  std::vector<Param> v;
  for (const Param& p : params(DType::Q8_0)) {
    if (p.model.name != "tiny-qwen3moe" && p.model.name != "tiny-gpt-oss" &&
        p.model.name != "tiny-glm4moe" && p.model.name != "tiny-gemma4-moe") {
      v.push_back(p);
    }
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(Q8Kv, RefParity, ::testing::ValuesIn(q8_params()), param_name);

// Every model with all layers and the KV cache on the Vulkan device, to the
// same tolerances. Lavapipe (the CI device) runs kernels far slower than the
// CPU, so the set is chosen to cover each path once: every model's short case
// with an F32 paged cache (what the commands use); the long case (a 306-token
// prefill, chunks and sliding windows) for three architectures; contiguous
// and F16 caches on two models (paged == contiguous is one code path in the
// kernel); -ngl 1 (the last layer on the device, the first and the head on
// the CPU: activations cross twice per step) on three.
std::vector<Param> vulkan_params() {
  auto is = [](const Param& p, std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (p.model.name == n) return true;
    }
    return false;
  };
  std::vector<Param> v;
  for (Param p : params(DType::F32)) {
    p.vulkan = true;
    const bool paged_short = p.paged && p.kase == "short";
    const bool long_case = p.paged && p.kase == "long" &&
                           is(p, {"tiny-llama", "tiny-qwen3moe", "tiny-gemma3-swa2-softcap", "tiny-gemma4"});
    const bool contiguous = !p.paged && p.kase == "short" && is(p, {"tiny-llama", "tiny-gemma3"});
    if (paged_short || long_case || contiguous) v.push_back(p);
  }
  for (Param p : params(DType::F16)) {
    if (!p.paged || p.kase != "short" || !is(p, {"tiny-qwen3", "tiny-gemma3"})) continue;
    p.vulkan = true;
    v.push_back(p);
  }
  for (Param p : params(DType::F32)) {
    if (!p.paged || p.kase != "short" || !is(p, {"tiny-llama", "tiny-qwen3moe", "tiny-gemma3"})) {
      continue;
    }
    p.vulkan = true;
    p.ngl = 1;
    v.push_back(p);
  }
  return v;
}
INSTANTIATE_TEST_SUITE_P(Vulkan, RefParity, ::testing::ValuesIn(vulkan_params()), param_name);

}  // namespace
}  // namespace folio::model::testing
