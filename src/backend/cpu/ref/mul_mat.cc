// mul_mat / mul_mat_id reference: dequantize one weight row to f32 with the
// reference dequantizer, then accumulate each dot product in double (every
// product of two floats is exact in double) and round once to float. This is
// the precision ceiling optimised kernels are measured against; they may
// legitimately round activations (f16, bf16, q8) and accumulate in float.
//
// mul_mat:    W [K, N, B2w, B3w] (any dtype), X F32 [K, M, B2, B3],
//             dst F32 [N, M, B2, B3]; batch (b2, b3) uses weight batch
//             (b2 / (B2 / B2w), b3 / (B3 / B3w)).
// mul_mat_id: W [K, N, E], X F32 [K, X1, T], ids I32 [n_used, T],
//             dst F32 [N, n_used, T]; dst[:, u, t] = W_e^T X[:, u % X1, t]
//             with e = ids[u, t], range-checked before anything is written.
#include <vector>

#include "backend/cpu/ref/ref_util.h"
#include "quant/quant.h"

namespace folio::ref {
namespace {

double dot(const float* w, const float* x, int64_t k) {
  double acc = 0.0;
  for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(w[i]) * static_cast<double>(x[i]);
  return acc;
}

}  // namespace

Status mul_mat(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w]
  const TensorView& x = op.src[1];  // [K, M, B2, B3]
  const TensorView& d = op.dst;     // [N, M, B2, B3]
  const int64_t k = w.ne[0], n = w.ne[1], m = x.ne[1];
  const int64_t r2 = x.ne[2] / w.ne[2], r3 = x.ne[3] / w.ne[3];  // broadcast ratios
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t b3 = 0; b3 < x.ne[3]; ++b3) {
    for (int64_t b2 = 0; b2 < x.ne[2]; ++b2) {
      for (int64_t in = 0; in < n; ++in) {
        quant::dequantize_row_ref(w.dtype, w.row(in, b2 / r2, b3 / r3), wrow.data(), k);
        for (int64_t im = 0; im < m; ++im) {
          d.row<float>(im, b2, b3)[in] =
              static_cast<float>(dot(wrow.data(), x.row<const float>(im, b2, b3), k));
        }
      }
    }
  }
  return Status();
}

Status mul_mat_id(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];    // [K, N, E]
  const TensorView& x = op.src[1];    // [K, X1, T]
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  const TensorView& d = op.dst;       // [N, n_used, T]
  if (w.ne[3] != 1 || x.ne[3] != 1 || ids.ne[2] != 1 || ids.ne[3] != 1 || d.ne[3] != 1) {
    return invalid_argument("mul_mat_id: experts, input, ids and dst must be at most 3-D: {}",
                            op.describe());
  }
  const int64_t k = w.ne[0], n = w.ne[1], n_exp = w.ne[2];
  const int64_t n_used = ids.ne[0], n_tok = ids.ne[1], x1 = x.ne[1];
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      if (e < 0 || e >= n_exp) {
        return out_of_range("mul_mat_id: expert id {} at ids[{}, {}] out of range [0, {})", e, u, t,
                            n_exp);
      }
    }
  }
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      const float* xr = x.row<const float>(u % x1, t);
      float* dr = d.row<float>(u, t);
      for (int64_t in = 0; in < n; ++in) {
        quant::dequantize_row_ref(w.dtype, w.row(in, e), wrow.data(), k);
        dr[in] = static_cast<float>(dot(wrow.data(), xr, k));
      }
    }
  }
  return Status();
}

}  // namespace folio::ref
