// soft_max over dim 0 over the traits type (f32x16.h): v = x * scale
// (+ mask row), y = exp(v - max v) / sum. The mask [ne0, ne1, m2, m3]
// broadcasts over dims 2 and 3 by modulo, as in the reference; the rows and
// the thread split are drivers/row_drivers.h's.
//
// Three passes per row, 16 lanes a step and one masked tail: the maximum of
// v; e = exp(v - max) written to dst while summing in one 16-lane
// accumulator (v recomputed from x and the mask, one FMA, so dst may alias
// x); then dst *= 1 / sum. exp is the traits' 2-ulp exp (-inf -> exact 0).
// A row with nothing visible (max = -inf) becomes all zeros, as in the
// reference. Same bytes on every tier.
#pragma once

#include <cstdint>
#include <limits>

#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// v = x * scale + mask (mask may be null), 16 lanes.
template <class S>
typename S::V softmax_logits(const float* x, const float* mask, typename S::V scale) {
  return mask == nullptr ? S::load(x) * scale : S::fma(S::load(x), scale, S::load(mask));
}

// The same for the lanes of m (dead lanes read as 0).
template <class S>
typename S::V softmax_logits(const float* x, const float* mask, typename S::V scale,
                             typename S::M m) {
  return mask == nullptr ? S::load(x, m) * scale : S::fma(S::load(x, m), scale, S::load(mask, m));
}

template <class S>
void softmax_row(const float* x, const float* mask, float scale, float* y, int64_t n) {
  using V = typename S::V;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const V sv = S::set1(scale);
  const int64_t n16 = n / 16 * 16;
  const typename S::M tail = S::first(n - n16);
  const float* mask_tail = mask == nullptr ? nullptr : mask + n16;
  V mx = S::set1(kNegInf);
  for (int64_t i = 0; i < n16; i += 16) {
    mx = S::max(mx, softmax_logits<S>(x + i, mask == nullptr ? nullptr : mask + i, sv));
  }
  if (n16 < n) {
    mx = S::max(mx, S::select(tail, softmax_logits<S>(x + n16, mask_tail, sv, tail), mx));
  }
  const float max = S::hmax(mx);
  if (max == kNegInf) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  const V maxv = S::set1(max);
  V sum = S::zero();
  for (int64_t i = 0; i < n16; i += 16) {
    const V e = S::exp(softmax_logits<S>(x + i, mask == nullptr ? nullptr : mask + i, sv) - maxv);
    sum = sum + e;
    S::store(y + i, e);
  }
  if (n16 < n) {
    const V e = S::keep(S::exp(softmax_logits<S>(x + n16, mask_tail, sv, tail) - maxv), tail);
    sum = sum + e;
    S::store(y + n16, e, tail);
  }
  const V inv = S::set1(1.0f / S::hsum(sum));
  for (int64_t i = 0; i < n16; i += 16) S::store(y + i, S::load(y + i) * inv);
  if (n16 < n) S::store(y + n16, S::load(y + n16, tail) * inv, tail);
}

template <class S>
Status soft_max(const Op& op, const KernelContext& ctx) {
  return soft_max_rows(op, ctx, softmax_row<S>);
}

}  // namespace folio::cpu::simd
