// Reference kernels (basic): registered here, implemented one file per op
// family (ref_util.h lists them). The `supports` functions only add the dtype
// checks validate_op leaves open for these kinds; everything else valid is
// accepted.
#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/ref_util.h"

namespace folio {
namespace {

bool f32_or_absent(const TensorView& t) {
  return t.empty() || t.dtype == DType::F32;
}

bool supports_add_rms_norm(const Op& op) {
  return op.dst.dtype == DType::F32 && op.dst2.dtype == DType::F32 && f32_or_absent(op.src[2]);
}

bool supports_rope(const Op& op) {
  return op.dst.dtype == DType::F32 && f32_or_absent(op.src[2]);
}

bool supports_soft_max(const Op& op) {
  return op.dst.dtype == DType::F32;
}

bool supports_glu(const Op& op) {
  return f32_or_absent(op.src[1]);
}

}  // namespace

void register_ref_kernels_basic(KernelTable& t) {
  const KernelTier kRef = KernelTier::kRef;
  t.add({OpKind::kGetRows, kRef, "get_rows.ref", nullptr, ref::get_rows});
  t.add({OpKind::kMulMat, kRef, "mul_mat.ref", nullptr, ref::mul_mat});
  t.add({OpKind::kMulMatId, kRef, "mul_mat_id.ref", nullptr, ref::mul_mat_id});
  t.add({OpKind::kAdd, kRef, "add.ref", nullptr, ref::add});
  t.add({OpKind::kMul, kRef, "mul.ref", nullptr, ref::mul});
  t.add({OpKind::kScale, kRef, "scale.ref", nullptr, ref::scale});
  t.add({OpKind::kCpy, kRef, "cpy.ref", nullptr, ref::cpy});
  t.add({OpKind::kRmsNorm, kRef, "rms_norm.ref", nullptr, ref::rms_norm});
  t.add({OpKind::kAddRmsNorm, kRef, "add_rms_norm.ref", supports_add_rms_norm, ref::add_rms_norm});
  t.add({OpKind::kL2Norm, kRef, "l2_norm.ref", nullptr, ref::l2_norm});
  t.add({OpKind::kNorm, kRef, "norm.ref", nullptr, ref::norm});
  t.add({OpKind::kRope, kRef, "rope.ref", supports_rope, ref::rope});
  t.add({OpKind::kSoftMax, kRef, "soft_max.ref", supports_soft_max, ref::soft_max});
  t.add({OpKind::kUnary, kRef, "unary.ref", nullptr, ref::unary});
  t.add({OpKind::kGlu, kRef, "glu.ref", supports_glu, ref::glu});
  t.add({OpKind::kTopK, kRef, "top_k.ref", nullptr, ref::top_k});
  t.add({OpKind::kArgsort, kRef, "argsort.ref", nullptr, ref::argsort});
  t.add({OpKind::kMoeRoute, kRef, "moe_route.ref", nullptr, ref::moe_route});
}

}  // namespace folio
