// AVX2 + FMA + F16C kernels: registered here, implemented one file per op
// family under avx2/. This file is compiled with baseline flags and only
// takes function addresses; `supports` accepts exactly what each kernel
// handles (the validated op's dtypes and variants).
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/drivers/ssm_conv_driver.h"
#include "backend/cpu/drivers/supports.h"
#include "backend/cpu/simd/f32x16_avx2.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/recurrent_kernels.h"

namespace folio {

void register_avx2_kernels(KernelTable& t) {
  using namespace cpu;
  constexpr KernelTier kTier = KernelTier::kAvx2;
  // mul_mat / mul_mat_id: one entry per weight type (its own name, so the
  // parity harness and perf mode list them apart), one run function.
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } weights[] = {
      {"mul_mat.f32.avx2", "mul_mat_id.f32.avx2", mul_mat_weight_is<DType::F32>},
      {"mul_mat.f16.avx2", "mul_mat_id.f16.avx2", mul_mat_weight_is<DType::F16>},
      {"mul_mat.bf16.avx2", "mul_mat_id.bf16.avx2", mul_mat_weight_is<DType::BF16>},
      {"mul_mat.q8_0.avx2", "mul_mat_id.q8_0.avx2", mul_mat_weight_is<DType::Q8_0>},
      {"mul_mat.q4_0.avx2", "mul_mat_id.q4_0.avx2", mul_mat_weight_is<DType::Q4_0>},
      {"mul_mat.q4_K.avx2", "mul_mat_id.q4_K.avx2", mul_mat_weight_is<DType::Q4_K>},
      {"mul_mat.q6_K.avx2", "mul_mat_id.q6_K.avx2", mul_mat_weight_is<DType::Q6_K>},
      {"mul_mat.q4_1.avx2", "mul_mat_id.q4_1.avx2", mul_mat_weight_is<DType::Q4_1>},
      {"mul_mat.q5_0.avx2", "mul_mat_id.q5_0.avx2", mul_mat_weight_is<DType::Q5_0>},
      {"mul_mat.q5_1.avx2", "mul_mat_id.q5_1.avx2", mul_mat_weight_is<DType::Q5_1>},
      {"mul_mat.iq4_nl.avx2", "mul_mat_id.iq4_nl.avx2", mul_mat_weight_is<DType::IQ4_NL>},
      {"mul_mat.q2_K.avx2", "mul_mat_id.q2_K.avx2", mul_mat_weight_is<DType::Q2_K>},
      {"mul_mat.q3_K.avx2", "mul_mat_id.q3_K.avx2", mul_mat_weight_is<DType::Q3_K>},
      {"mul_mat.q5_K.avx2", "mul_mat_id.q5_K.avx2", mul_mat_weight_is<DType::Q5_K>},
      {"mul_mat.iq4_xs.avx2", "mul_mat_id.iq4_xs.avx2", mul_mat_weight_is<DType::IQ4_XS>},
      {"mul_mat.mxfp4.avx2", "mul_mat_id.mxfp4.avx2", mul_mat_weight_is<DType::MXFP4>},
      {"mul_mat.nvfp4.avx2", "mul_mat_id.nvfp4.avx2", mul_mat_weight_is<DType::NVFP4>},
  };
  for (const auto& w : weights) {
    t.add({OpKind::kMulMat, kTier, w.mul_mat, w.supports, mul_mat_avx2});
    t.add({OpKind::kMulMatId, kTier, w.mul_mat_id, w.supports, mul_mat_id_avx2});
  }
  simd::register_simd_kernels<simd::Avx2>(t);  // simd/kernels.h
  simd::register_simd_recurrent_kernels<simd::Avx2>(t);  // simd/recurrent_kernels.h
}

}  // namespace folio
