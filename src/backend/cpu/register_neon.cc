// NEON kernels (64-bit ARM): registered here, implemented one file per op
// family under neon/. Three tiers: neon (ARMv8 Advanced SIMD), neon_dotprod
// (+ SDOT) and neon_i8mm (+ SMMLA: a full 2 x 2 tile's four byte dot
// products at once), which differ only in the byte dot products of the
// quantized mul_mat tiles (same results); every other kernel is the neon
// tier's and serves all three. Q2_K, Q3_K and IQ4_XS weights meet F32
// activations through a dequantizing tile ("mul_mat.float.neon"); ops
// without a NEON kernel run on the portable tier or the reference.
#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/drivers/ssm_conv_driver.h"
#include "backend/cpu/drivers/supports.h"
#include "backend/cpu/simd/f32x16_neon.h"
#include "backend/cpu/simd/kernels.h"
#include "backend/cpu/simd/recurrent_kernels.h"

namespace folio {

namespace {

bool neon_float_weight(const Op& op) {
  const DType w = op.src[0].dtype;
  return w == DType::F32 || w == DType::F16 || w == DType::BF16 || w == DType::Q2_K ||
         w == DType::Q3_K || w == DType::IQ4_XS;
}

bool neon_quant_weight_op(const Op& op) {
  return cpu::neon_quant_weight(op.src[0].dtype);
}

}  // namespace

void register_neon_kernels(KernelTable& t) {
  using namespace cpu;
  constexpr KernelTier kNeon = KernelTier::kNeon;
  constexpr KernelTier kDot = KernelTier::kNeonDotprod;
  t.add({OpKind::kMulMat, kNeon, "mul_mat.float.neon", neon_float_weight, mul_mat_neon});
  t.add({OpKind::kMulMatId, kNeon, "mul_mat_id.float.neon", neon_float_weight, mul_mat_id_neon});
  t.add({OpKind::kMulMat, kNeon, "mul_mat.quant.neon", neon_quant_weight_op, mul_mat_neon});
  t.add({OpKind::kMulMatId, kNeon, "mul_mat_id.quant.neon", neon_quant_weight_op,
         mul_mat_id_neon});
  t.add({OpKind::kMulMat, kDot, "mul_mat.quant.neon_dotprod", neon_quant_weight_op,
         mul_mat_neon_dotprod});
  t.add({OpKind::kMulMatId, kDot, "mul_mat_id.quant.neon_dotprod", neon_quant_weight_op,
         mul_mat_id_neon_dotprod});
  constexpr KernelTier kMmla = KernelTier::kNeonI8mm;
  t.add({OpKind::kMulMat, kMmla, "mul_mat.quant.neon_i8mm", neon_quant_weight_op,
         mul_mat_neon_i8mm});
  t.add({OpKind::kMulMatId, kMmla, "mul_mat_id.quant.neon_i8mm", neon_quant_weight_op,
         mul_mat_id_neon_i8mm});
  simd::register_simd_kernels<simd::Neon>(t);  // simd/kernels.h
  simd::register_simd_recurrent_kernels<simd::Neon>(t);  // simd/recurrent_kernels.h
}

}  // namespace folio
