// AVX2 mul_mat and mul_mat_id entry points: the weight type picks the
// tile spec (mul_mat_float.cc, mul_mat_quant.cc) and the shared driver
// (scalar/mul_mat_tiled.h) does the blocking, threading and, for mul_mat_id,
// the grouping of tokens by expert.
#include "backend/cpu/avx2/kernels.h"

namespace folio::cpu {

namespace {

MatMulSpec spec_for(DType w, int64_t m) {
  const bool is_float = w == DType::F32 || w == DType::F16 || w == DType::BF16;
  return is_float ? float_mul_mat_spec_avx2(w, m) : quant_mul_mat_spec_avx2(w);
}

}  // namespace

Status mul_mat_avx2(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, spec_for(op.src[0].dtype, op.src[1].ne[1]));
}

Status mul_mat_id_avx2(const Op& op, const KernelContext& ctx) {
  // Few tokens meet each expert (and how many varies): the plain tile.
  return mul_mat_id_tiled(op, ctx, spec_for(op.src[0].dtype, 1));
}

}  // namespace folio::cpu
