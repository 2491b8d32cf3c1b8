// NEON RMS norm and fused residual add + RMS norm (the row loops; the row
// driver is scalar/row_drivers.h): the sum of squares in two 4-lane f32 FMA
// accumulators and a scalar tail, then the scaled (and weighted) row. Each
// element is read before its own output is written, so dst / dst2 may alias
// the inputs.
#include <cmath>
#include <cstdint>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

float sum_squares(const float* a, const float* b, float* s, int64_t n) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float32x4_t v0 = vld1q_f32(a + i), v1 = vld1q_f32(a + i + 4);
    if (b != nullptr) {
      v0 = vaddq_f32(v0, vld1q_f32(b + i));
      v1 = vaddq_f32(v1, vld1q_f32(b + i + 4));
      vst1q_f32(s + i, v0);
      vst1q_f32(s + i + 4, v1);
    }
    acc0 = vfmaq_f32(acc0, v0, v0);
    acc1 = vfmaq_f32(acc1, v1, v1);
  }
  float sum = neon::hsum(vaddq_f32(acc0, acc1));
  for (; i < n; ++i) {
    float v = a[i];
    if (b != nullptr) {
      v += b[i];
      s[i] = v;
    }
    sum = std::fma(v, v, sum);
  }
  return sum;
}

void scale_row(const float* x, float inv, const float* w, float* y, int64_t n) {
  const float32x4_t iv = vdupq_n_f32(inv);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    float32x4_t v = vmulq_f32(vld1q_f32(x + i), iv);
    if (w != nullptr) v = vmulq_f32(v, vld1q_f32(w + i));
    vst1q_f32(y + i, v);
  }
  for (; i < n; ++i) y[i] = w != nullptr ? x[i] * inv * w[i] : x[i] * inv;
}

}  // namespace

Status rms_norm_neon(const Op& op, const KernelContext& ctx) {
  return rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

Status add_rms_norm_neon(const Op& op, const KernelContext& ctx) {
  return add_rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

}  // namespace folio::cpu
