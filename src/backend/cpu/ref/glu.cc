// Gated linear unit reference: dst = act(gate) * up, act = silu (swiglu),
// gelu tanh-approximation (geglu) or gelu erf (geglu_erf), computed in double
// and rounded once. swiglu_oai clamps first (in float, exact), then
// g / (1 + e^(-alpha g)) * (u + 1) in double, rounded once.
//   two tensors: gate = src0, up = src1 (same shape as dst); `swapped` is
//                ignored (it only names the half order of the fused form).
//   one tensor:  src0 [2n, rows...]: gate = first half of each row, up =
//                second half; swapped: up first, gate second. dst [n, rows...];
//                row r of dst pairs with row r of src0 (flat row order).
#include <algorithm>
#include <cmath>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

UnaryKind act_of(GluKind k) {
  switch (k) {
    case GluKind::kSwiGlu:
      return UnaryKind::kSilu;
    case GluKind::kGeGlu:
      return UnaryKind::kGelu;
    case GluKind::kGeGluErf:
      return UnaryKind::kGeluErf;
    case GluKind::kSwiGluOai:
      break;  // its own formula (swiglu_oai below)
  }
  return UnaryKind::kSilu;
}

double swiglu_oai(float gate, float up, float alpha, float limit) {
  const double g = std::min(gate, limit);
  const double u = std::clamp(up, -limit, limit);
  return g / (1.0 + std::exp(-static_cast<double>(alpha) * g)) * (u + 1.0);
}

}  // namespace

Status glu(const Op& op, const KernelContext& /*ctx*/) {
  const auto& p = op.p<GluParams>();
  const UnaryKind act = act_of(p.kind);
  const TensorView& s0 = op.src[0];
  const TensorView& s1 = op.src[1];
  const TensorView& d = op.dst;  // [n, rows...]
  const int64_t n = d.ne[0];
  for (int64_t r = 0; r < d.nrows(); ++r) {
    const float* gate;
    const float* up;
    if (!s1.empty()) {
      gate = row_ptr<const float>(s0, r);
      up = row_ptr<const float>(s1, r);
    } else {
      const float* row = row_ptr<const float>(s0, r);
      gate = p.swapped ? row + n : row;
      up = p.swapped ? row : row + n;
    }
    float* dr = row_ptr<float>(d, r);
    if (p.kind == GluKind::kSwiGluOai) {
      for (int64_t i = 0; i < n; ++i) {
        dr[i] = static_cast<float>(swiglu_oai(gate[i], up[i], p.alpha, p.limit));
      }
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      dr[i] = static_cast<float>(unary_value(act, gate[i]) * static_cast<double>(up[i]));
    }
  }
  return Status();
}

}  // namespace folio::ref
