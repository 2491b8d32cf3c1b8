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

// e^x with libm's expf bits, for vectors: e^x in double (x = n ln2 + r, ln2
// as the double nearest it plus the double nearest the rest, so x - n hi is
// exact; e^r by its degree-10 Taylor polynomial, truncation below 2.2e-13
// relative at |r| <= ln2/2; times 2^n), within 2^-40 of e^x relative, then
// rounded once to float. A lane is settled when that double lies within
// kExpfSettledUlps of the float's ulp from it (the true e^x then within
// 0.4901 ulp) and the float is a normal number that is not a power of two
// (the ulp below a power of two is half the one above): glibc's and musl's
// expf (ARM's optimized routines) are within 0.502 ulp of e^x, so their
// float is this one. About 2% of the lanes of ordinary inputs are left to
// the scalar call, with every lane outside [-87, 88] and NaN.
inline constexpr double kExpfLn2Hi = 0x1.62e42fefa39efp-1;
inline constexpr double kExpfLn2Lo = 0x1.abc9e3b39803fp-56;
inline constexpr double kExpfTaylor[] = {1.0,       1.0,        1.0 / 2,    1.0 / 6,
                                         1.0 / 24,  1.0 / 120,  1.0 / 720,  1.0 / 5040,
                                         1.0 / 40320, 1.0 / 362880, 1.0 / 3628800};
inline constexpr double kExpfSettledUlps = 0.49;

// es[l] = scalar_exp(xs[l]) for every lane l set in `lanes`: the lanes the
// vector path leaves unsettled.
inline void expf_lanes(const float* xs, float* es, unsigned lanes, float (*scalar_exp)(float)) {
  for (; lanes != 0; lanes &= lanes - 1) {
    const int l = __builtin_ctz(lanes);
    es[l] = scalar_exp(xs[l]);
  }
}

// 2^(e + bias - 1023) for 4 int32 e, as doubles built from their exponent field.
FOLIO_INLINE_AVX2 __m256d pow2_pd(__m128i e, int64_t bias) {
  return _mm256_castsi256_pd(_mm256_slli_epi64(
      _mm256_add_epi64(_mm256_cvtepi32_epi64(e), _mm256_set1_epi64x(bias)), 52));
}

// 4 floats: the float nearest the double e^x, and the settled lanes (bits).
FOLIO_INLINE_AVX2 __m128 expf_rounded4(__m128 xf, int* settled) {
  const __m256d x = _mm256_cvtps_pd(xf);
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kExpfLn2Hi), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(kExpfLn2Lo), r);
  __m256d p = _mm256_set1_pd(kExpfTaylor[10]);
  for (int k = 9; k >= 0; --k) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kExpfTaylor[k]));
  // 2^n and the float's ulp 2^(E - 150) as doubles from their exponent
  // fields (garbage where n is out of range: those lanes are not settled).
  const __m256d d = _mm256_mul_pd(p, pow2_pd(_mm256_cvtpd_epi32(n), 1023));
  const __m128 f = _mm256_cvtpd_ps(d);  // MXCSR's round-to-nearest-even
  const __m128i fb = _mm_castps_si128(f);
  const __m256d dist = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(d, _mm256_cvtps_pd(f)));
  const __m256d ulp = _mm256_mul_pd(
      pow2_pd(_mm_and_si128(_mm_srli_epi32(fb, 23), _mm_set1_epi32(0xff)), 1023 - 150),
      _mm256_set1_pd(kExpfSettledUlps));
  const __m256d ok = _mm256_and_pd(
      _mm256_cmp_pd(dist, ulp, _CMP_LE_OQ),
      _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(-87.0), _CMP_GE_OQ),
                    _mm256_cmp_pd(x, _mm256_set1_pd(88.0), _CMP_LE_OQ)));
  const int pow2_lanes = _mm_movemask_ps(_mm_castsi128_ps(
      _mm_cmpeq_epi32(_mm_and_si128(fb, _mm_set1_epi32(0x007fffff)), _mm_setzero_si128())));
  *settled = _mm256_movemask_pd(ok) & ~pow2_lanes & 0xf;
  return f;
}

// e^x for 8 floats, bit-identical to `scalar_exp` (the reference kernels'
// std::exp, passed in so that the call is compiled outside this target) in
// every lane: expf_rounded4 per quarter, scalar_exp where it is unsettled.
FOLIO_INLINE_AVX2 __m256 expf_libm(__m256 x, float (*scalar_exp)(float)) {
  int lo_ok, hi_ok;
  const __m128 lo = expf_rounded4(_mm256_castps256_ps128(x), &lo_ok);
  const __m128 hi = expf_rounded4(_mm256_extractf128_ps(x, 1), &hi_ok);
  __m256 e = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
  const unsigned unsettled = ~static_cast<unsigned>(lo_ok | hi_ok << 4) & 0xffu;
  if (unsettled != 0) {
    alignas(32) float xs[8], es[8];
    _mm256_store_ps(xs, x);
    _mm256_store_ps(es, e);
    expf_lanes(xs, es, unsettled, scalar_exp);
    e = _mm256_load_ps(es);
  }
  return e;
}

}  // namespace folio::cpu::avx2
