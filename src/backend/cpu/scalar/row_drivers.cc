#include "backend/cpu/scalar/row_drivers.h"

#include <cmath>

#include "backend/cpu/scalar/parallel.h"

namespace folio::cpu {

namespace {

template <typename T>
T* flat_row(const TensorView& t, int64_t r) {
  return t.row<T>(r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2]));
}

float inverse_rms(float sum_sq, int64_t n, float eps) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_sq) / static_cast<double>(n) +
                                            static_cast<double>(eps)));
}

}  // namespace

Status rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& x = op.src[0];  // [ne0, rows...]
  const float* w =
      op.src[1].empty() ? nullptr : static_cast<const float*>(op.src[1].data);  // [ne0]
  const int64_t n = x.ne[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = flat_row<const float>(x, r);
      fns.scale_row(xr, inverse_rms(fns.sum_squares(xr, nullptr, nullptr, n), n, eps), w,
                    flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

Status add_rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& a = op.src[0];  // [ne0, rows...]
  const TensorView& b = op.src[1];  // like a
  const float* w =
      op.src[2].empty() ? nullptr : static_cast<const float*>(op.src[2].data);  // [ne0]
  const int64_t n = a.ne[0];
  run_range(ctx, a.nrows(), a.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* s = flat_row<float>(op.dst2, r);
      const float sum =
          fns.sum_squares(flat_row<const float>(a, r), flat_row<const float>(b, r), s, n);
      fns.scale_row(s, inverse_rms(sum, n, eps), w, flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

Status soft_max_rows(const Op& op, const KernelContext& ctx, SoftmaxRowFn row) {
  const float scale = op.p<SoftMaxParams>().scale;
  const TensorView& x = op.src[0];     // [ne0, ne1, ne2, ne3]
  const TensorView& mask = op.src[1];  // optional [ne0, ne1, m2, m3]
  const int64_t ne1 = x.ne[1], ne2 = x.ne[2];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElementsExp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
      const float* mr =
          mask.empty() ? nullptr : mask.row<const float>(i1, i2 % mask.ne[2], i3 % mask.ne[3]);
      row(x.row<const float>(i1, i2, i3), mr, scale, op.dst.row<float>(i1, i2, i3), x.ne[0]);
    }
  });
  return Status();
}

}  // namespace folio::cpu
