// AVX2 rope (kRope, normal and neox modes): the vector loop of the shared
// table driver (drivers/rope_tables.h), 4 pairs per step in double like the
// reference: x0, x1 widened, two products and a subtraction (or sum)
// rounded separately, no FMA, then one rounding to float: the reference's
// result exactly.
#include <cstdint>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/rope_tables.h"

namespace folio::cpu {

namespace {

// out0 = x0 c - x1 s, out1 = x0 s + x1 c in double, rounded once to float.
FOLIO_INLINE_AVX2 void rotate4(__m128 x0f, __m128 x1f, const double* c, const double* s,
                               __m128* o0, __m128* o1) {
  const __m256d x0 = _mm256_cvtps_pd(x0f), x1 = _mm256_cvtps_pd(x1f);
  const __m256d cv = _mm256_loadu_pd(c), sv = _mm256_loadu_pd(s);
  *o0 = _mm256_cvtpd_ps(_mm256_sub_pd(_mm256_mul_pd(x0, cv), _mm256_mul_pd(x1, sv)));
  *o1 = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_mul_pd(x0, sv), _mm256_mul_pd(x1, cv)));
}

// Pairs [0, 4 * (half / 4)) of one row, 4 at a time.
FOLIO_TARGET_AVX2 int64_t rope_pairs(const float* x, float* d, int64_t half, bool neox,
                                     const double* c, const double* s) {
  int64_t i = 0;
  if (neox) {
    for (; i + 4 <= half; i += 4) {
      __m128 o0, o1;
      rotate4(_mm_loadu_ps(x + i), _mm_loadu_ps(x + i + half), c + i, s + i, &o0, &o1);
      _mm_storeu_ps(d + i, o0);
      _mm_storeu_ps(d + i + half, o1);
    }
  } else {
    // 8 floats = 4 adjacent pairs: even lanes to the low half, odd to the high.
    const __m256i split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (; i + 4 <= half; i += 4) {
      const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + 2 * i), split);
      __m128 o0, o1;
      rotate4(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1), c + i, s + i, &o0, &o1);
      _mm_storeu_ps(d + 2 * i, _mm_unpacklo_ps(o0, o1));
      _mm_storeu_ps(d + 2 * i + 4, _mm_unpackhi_ps(o0, o1));
    }
  }
  return i;
}

}  // namespace

Status rope_avx2(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, rope_pairs);
}

}  // namespace folio::cpu
