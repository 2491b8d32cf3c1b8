// AVX2 RMS norm and fused residual add + RMS norm, one row (dim 0) at a time:
//   rms_norm:     y = x * (1 / sqrt(mean(x^2) + eps)) [* w]
//   add_rms_norm: s = a + b -> dst2; y = rms_norm(s) [* w] -> dst
// Two passes per row: the sum of squares in two 8-lane f32 FMA accumulators
// (vmaskmovps tail), the inverse root in double (one rounding), then the
// scaled (and weighted) row. Each element is read before its own output is
// written, so dst / dst2 may alias the inputs. The rows and the thread split
// are scalar/row_drivers.h's.
#include <cmath>
#include <cstdint>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

// s = a + b (stored to s when b != nullptr, else s = a); returns sum s^2.
FOLIO_TARGET_AVX2 float sum_squares(const float* a, const float* b, float* s, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 v0 = _mm256_loadu_ps(a + i), v1 = _mm256_loadu_ps(a + i + 8);
    if (b != nullptr) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(b + i));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(b + i + 8));
      _mm256_storeu_ps(s + i, v0);
      _mm256_storeu_ps(s + i + 8, v1);
    }
    acc0 = _mm256_fmadd_ps(v0, v0, acc0);
    acc1 = _mm256_fmadd_ps(v1, v1, acc1);
  }
  for (; i < n; i += 8) {
    const __m256i m = avx2::lanes(n - i);
    __m256 v = _mm256_maskload_ps(a + i, m);
    if (b != nullptr) {
      v = _mm256_add_ps(v, _mm256_maskload_ps(b + i, m));
      _mm256_maskstore_ps(s + i, m, v);
    }
    acc0 = _mm256_fmadd_ps(v, v, acc0);
  }
  return avx2::hsum(_mm256_add_ps(acc0, acc1));
}

// y = x * inv [* w]
FOLIO_TARGET_AVX2 void scale_row(const float* x, float inv, const float* w, float* y, int64_t n) {
  const __m256 iv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), iv);
    if (w != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(y + i, v);
  }
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), iv);
    if (w != nullptr) v = _mm256_mul_ps(v, _mm256_maskload_ps(w + i, m));
    _mm256_maskstore_ps(y + i, m, v);
  }
}

}  // namespace

Status rms_norm_avx2(const Op& op, const KernelContext& ctx) {
  return rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

Status add_rms_norm_avx2(const Op& op, const KernelContext& ctx) {
  return add_rms_norm_rows(op, ctx, {sum_squares, scale_row});
}

}  // namespace folio::cpu
