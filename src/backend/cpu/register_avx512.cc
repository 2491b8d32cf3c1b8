// AVX-512 kernels: registered here, implemented one file per op family under
// avx512/. This file is compiled with baseline flags and only takes function
// addresses; `supports` accepts exactly what each kernel handles (the
// validated op's dtypes and variants; the integer dot kernels also need
// AVX512_VNNI, and without it the AVX2 kernels take over).
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/recurrent_kernels.h"
#include "backend/cpu/drivers/supports.h"
#include "backend/cpu/simd/f32x16_avx512.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/recurrent_kernels.h"
#include "core/cpu_features.h"

namespace folio {

namespace {

template <DType T>
bool weight_is_with_vnni(const Op& op) {
  return op.src[0].dtype == T && cpu_features().avx512vnni;
}

}  // namespace

void register_avx512_kernels(KernelTable& t) {
  using namespace cpu;
  constexpr KernelTier kTier = KernelTier::kAvx512;
  // mul_mat / mul_mat_id: one entry per weight type (its own name, so the
  // parity harness and perf mode list them apart), one run function.
  const struct {
    const char* mul_mat;
    const char* mul_mat_id;
    KernelSupportsFn supports;
  } weights[] = {
      {"mul_mat.f32.avx512", "mul_mat_id.f32.avx512", mul_mat_weight_is<DType::F32>},
      {"mul_mat.f16.avx512", "mul_mat_id.f16.avx512", mul_mat_weight_is<DType::F16>},
      {"mul_mat.bf16.avx512", "mul_mat_id.bf16.avx512", mul_mat_weight_is<DType::BF16>},
      {"mul_mat.q8_0.avx512", "mul_mat_id.q8_0.avx512", weight_is_with_vnni<DType::Q8_0>},
      {"mul_mat.q4_0.avx512", "mul_mat_id.q4_0.avx512", weight_is_with_vnni<DType::Q4_0>},
      {"mul_mat.q4_K.avx512", "mul_mat_id.q4_K.avx512", weight_is_with_vnni<DType::Q4_K>},
      {"mul_mat.q6_K.avx512", "mul_mat_id.q6_K.avx512", weight_is_with_vnni<DType::Q6_K>},
      {"mul_mat.q4_1.avx512", "mul_mat_id.q4_1.avx512", weight_is_with_vnni<DType::Q4_1>},
      {"mul_mat.q5_0.avx512", "mul_mat_id.q5_0.avx512", weight_is_with_vnni<DType::Q5_0>},
      {"mul_mat.q5_1.avx512", "mul_mat_id.q5_1.avx512", weight_is_with_vnni<DType::Q5_1>},
      {"mul_mat.iq4_nl.avx512", "mul_mat_id.iq4_nl.avx512", weight_is_with_vnni<DType::IQ4_NL>},
      {"mul_mat.q2_K.avx512", "mul_mat_id.q2_K.avx512", weight_is_with_vnni<DType::Q2_K>},
      {"mul_mat.q3_K.avx512", "mul_mat_id.q3_K.avx512", weight_is_with_vnni<DType::Q3_K>},
      {"mul_mat.q5_K.avx512", "mul_mat_id.q5_K.avx512", weight_is_with_vnni<DType::Q5_K>},
      {"mul_mat.iq4_xs.avx512", "mul_mat_id.iq4_xs.avx512", weight_is_with_vnni<DType::IQ4_XS>},
      // MXFP4 / NVFP4 have no tile at this tier: the AVX2 ones serve it.
  };
  for (const auto& w : weights) {
    t.add({OpKind::kMulMat, kTier, w.mul_mat, w.supports, mul_mat_avx512});
    t.add({OpKind::kMulMatId, kTier, w.mul_mat_id, w.supports, mul_mat_id_avx512});
  }
  simd::register_simd_kernels<simd::Avx512>(t);  // simd/kernels.h
  t.add({OpKind::kSsmConv, kTier, "ssm_conv.avx512", supports_ssm_conv_avx512, ssm_conv_avx512});
  t.add({OpKind::kSsmConvUpdate, kTier, "ssm_conv_update.avx512", supports_ssm_conv_update_avx512,
         ssm_conv_update_avx512});
  simd::register_simd_recurrent_kernels<simd::Avx512>(t);  // simd/recurrent_kernels.h
}

}  // namespace folio
