// The reference mul_mat / mul_mat_id loops for any weight layout (semantics
// in ref/mul_mat.cc): the caller supplies how one weight row becomes k floats
// (the plain dequantizer, or packed/ref_packed.cc's unpack + dequantize);
// each dot product is accumulated in double and rounded once to float.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/mul_mat_id.h"

namespace folio::ref {

inline double dot_f64(const float* w, const float* x, int64_t k) {
  double acc = 0.0;
  for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(w[i]) * static_cast<double>(x[i]);
  return acc;
}

// row(in, i2, i3, out): weight row `in` of weight matrix (i2, i3) as k floats.
template <typename RowFn>
Status mul_mat_rows(const Op& op, RowFn&& row) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w]
  const TensorView& x = op.src[1];  // [K, M, B2, B3]
  const TensorView& d = op.dst;     // [N, M, B2, B3]
  const int64_t k = w.ne[0], n = w.ne[1], m = x.ne[1];
  const int64_t r2 = x.ne[2] / w.ne[2], r3 = x.ne[3] / w.ne[3];  // broadcast ratios
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t b3 = 0; b3 < x.ne[3]; ++b3) {
    for (int64_t b2 = 0; b2 < x.ne[2]; ++b2) {
      for (int64_t in = 0; in < n; ++in) {
        row(in, b2 / r2, b3 / r3, wrow.data());
        for (int64_t im = 0; im < m; ++im) {
          d.row<float>(im, b2, b3)[in] =
              static_cast<float>(dot_f64(wrow.data(), x.row<const float>(im, b2, b3), k));
        }
      }
    }
  }
  return Status();
}

// row(in, e, 0, out): weight row `in` of expert e. Shapes and every id are
// checked before anything is written.
template <typename RowFn>
Status mul_mat_id_rows(const Op& op, RowFn&& row) {
  const TensorView& w = op.src[0];    // [K, N, E]
  const TensorView& x = op.src[1];    // [K, X1, T]
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  const TensorView& d = op.dst;       // [N, n_used, T]
  FOLIO_RETURN_IF_ERROR(cpu::check_mul_mat_id(op));
  const int64_t k = w.ne[0], n = w.ne[1];
  const int64_t n_used = ids.ne[0], n_tok = ids.ne[1], x1 = x.ne[1];
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      const float* xr = x.row<const float>(u % x1, t);
      float* dr = d.row<float>(u, t);
      for (int64_t in = 0; in < n; ++in) {
        row(in, e, int64_t{0}, wrow.data());
        dr[in] = static_cast<float>(dot_f64(wrow.data(), xr, k));
      }
    }
  }
  return Status();
}

}  // namespace folio::ref
