// AVX-512 rope (kRope, normal and neox modes): the vector loop of the
// shared table driver (drivers/rope_tables.h), 8 pairs per step in double
// like the reference: x0, x1 widened, two products and a subtraction (or
// sum) rounded separately, no FMA, then one rounding to float: the
// reference's result exactly.
#include <cstdint>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/rope_tables.h"

namespace folio::cpu {

namespace {

// out0 = x0 c - x1 s, out1 = x0 s + x1 c in double, rounded once to float.
FOLIO_INLINE_AVX512 void rotate8(__m256 x0f, __m256 x1f, const double* c, const double* s,
                                 __m256* o0, __m256* o1) {
  const __m512d x0 = _mm512_cvtps_pd(x0f), x1 = _mm512_cvtps_pd(x1f);
  const __m512d cv = _mm512_loadu_pd(c), sv = _mm512_loadu_pd(s);
  *o0 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_mul_pd(x0, cv), _mm512_mul_pd(x1, sv)));
  *o1 = _mm512_cvtpd_ps(_mm512_add_pd(_mm512_mul_pd(x0, sv), _mm512_mul_pd(x1, cv)));
}

// Pairs [0, 8 * (half / 8)) of one row, 8 at a time.
FOLIO_TARGET_AVX512 int64_t rope_pairs(const float* x, float* d, int64_t half, bool neox,
                                       const double* c, const double* s) {
  int64_t i = 0;
  if (neox) {
    for (; i + 8 <= half; i += 8) {
      __m256 o0, o1;
      rotate8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i + half), c + i, s + i, &o0, &o1);
      _mm256_storeu_ps(d + i, o0);
      _mm256_storeu_ps(d + i + half, o1);
    }
  } else {
    // 16 floats = 8 adjacent pairs: split into even / odd lanes and back.
    const __m512i even = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i join = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    for (; i + 8 <= half; i += 8) {
      const __m512 v = _mm512_loadu_ps(x + 2 * i);
      __m256 o0, o1;
      rotate8(_mm512_castps512_ps256(_mm512_permutexvar_ps(even, v)),
              _mm512_castps512_ps256(_mm512_permutexvar_ps(odd, v)), c + i, s + i, &o0, &o1);
      _mm512_storeu_ps(d + 2 * i, _mm512_permutex2var_ps(_mm512_castps256_ps512(o0), join,
                                                         _mm512_castps256_ps512(o1)));
    }
  }
  return i;
}

}  // namespace

Status rope_avx512(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, rope_pairs);
}

}  // namespace folio::cpu
