#include "backend/cpu/drivers/supports.h"

namespace folio::cpu {

namespace {

bool weight_row_ok(const TensorView& w, int64_t ne0) {
  return w.empty() || (w.dtype == DType::F32 && w.ne[0] == ne0);
}

}  // namespace

bool supports_unary_simd(const Op& op) {
  const UnaryKind k = op.p<UnaryParams>().kind;
  return k == UnaryKind::kSilu || k == UnaryKind::kGelu || k == UnaryKind::kSigmoid ||
         k == UnaryKind::kExp;
}

bool supports_glu_simd(const Op& op) {
  const GluKind k = op.p<GluParams>().kind;
  return (k == GluKind::kSwiGlu || k == GluKind::kGeGlu || k == GluKind::kSwiGluOai) &&
         (op.src[1].empty() || op.src[1].dtype == DType::F32);
}

bool supports_set_rows_simd(const Op& op) {
  const DType t = op.dst.dtype;
  return t == DType::F32 || t == DType::F16 || t == DType::Q8_0;
}

bool supports_rms_norm_simd(const Op& op) {
  return weight_row_ok(op.src[1], op.src[0].ne[0]);
}

bool supports_add_rms_norm_simd(const Op& op) {
  return op.dst.dtype == DType::F32 && op.dst2.dtype == DType::F32 &&
         weight_row_ok(op.src[2], op.src[0].ne[0]);
}

bool supports_soft_max_simd(const Op& op) {
  return op.dst.dtype == DType::F32;
}

bool supports_flash_attn_simd(const Op& op) {
  return op.src[1].dtype != DType::BF16 && op.src[2].dtype != DType::BF16;
}

}  // namespace folio::cpu
