// Normalisation references, one row (dim 0) at a time, sums in double:
//   rms_norm:     y = x / sqrt(mean(x^2) + eps) [* w]
//   add_rms_norm: s = float(a + b) -> dst2; y = rms_norm(s) [* w] -> dst.
//                 The norm reads the rounded sum, exactly what dst2 holds, so
//                 the fused op equals add followed by rms_norm.
//   l2_norm:      y = x / max(sqrt(sum(x^2)), eps)
//   norm:         y = (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* w] [+ b]
//                 (layer norm; the mean is subtracted in double, so the
//                 variance is the two-pass one)
// Each output element is computed in double and rounded once. Rows are read
// into a scratch row before anything is written, so dst / dst2 may alias the
// inputs (in-place residual update).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

double sum_squares(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += static_cast<double>(x) * x;
  return s;
}

// y[i] = v[i] * inv [* w[i]], w an optional F32 view of ne0 elements.
void write_scaled(const std::vector<float>& v, double inv, const TensorView& w, float* y) {
  for (size_t i = 0; i < v.size(); ++i) {
    double r = static_cast<double>(v[i]) * inv;
    if (!w.empty()) r *= elem<float>(w, static_cast<int64_t>(i));
    y[i] = static_cast<float>(r);
  }
}

}  // namespace

Status rms_norm(const Op& op, const KernelContext& /*ctx*/) {
  const double eps = op.p<RmsNormParams>().eps;
  const TensorView& x = op.src[0];  // [ne0, rows...]
  const TensorView& w = op.src[1];  // optional F32 [ne0]
  const int64_t ne0 = x.ne[0];
  std::vector<float> v(static_cast<size_t>(ne0));
  for (int64_t r = 0; r < x.nrows(); ++r) {
    const float* xr = row_ptr<const float>(x, r);
    v.assign(xr, xr + ne0);
    const double inv = 1.0 / std::sqrt(sum_squares(v) / static_cast<double>(ne0) + eps);
    write_scaled(v, inv, w, row_ptr<float>(op.dst, r));
  }
  return Status();
}

Status add_rms_norm(const Op& op, const KernelContext& /*ctx*/) {
  const double eps = op.p<RmsNormParams>().eps;
  const TensorView& a = op.src[0];  // [ne0, rows...]
  const TensorView& b = op.src[1];  // like a
  const TensorView& w = op.src[2];  // optional F32 [ne0]
  const int64_t ne0 = a.ne[0];
  std::vector<float> v(static_cast<size_t>(ne0));
  for (int64_t r = 0; r < a.nrows(); ++r) {
    const float* ar = row_ptr<const float>(a, r);
    const float* br = row_ptr<const float>(b, r);
    for (int64_t i = 0; i < ne0; ++i) v[i] = ar[i] + br[i];
    float* sr = row_ptr<float>(op.dst2, r);
    std::copy(v.begin(), v.end(), sr);
    const double inv = 1.0 / std::sqrt(sum_squares(v) / static_cast<double>(ne0) + eps);
    write_scaled(v, inv, w, row_ptr<float>(op.dst, r));
  }
  return Status();
}

Status l2_norm(const Op& op, const KernelContext& /*ctx*/) {
  const double eps = op.p<NormParams>().eps;
  const TensorView& x = op.src[0];
  const int64_t ne0 = x.ne[0];
  std::vector<float> v(static_cast<size_t>(ne0));
  for (int64_t r = 0; r < x.nrows(); ++r) {
    const float* xr = row_ptr<const float>(x, r);
    v.assign(xr, xr + ne0);
    const double inv = 1.0 / std::max(std::sqrt(sum_squares(v)), eps);
    write_scaled(v, inv, TensorView{}, row_ptr<float>(op.dst, r));
  }
  return Status();
}

Status norm(const Op& op, const KernelContext& /*ctx*/) {
  const double eps = op.p<NormParams>().eps;
  const TensorView& x = op.src[0];  // [ne0, rows...]
  const TensorView& w = op.src[1];  // optional F32 [ne0]
  const TensorView& b = op.src[2];  // optional F32 [ne0]
  const int64_t ne0 = x.ne[0];
  std::vector<double> v(static_cast<size_t>(ne0));
  for (int64_t r = 0; r < x.nrows(); ++r) {
    const float* xr = row_ptr<const float>(x, r);
    double mean = 0.0;
    for (int64_t i = 0; i < ne0; ++i) mean += xr[i];
    mean /= static_cast<double>(ne0);
    double var = 0.0;
    for (int64_t i = 0; i < ne0; ++i) {
      v[static_cast<size_t>(i)] = xr[i] - mean;
      var += v[static_cast<size_t>(i)] * v[static_cast<size_t>(i)];
    }
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(ne0) + eps);
    float* y = row_ptr<float>(op.dst, r);  // may alias x: x was read above
    for (int64_t i = 0; i < ne0; ++i) {
      double o = v[static_cast<size_t>(i)] * inv;
      if (!w.empty()) o *= elem<float>(w, i);
      if (!b.empty()) o += elem<float>(b, i);
      y[i] = static_cast<float>(o);
    }
  }
  return Status();
}

}  // namespace folio::ref
