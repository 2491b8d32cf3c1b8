// AVX2 soft_max over dim 0: v = x * scale (+ mask row), y = exp(v - max v)
// / sum. Mask [ne0, ne1, m2, m3] broadcasts over dims 2 and 3 by modulo, as
// in the reference.
//
// Three passes per row, 8 lanes each (a vmaskmovps tail): the maximum of
// v; e = exp(v - max) written to dst while summing (v recomputed from x and
// the mask, one FMA, so dst may alias x); then dst *= 1 / sum. exp is the
// 2-ulp vector exp of simd.h (-inf -> exact 0). A row with nothing visible
// (max = -inf) becomes all zeros, as in the reference. Rows are split across
// the thread pool.
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

// v = x * scale + mask (mask may be null).
FOLIO_INLINE_AVX2 __m256 logits(const float* x, const float* mask, __m256 scale) {
  const __m256 xv = _mm256_loadu_ps(x);
  return mask == nullptr ? _mm256_mul_ps(xv, scale)
                         : _mm256_fmadd_ps(xv, scale, _mm256_loadu_ps(mask));
}

// The same for the last n - i < 8 lanes (masked-off lanes read as 0).
FOLIO_INLINE_AVX2 __m256 logits_tail(const float* x, const float* mask, __m256 scale, __m256i m) {
  const __m256 xv = _mm256_maskload_ps(x, m);
  return mask == nullptr ? _mm256_mul_ps(xv, scale)
                         : _mm256_fmadd_ps(xv, scale, _mm256_maskload_ps(mask, m));
}

FOLIO_TARGET_AVX2 void softmax_row(const float* x, const float* mask, float scale, float* y,
                                   int64_t n) {
  const __m256 sv = _mm256_set1_ps(scale);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const int64_t n8 = n / 8 * 8;
  const __m256i tail = avx2::lanes(n - n8);
  const float* mask_tail = mask == nullptr ? nullptr : mask + n8;
  __m256 mx = neg_inf;
  for (int64_t i = 0; i < n8; i += 8) {
    mx = _mm256_max_ps(mx, logits(x + i, mask == nullptr ? nullptr : mask + i, sv));
  }
  if (n8 < n) {
    const __m256 v = logits_tail(x + n8, mask_tail, sv, tail);
    mx = _mm256_max_ps(mx, _mm256_blendv_ps(neg_inf, v, _mm256_castsi256_ps(tail)));
  }
  const float max = avx2::hmax(mx);
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  const __m256 maxv = _mm256_set1_ps(max);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 e =
        avx2::exp(_mm256_sub_ps(logits(x + i, mask == nullptr ? nullptr : mask + i, sv), maxv));
    sum = _mm256_add_ps(sum, e);
    _mm256_storeu_ps(y + i, e);
  }
  if (n8 < n) {
    const __m256 v = logits_tail(x + n8, mask_tail, sv, tail);
    const __m256 e = _mm256_and_ps(avx2::exp(_mm256_sub_ps(v, maxv)), _mm256_castsi256_ps(tail));
    sum = _mm256_add_ps(sum, e);
    _mm256_maskstore_ps(y + n8, tail, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / avx2::hsum(sum));
  for (int64_t i = 0; i < n8; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  if (n8 < n)
    _mm256_maskstore_ps(y + n8, tail, _mm256_mul_ps(_mm256_maskload_ps(y + n8, tail), inv));
}

}  // namespace

Status soft_max_avx2(const Op& op, const KernelContext& ctx) {
  return soft_max_rows(op, ctx, softmax_row);
}

}  // namespace folio::cpu
