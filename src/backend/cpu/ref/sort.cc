// top_k / argsort references over each row (dim 0) of an F32 tensor, output
// I32 indices. Both are stable sorts of the indices 0..n-1: equal values keep
// ascending index order (ties go to the lower index, also when descending).
// NaN orders below every number (below -inf), so top_k never prefers a NaN
// to a number and the comparison stays a strict weak order.
//   top_k:   the first k indices of the descending order (largest first)
//   argsort: all n indices, ascending or descending
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {
namespace {

// a < b with NaN below everything (NaN == NaN).
bool less_nan_low(float a, float b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a < b;
}

// Sorted indices of row r of x.
void sorted_indices(const TensorView& x, int64_t r, bool descending, std::vector<int32_t>* idx) {
  const float* v = row_ptr<const float>(x, r);
  idx->resize(static_cast<size_t>(x.ne[0]));
  std::iota(idx->begin(), idx->end(), 0);
  if (descending) {
    std::stable_sort(idx->begin(), idx->end(),
                     [v](int32_t a, int32_t b) { return less_nan_low(v[b], v[a]); });
  } else {
    std::stable_sort(idx->begin(), idx->end(),
                     [v](int32_t a, int32_t b) { return less_nan_low(v[a], v[b]); });
  }
}

}  // namespace

Status top_k(const Op& op, const KernelContext& /*ctx*/) {
  const int k = op.p<TopKParams>().k;
  const TensorView& x = op.src[0];
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < x.nrows(); ++r) {
    sorted_indices(x, r, /*descending=*/true, &idx);
    std::copy(idx.begin(), idx.begin() + k, row_ptr<int32_t>(op.dst, r));
  }
  return Status();
}

Status argsort(const Op& op, const KernelContext& /*ctx*/) {
  const bool descending = op.p<ArgsortParams>().descending;
  const TensorView& x = op.src[0];
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < x.nrows(); ++r) {
    sorted_indices(x, r, descending, &idx);
    std::copy(idx.begin(), idx.end(), row_ptr<int32_t>(op.dst, r));
  }
  return Status();
}

}  // namespace folio::ref
