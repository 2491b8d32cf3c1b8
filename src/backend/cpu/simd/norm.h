// RMS norm and fused residual add + RMS norm over the traits type
// (f32x16.h), one row (dim 0) at a time:
//   rms_norm:     y = x * (1 / sqrt(mean(x^2) + eps)) [* w]
//   add_rms_norm: s = a + b -> dst2; y = rms_norm(s) [* w] -> dst
// Two passes per row: the sum of squares in two 16-lane FMA accumulators
// (32 elements a step, then 16-lane masked steps), the inverse root in
// double (one rounding, drivers/row_drivers.h), then the scaled (and
// weighted) row. Each element is read before its own output is written, so
// dst / dst2 may alias the inputs. Same bytes on every tier.
#pragma once

#include <cstdint>

#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// s = a + b (stored to s when b != nullptr, else s = a); returns sum s^2.
template <class S>
float norm_sum_squares(const float* a, const float* b, float* s, int64_t n) {
  using V = typename S::V;
  V acc0 = S::zero(), acc1 = S::zero();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    V v0 = S::load(a + i), v1 = S::load(a + i + 16);
    if (b != nullptr) {
      v0 = v0 + S::load(b + i);
      v1 = v1 + S::load(b + i + 16);
      S::store(s + i, v0);
      S::store(s + i + 16, v1);
    }
    acc0 = S::fma(v0, v0, acc0);
    acc1 = S::fma(v1, v1, acc1);
  }
  for (; i < n; i += 16) {
    const typename S::M m = S::first(n - i);
    V v = S::load(a + i, m);
    if (b != nullptr) {
      v = v + S::load(b + i, m);
      S::store(s + i, v, m);
    }
    acc0 = S::fma(v, v, acc0);
  }
  return S::hsum(acc0 + acc1);
}

// y = x * inv [* w]
template <class S>
void norm_scale_row(const float* x, float inv, const float* w, float* y, int64_t n) {
  using V = typename S::V;
  const V iv = S::set1(inv);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V v = S::load(x + i) * iv;
    if (w != nullptr) v = v * S::load(w + i);
    S::store(y + i, v);
  }
  if (i < n) {
    const typename S::M m = S::first(n - i);
    V v = S::load(x + i, m) * iv;
    if (w != nullptr) v = v * S::load(w + i, m);
    S::store(y + i, v, m);
  }
}

template <class S>
Status rms_norm(const Op& op, const KernelContext& ctx) {
  return rms_norm_rows(op, ctx, {norm_sum_squares<S>, norm_scale_row<S>});
}

template <class S>
Status add_rms_norm(const Op& op, const KernelContext& ctx) {
  return add_rms_norm_rows(op, ctx, {norm_sum_squares<S>, norm_scale_row<S>});
}

}  // namespace folio::cpu::simd
