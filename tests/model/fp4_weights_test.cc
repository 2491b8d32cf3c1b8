// Models whose FFN weights are MXFP4 or NVFP4 (gpt-oss stores its experts as
// MXFP4): the loader, the placement and the mul_mat / mul_mat_id paths on
// real forwards.
//
// The tiny reference models are F32, so each test quantizes their FFN
// matrices (ffn_gate / ffn_up / ffn_down, and the *_exps expert stacks of
// tiny-qwen3moe) with the reference quantizer (byte-exact with the gguf
// package for MXFP4 and with ggml for NVFP4: tests/quant/vectors) into an
// in-memory GGUF, and also writes those quantized values back as F32 (the
// "dequantized copy"). Then:
//   - placement: with the packed buffer types first in the list, MXFP4
//     matrices go to a packed buffer (MXFP4_X16, quant/repack.h) and NVFP4
//     ones, which have no packed layout, stay in the plain CPU buffer,
//     mapped (the placement names the GGUF dtype, the weight its layout);
//   - on the reference kernels the FP4 model's logits are bit-identical to
//     the dequantized copy's (the reference mul_mat dequantizes a row and
//     sums in double either way);
//   - the optimised kernels (activations quantized to Q8_0, integer dots)
//     stay within a small bound of those reference logits, and the logits
//     stay near the F32 model's (NMSE of the order of the weights' own
//     quantization error).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_buffer_types.h"
#include "quant/quant.h"
#include "quant/repack.h"
#include "test_util.h"

namespace folio::model::testing {
namespace fp4_weights_test {

std::unique_ptr<Model> load_copy(const std::string& path, DType to, bool dequantize_back,
                                 const LoadOptions& lo = {}) {
  Result<gguf::GgufFile> f = quantized_ffn_copy(path, to, dequantize_back);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  Result<std::unique_ptr<Model>> m = Model::from_gguf(std::move(f).value(), lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

struct Param {
  std::string path;
  DType type;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.path << " " << dtype_name(p.type);
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (const std::string& p : {shared_models_dir() + "/tiny-llama-f32.gguf",
                               local_refdata_dir() + "/tiny-qwen3moe-f32.gguf"}) {
    for (DType t : {DType::MXFP4, DType::NVFP4}) v.push_back({p, t});
  }
  return v;
}

// Logits of the layout prompt and four decode steps.
std::vector<std::vector<float>> run_logits(const Model& m, ForwardContext& ctx) {
  return prompt_and_decode_logits(m, ctx, layout_test_prompt(m.config().n_vocab));
}

float max_abs(const std::vector<std::vector<float>>& a) {
  float m = 0;
  for (const auto& r : a) {
    for (float v : r) m = std::max(m, std::fabs(v));
  }
  return m;
}

class Fp4Model : public ::testing::TestWithParam<Param> {};

TEST_P(Fp4Model, LoadsWithFfnWeightsPackedWhereALayoutExists) {
  const Param& p = GetParam();
  if (!file_exists(p.path)) FAIL() << "model missing: " << p.path;
  LoadOptions lo;
  lo.buffer_types = cpu_weight_buffer_types(Isa::kAmx);  // packed types first where available
  std::unique_ptr<Model> m = load_copy(p.path, p.type, false, lo);
  ASSERT_TRUE(m != nullptr);
  int fp4 = 0;
  for (const TensorPlacement& t : m->placements()) {
    if (t.dtype != p.type) continue;
    ++fp4;
    if (quant::packed_type_for(p.type).has_value()) {
      EXPECT_NE(t.type->name(), "CPU") << t.name;  // CPU_REPACK, or AMX where the CPU has it
      EXPECT_FALSE(t.mapped) << t.name;
    } else {
      EXPECT_EQ(t.type->name(), "CPU") << t.name;
      EXPECT_TRUE(t.mapped) << t.name;
    }
  }
  EXPECT_GE(fp4, 3 * static_cast<int>(m->config().n_layer))
      << "FFN matrices in " << dtype_name(p.type);
  for (const LayerWeights& l : m->weights().layers) {
    const DType down = l.ffn_down.data != nullptr ? l.ffn_down.dtype : l.ffn_down_exps.dtype;
    EXPECT_EQ(down, quant::packed_type_for(p.type).value_or(p.type));
  }
}

TEST_P(Fp4Model, ReferenceLogitsEqualTheDequantizedCopy) {
  const Param& p = GetParam();
  if (!file_exists(p.path)) FAIL() << "model missing: " << p.path;
  std::unique_ptr<Model> q = load_copy(p.path, p.type, false);
  std::unique_ptr<Model> f = load_copy(p.path, p.type, true);
  ASSERT_TRUE(q != nullptr && f != nullptr);
  CpuBackend ref_backend(CpuBackendOptions{Isa::kScalar, true, nullptr});
  ForwardContext ref_ctx({&ref_backend});
  const auto lq = run_logits(*q, ref_ctx), lf = run_logits(*f, ref_ctx);
  ASSERT_EQ(lq.size(), lf.size());
  for (size_t i = 0; i < lq.size(); ++i) {
    ASSERT_EQ(lq[i].size(), lf[i].size());
    EXPECT_EQ(0, std::memcmp(lq[i].data(), lf[i].data(), lq[i].size() * 4)) << "row " << i;
  }
}

TEST_P(Fp4Model, OptimisedLogitsCloseToReference) {
  const Param& p = GetParam();
  if (!file_exists(p.path)) FAIL() << "model missing: " << p.path;
  std::unique_ptr<Model> q = load_copy(p.path, p.type, false);
  std::unique_ptr<Model> original = load_copy(p.path, DType::F32, false);
  ASSERT_TRUE(q != nullptr && original != nullptr);
  CpuBackend ref_backend(CpuBackendOptions{Isa::kScalar, true, nullptr});
  ForwardContext ref_ctx({&ref_backend});
  auto ctx = ForwardContext::cpu(2);
  const auto ref = run_logits(*q, ref_ctx);
  const auto opt = run_logits(*q, *ctx);
  const auto f32 = run_logits(*original, *ctx);
  const float scale = max_abs(ref);
  // Q8_0 activations against the double-precision reference: measured
  // 0.7 - 0.9 % of the largest logit on these models.
  const float d = worst_row_diff(opt, ref);
  EXPECT_LE(d, 2e-2f * scale) << "optimised vs reference, max |logit| " << scale;
  // The quantized FFN moves the logits away from the F32 model's by about
  // what the weights' own quantization error suggests (weights NMSE: MXFP4
  // ~1.3e-2, NVFP4 ~9e-3 on gaussian rows): bounded by the logits' NMSE.
  double err = 0, norm = 0;
  for (size_t i = 0; i < opt.size() && i < f32.size(); ++i) {
    for (size_t j = 0; j < opt[i].size(); ++j) {
      err += (static_cast<double>(opt[i][j]) - f32[i][j]) * (opt[i][j] - f32[i][j]);
      norm += static_cast<double>(f32[i][j]) * f32[i][j];
    }
  }
  // Measured 1.0e-2 .. 1.75e-2 on these models.
  EXPECT_LE(err / norm, 3e-2) << "logits NMSE against the F32 model";
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = info.param.path.substr(info.param.path.find_last_of('/') + 1);
  return test_name(s.substr(0, s.find("-f32")) + "_" + dtype_name(info.param.type));
}

INSTANTIATE_TEST_SUITE_P(Tiny, Fp4Model, ::testing::ValuesIn(params()), param_name);

}  // namespace
}  // namespace folio::model::testing
