// NEON mul_mat and mul_mat_id entry points: the weight type picks the tile
// spec (mul_mat_float.cc, mul_mat_quant.cc) and the shared driver
// (scalar/mul_mat_tiled.h) does the blocking, threading and, for
// mul_mat_id, the grouping of tokens by expert.
#include "backend/cpu/neon/kernels.h"

namespace folio::cpu {

namespace {

MatMulSpec spec_for(DType w, NeonDot dot) {
  return neon_quant_weight(w) ? quant_mul_mat_spec_neon(w, dot) : float_mul_mat_spec_neon(w);
}

}  // namespace

Status mul_mat_neon(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kWiden));
}

Status mul_mat_id_neon(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kWiden));
}

Status mul_mat_neon_dotprod(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kSdot));
}

Status mul_mat_id_neon_dotprod(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kSdot));
}

Status mul_mat_neon_i8mm(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kSmmla));
}

Status mul_mat_id_neon_i8mm(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, spec_for(op.src[0].dtype, NeonDot::kSmmla));
}

}  // namespace folio::cpu
