// Small AVX2 helpers shared by the kernels in this folder. Everything here is
// `static inline` with the AVX2 target attribute, so each translation unit
// gets its own copy and no AVX2 code can leak into baseline callers.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "core/target.h"

#define FOLIO_INLINE_AVX2 FOLIO_TARGET_AVX2 __attribute__((always_inline)) static inline

namespace folio::cpu::avx2 {

// Lane mask for the first min(left, 8) lanes (for vmaskmovps loads / stores:
// masked-off lanes read as 0 and are never written or touched).
FOLIO_INLINE_AVX2 __m256i lanes(int64_t left) {
  alignas(32) static const int32_t kWindow[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                  0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kWindow + 8 - (left >= 8 ? 8 : left)));
}

// 32 bytes at p, unaligned (also for the AVX-512 tiles' 256-bit loads).
FOLIO_INLINE_AVX2 __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// a + b (vaddps) or max(a, b) (vmaxps: b where either is NaN).
template <bool kMax>
FOLIO_INLINE_AVX2 __m128 combine(__m128 a, __m128 b) {
  return kMax ? _mm_max_ps(a, b) : _mm_add_ps(a, b);
}

// The 8 lanes combined in a fixed order: the two halves, then pairs, then
// lanes (hsum / hmax below; AVX-512's start by combining their halves).
template <bool kMax>
FOLIO_INLINE_AVX2 float reduce8(__m256 v) {
  __m128 q = combine<kMax>(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = combine<kMax>(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(combine<kMax>(q, _mm_movehdup_ps(q)));
}

FOLIO_INLINE_AVX2 float hsum(__m256 v) { return reduce8<false>(v); }
FOLIO_INLINE_AVX2 float hmax(__m256 v) { return reduce8<true>(v); }

// exp(x), max relative error about 2 ulp over the whole float range (1 ulp
// measured): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2, exact
// products by FMA), e^r by its degree-7 Taylor polynomial (truncation < 6e-9
// relative), then a multiplication by 2^n done as two exact power-of-two
// factors 2^(n/2) * 2^(n - n/2), each a normal float, so overflow rounds to
// +inf and underflow gradually to subnormals. Below -104 (where e^x rounds
// to 0, e.g. -inf from attention masks) lanes use n = 0 and are zeroed
// afterwards: an underflowing multiply costs a microcode assist. x is
// clamped to [-160, 160] first, so +inf gives +inf; NaN stays NaN (max/min
// keep the NaN operand, and NaN lanes stay live). floor: lanes below it are 0.
FOLIO_INLINE_AVX2 __m256 exp(__m256 x, float floor = -104.0f) {
  const __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(floor), _CMP_NLT_UQ);
  x = _mm256_min_ps(_mm256_set1_ps(160.0f), _mm256_max_ps(_mm256_set1_ps(-160.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_and_si256(_mm256_cvtps_epi32(n), _mm256_castps_si256(live));
  const __m256i n1 = _mm256_srai_epi32(ni, 1);  // |n| <= 231: both factors are normal
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_and_ps(_mm256_mul_ps(_mm256_mul_ps(p, s1), s2), live);
}

}  // namespace folio::cpu::avx2
