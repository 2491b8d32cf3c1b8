// AVX-512 soft_max over dim 0: v = x * scale (+ mask row), y = exp(v - max v)
// / sum. Mask [ne0, ne1, m2, m3] broadcasts over dims 2 and 3 by modulo, as
// in the reference.
//
// Three passes per row, 16 lanes each with a masked tail: the maximum of v;
// e = exp(v - max) written to dst while summing (v recomputed from x and the
// mask, one FMA, so dst may alias x); then dst *= 1 / sum. exp is the 2-ulp
// vector exp of simd.h (-inf -> exact 0). A row with nothing visible (max
// = -inf) becomes all zeros, as in the reference. The rows and the thread split
// are scalar/row_drivers.h's.
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

FOLIO_INLINE_AVX512 __mmask16 lanes(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// v = x * scale + mask (mask may be null).
FOLIO_INLINE_AVX512 __m512 logits(const float* x, const float* mask, __m512 scale, __mmask16 m) {
  const __m512 xv = _mm512_maskz_loadu_ps(m, x);
  return mask == nullptr ? _mm512_mul_ps(xv, scale)
                         : _mm512_fmadd_ps(xv, scale, _mm512_maskz_loadu_ps(m, mask));
}

FOLIO_TARGET_AVX512 void softmax_row(const float* x, const float* mask, float scale, float* y,
                                     int64_t n) {
  const __m512 sv = _mm512_set1_ps(scale);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 mx = neg_inf;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(n - i);
    mx = _mm512_mask_max_ps(mx, m, mx, logits(x + i, mask == nullptr ? nullptr : mask + i, sv, m));
  }
  const float max = avx512::hmax(mx);
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; i += 16)
      _mm512_mask_storeu_ps(y + i, lanes(n - i), _mm512_setzero_ps());
    return;
  }
  const __m512 maxv = _mm512_set1_ps(max);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(n - i);
    const __m512 v = logits(x + i, mask == nullptr ? nullptr : mask + i, sv, m);
    const __m512 e = _mm512_maskz_mov_ps(m, avx512::exp(_mm512_sub_ps(v, maxv)));
    sum = _mm512_add_ps(sum, e);
    _mm512_mask_storeu_ps(y + i, m, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / avx512::hsum(sum));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), inv));
  }
}

}  // namespace

Status soft_max_avx512(const Op& op, const KernelContext& ctx) {
  return soft_max_rows(op, ctx, softmax_row);
}

}  // namespace folio::cpu
