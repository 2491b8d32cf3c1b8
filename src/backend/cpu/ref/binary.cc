// Element-wise references: add / mul with src1 broadcast (src1.ne[i] divides
// src0.ne[i]: src1 is indexed modulo its own shape), and scale (x * s + b).
// One float operation per element for add / mul (the exact IEEE result, so
// any correct kernel matches bit for bit); scale is evaluated in double and
// rounded once. dst may alias src0 (in-place).
#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

template <typename F>
Status binary(const Op& op, F f) {
  const TensorView& a = op.src[0];  // [ne0, ne1, ne2, ne3]
  const TensorView& b = op.src[1];  // each dim divides a's
  const TensorView& d = op.dst;     // like a
  for (int64_t i3 = 0; i3 < a.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < a.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < a.ne[1]; ++i1) {
        const float* ar = a.row<const float>(i1, i2, i3);
        const float* br = b.row<const float>(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
        float* dr = d.row<float>(i1, i2, i3);
        for (int64_t i0 = 0; i0 < a.ne[0]; ++i0) dr[i0] = f(ar[i0], br[i0 % b.ne[0]]);
      }
    }
  }
  return Status();
}

}  // namespace

Status add(const Op& op, const KernelContext& /*ctx*/) {
  return binary(op, [](float x, float y) { return x + y; });
}

Status mul(const Op& op, const KernelContext& /*ctx*/) {
  return binary(op, [](float x, float y) { return x * y; });
}

Status scale(const Op& op, const KernelContext& /*ctx*/) {
  const auto& p = op.p<ScaleParams>();
  const TensorView& x = op.src[0];
  const TensorView& d = op.dst;
  for (int64_t r = 0; r < x.nrows(); ++r) {
    const float* xr = row_ptr<const float>(x, r);
    float* dr = row_ptr<float>(d, r);
    for (int64_t i = 0; i < x.ne[0]; ++i) {
      dr[i] = static_cast<float>(static_cast<double>(xr[i]) * p.scale + p.bias);
    }
  }
  return Status();
}

}  // namespace folio::ref
