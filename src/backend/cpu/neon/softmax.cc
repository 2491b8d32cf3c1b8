// NEON soft_max row (the row driver is scalar/row_drivers.h): v = x * scale
// (+ mask), three passes of 4 lanes with a scalar tail: the maximum of v;
// e = exp(v - max) written to dst while summing (v recomputed, so dst may
// alias x); dst *= 1 / sum. exp is neon::exp (the vector exp of the x86
// tiers, -inf -> exact 0) for whole vectors and the tail alike. A row with
// nothing visible (max = -inf) becomes zeros, as in the reference.
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

FOLIO_INLINE_NEON float32x4_t logits(const float* x, const float* mask, float32x4_t scale) {
  const float32x4_t xv = vld1q_f32(x);
  return mask == nullptr ? vmulq_f32(xv, scale) : vfmaq_f32(vld1q_f32(mask), xv, scale);
}

// The last n < 4 elements (the same arithmetic per lane); padding lanes are -inf.
FOLIO_INLINE_NEON float32x4_t logits_tail(const float* x, const float* mask, float scale,
                                          int64_t n) {
  float v[4];
  for (int64_t i = 0; i < 4; ++i) {
    if (i >= n) {
      v[i] = -std::numeric_limits<float>::infinity();
    } else {
      v[i] = mask == nullptr ? x[i] * scale : std::fma(x[i], scale, mask[i]);
    }
  }
  return vld1q_f32(v);
}

void softmax_row(const float* x, const float* mask, float scale, float* y, int64_t n) {
  const float32x4_t sv = vdupq_n_f32(scale);
  const int64_t n4 = n / 4 * 4;
  const float* mask_tail = mask == nullptr ? nullptr : mask + n4;
  float32x4_t mx = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n4; i += 4) {
    mx = vmaxq_f32(mx, logits(x + i, mask == nullptr ? nullptr : mask + i, sv));
  }
  if (n4 < n) mx = vmaxq_f32(mx, logits_tail(x + n4, mask_tail, scale, n - n4));
  const float max = neon::hmax(mx);
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  const float32x4_t maxv = vdupq_n_f32(max);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (int64_t i = 0; i < n4; i += 4) {
    const float32x4_t e =
        neon::exp(vsubq_f32(logits(x + i, mask == nullptr ? nullptr : mask + i, sv), maxv));
    sum = vaddq_f32(sum, e);
    vst1q_f32(y + i, e);
  }
  if (n4 < n) {
    float e[4];
    vst1q_f32(e, neon::exp(vsubq_f32(logits_tail(x + n4, mask_tail, scale, n - n4), maxv)));
    sum = vaddq_f32(sum, vld1q_f32(e));  // padding lanes: exp(-inf) = 0
    for (int64_t i = n4; i < n; ++i) y[i] = e[i - n4];
  }
  const float32x4_t inv = vdupq_n_f32(1.0f / neon::hsum(sum));
  int64_t i = 0;
  for (; i < n4; i += 4) vst1q_f32(y + i, vmulq_f32(vld1q_f32(y + i), inv));
  for (; i < n; ++i) y[i] *= vgetq_lane_f32(inv, 0);
}

}  // namespace

Status soft_max_neon(const Op& op, const KernelContext& ctx) {
  return soft_max_rows(op, ctx, softmax_row);
}

}  // namespace folio::cpu
