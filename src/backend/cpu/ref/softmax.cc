// soft_max reference: per row (dim 0), v = x * scale + mask, then
// exp(v - max v) / sum, all in double, rounded once.
//
// x F32 [ne0, ne1, ne2, ne3]; optional mask F32 [ne0, ne1, m2, m3], row
// (i1, i2, i3) of x uses mask row (i1, i2 % m2, i3 % m3) (usually m2 = m3 =
// 1: one mask shared by every head / sequence). -inf mask entries give exact
// zeros; a row whose every value is -inf (nothing visible) gives all zeros
// rather than NaN. The row is read into scratch first: dst may alias x.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {

Status soft_max(const Op& op, const KernelContext& /*ctx*/) {
  const double scale = op.p<SoftMaxParams>().scale;
  const TensorView& x = op.src[0];
  const TensorView& mask = op.src[1];
  const TensorView& d = op.dst;
  if (!mask.empty() && (mask.ne[2] <= 0 || mask.ne[3] <= 0)) {
    return invalid_argument("soft_max: empty mask {}", mask.shape_string());
  }
  const int64_t ne0 = x.ne[0];
  std::vector<double> v(static_cast<size_t>(ne0));
  for (int64_t i3 = 0; i3 < x.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < x.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < x.ne[1]; ++i1) {
        const float* xr = x.row<const float>(i1, i2, i3);
        const float* mr =
            mask.empty() ? nullptr : mask.row<const float>(i1, i2 % mask.ne[2], i3 % mask.ne[3]);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < ne0; ++i) {
          v[i] = static_cast<double>(xr[i]) * scale + (mr ? static_cast<double>(mr[i]) : 0.0);
          mx = std::max(mx, v[i]);
        }
        float* dr = d.row<float>(i1, i2, i3);
        if (mx == -std::numeric_limits<double>::infinity()) {
          std::fill(dr, dr + ne0, 0.0f);
          continue;
        }
        double sum = 0.0;
        for (int64_t i = 0; i < ne0; ++i) {
          v[i] = std::exp(v[i] - mx);
          sum += v[i];
        }
        for (int64_t i = 0; i < ne0; ++i) dr[i] = static_cast<float>(v[i] / sum);
      }
    }
  }
  return Status();
}

}  // namespace folio::ref
