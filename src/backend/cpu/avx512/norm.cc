// AVX-512 RMS norm and fused residual add + RMS norm, one row (dim 0) at a
// time:
//   rms_norm:     y = x * (1 / sqrt(mean(x^2) + eps)) [* w]
//   add_rms_norm: s = a + b -> dst2; y = rms_norm(s) [* w] -> dst
// Two passes per row: the sum of squares in two 16-lane f32 FMA accumulators
// (masked tail), the inverse root in double (one rounding), then the scaled
// (and weighted) row. Each element is read before its own output is written,
// so dst / dst2 may alias the inputs. Rows: scalar/row_drivers.h.
#include <cmath>
#include <cstdint>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

FOLIO_INLINE_AVX512 __mmask16 tail_mask(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1);
}

// s = a + b (stored to s when b != nullptr, else s = a); returns sum s^2.
FOLIO_TARGET_AVX512 float sum_squares(const float* a, const float* b, float* s, int64_t n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 v0 = _mm512_loadu_ps(a + i), v1 = _mm512_loadu_ps(a + i + 16);
    if (b != nullptr) {
      v0 = _mm512_add_ps(v0, _mm512_loadu_ps(b + i));
      v1 = _mm512_add_ps(v1, _mm512_loadu_ps(b + i + 16));
      _mm512_storeu_ps(s + i, v0);
      _mm512_storeu_ps(s + i + 16, v1);
    }
    acc0 = _mm512_fmadd_ps(v0, v0, acc0);
    acc1 = _mm512_fmadd_ps(v1, v1, acc1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, a + i);
    if (b != nullptr) {
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
      _mm512_mask_storeu_ps(s + i, m, v);
    }
    acc0 = _mm512_fmadd_ps(v, v, acc0);
  }
  return avx512::hsum(_mm512_add_ps(acc0, acc1));
}

// y = x * inv [* w]
FOLIO_TARGET_AVX512 void scale_row(const float* x, float inv, const float* w, float* y, int64_t n) {
  const __m512 iv = _mm512_set1_ps(inv);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - i);
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), iv);
    if (w != nullptr) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

}  // namespace

Status rms_norm_avx512(const Op& op, const KernelContext& ctx) {
  return rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

Status add_rms_norm_avx512(const Op& op, const KernelContext& ctx) {
  return add_rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

}  // namespace folio::cpu
