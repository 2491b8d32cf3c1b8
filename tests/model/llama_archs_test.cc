// Files written by llama.cpp's own model saver (its test-llama-archs, through
// scripts/gen_llama_archs.py: tests/model/refdata/llama-archs/), one per
// architecture folio runs and llama.cpp's saver writes (dense and MoE
// variants where it writes both), with llama.cpp's logits on them. These
// files carry the hyperparameter values llama.cpp itself produces, not the
// ones converters write: expert_gating_func on families whose graph fixes
// the gating, head_count 0 on recurrent layers, expert_weights_scale 0,
// rope sections on models that use plain rope, no tokenizer (less the
// tensors folio refuses, and with F16 matrices: tests/model/refdata/README.md).
// Each file loads, prefills its 20-token prompt (logits of every position vs
// NAME.prefill.npy) and decodes llama.cpp's 12 greedy tokens one at a time
// (each the argmax of folio's previous logits, each row vs NAME.decode.npy):
// F32 K/V, max |Δlogit| <= 1e-3 of the largest reference logit, on the
// contiguous and the paged cache; on the Vulkan device too (paged); and
// with the weights placed as the CLI places them (the CPU's packed buffer
// types, and on AMX-BF16 CPUs the F16 matrices as F16_X16 on the amx tier's
// F16 kernels, the default unless FOLIO_AMX_F16=0), contiguous cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_buffer_types.h"
#include "cache/kv_cache.h"
#include "llamacpp_parity.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace llama_archs_test {

// Every file the generator wrote (gemma3, gemma4, bert and nomic-bert:
// llama.cpp's test-llama-archs writes none; see tests/model/refdata/README.md).
// ernie4_5-moe is the dense ernie4_5 (the saver writes it only as a "MoE"
// file, whose expert keys the family ignores); ernie4_5-moe-moe the MoE one.
// falcon-h1-dense-no-ssm-norm is falcon-h1-dense without its optional
// ssm_norm tensors (the Mamba-2 mixers then skip their grouped norm).
constexpr const char* kFiles[] = {
    "llama-dense",         "llama-moe",        "qwen2-dense",
    "qwen3-dense",         "qwen3moe-moe",     "qwen3next-moe",
    "qwen35-dense",        "qwen35moe-moe",    "gpt-oss-moe",
    "granitehybrid-dense", "phi3-dense",       "mistral3-dense",
    "mistral3-moe",        "glm4moe-moe",      "lfm2-dense",
    "lfm2moe-moe",         "nemotron_h-dense", "nemotron_h_moe-dense",
    "gemma2-dense",        "smollm3-dense",    "qwen2moe-moe",
    "seed_oss-dense",      "exaone4-dense",    "deepseek2-moe",
    "hunyuan-dense-dense", "ernie4_5-moe",     "ernie4_5-moe-moe",
    "qwen3vl-dense",       "minimax-m2-moe",   "falcon-h1-dense",
    "falcon-h1-dense-no-ssm-norm",
};

std::string dir() {
  return local_refdata_dir() + "/llama-archs";
}

struct Param {
  std::string name;
  bool paged = false;
  bool vulkan = false;
  bool packed = false;  // weights through cpu_weight_buffer_types (repacked)
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = info.param.name + (info.param.paged ? "_paged" : "_contiguous") +
                  (info.param.vulkan ? "_vulkan" : "") + (info.param.packed ? "_packed" : "");
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

std::vector<Param> cpu_params() {
  std::vector<Param> v;
  for (const char* n : kFiles) {
    for (bool paged : {false, true}) v.push_back({n, paged, false});
    v.push_back({n, false, false, true});
  }
  return v;
}

std::vector<Param> vulkan_params() {
  std::vector<Param> v;
  for (const char* n : kFiles) {
    v.push_back({n, true, true});
  }
  return v;
}

// The largest |logit| of the reference's prefill rows (the tolerance's scale).
float largest_logit(const std::string& base) {
  Result<NpyF32> ref = read_npy(base + ".prefill.npy");
  if (!ref.ok()) return 0.0f;
  float m = 0.0f;
  for (int64_t r = 0; r < ref->rows(); ++r) {
    for (int64_t c = 0; c < ref->cols(); ++c) m = std::max(m, std::fabs(ref->row(r)[c]));
  }
  return m;
}

class LlamaArchs : public ::testing::TestWithParam<Param> {};

TEST_P(LlamaArchs, LoadsAndMatchesLlamaCpp) {
  const Param& p = GetParam();
  const std::string base = dir() + "/" + p.name;
  for (const std::string& f :
       {base + ".gguf", base + ".prompt_tokens.txt", base + ".gen_tokens.txt",
        base + ".prefill.npy", base + ".decode.npy"}) {
    if (!file_exists(f)) FAIL() << "reference file missing: " << f;
  }
  Backend* device = nullptr;
  if (p.vulkan) {
    FOLIO_VULKAN_OR_SKIP(vk);
    device = vk;
  }
  LoadOptions lo;
  if (device != nullptr) lo.offload_type = &device->default_buffer_type();
  // Packed: as the CLI places weights by default, with F16 on the AMX-BF16
  // tiles where the machine runs them (whatever FOLIO_AMX_F16 says here).
  if (p.packed) {
    lo.buffer_types = cpu_weight_buffer_types(active_isa(), true);
    if (lo.buffer_types.front() == &amx_buffer_type()) lo.buffer_types.front() = &amx_f16_buffer_type();
  }
  Result<std::unique_ptr<Model>> model = Model::load(base + ".gguf", lo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;

  Result<std::unique_ptr<cache::KvCache>> cache =
      m.make_cache(cache_options(DType::F32, 128, 1, p.paged, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();

  const float scale = largest_logit(base);
  ASSERT_GT(scale, 0.0f) << base;
  const float tol = 1e-3f * scale;
  auto ctx = ForwardContext::with_device(device, 2);
  expect_llamacpp_parity(m, **cache, *ctx, base, {tol, tol},
                         p.name + (p.paged ? " paged" : " contiguous") +
                             (p.vulkan ? " vulkan" : "") + (p.packed ? " packed" : "") +
                             " (tolerance " + std::to_string(tol) +
                             ")");
}

INSTANTIATE_TEST_SUITE_P(Cpu, LlamaArchs, ::testing::ValuesIn(cpu_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Vulkan, LlamaArchs, ::testing::ValuesIn(vulkan_params()), param_name);

}  // namespace llama_archs_test
}  // namespace folio::model::testing
