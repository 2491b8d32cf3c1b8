// Small AVX-512 helpers shared by the kernels in this folder. Everything here
// is `static inline` with the AVX-512 target attribute, so each translation
// unit gets its own copy and no AVX-512 code can leak into baseline callers.
#pragma once

// GCC 12 flags the self-initialised placeholder inside its own
// _mm512_undefined_*() (used by many intrinsics) when they are inlined into
// target-attribute functions: a false positive in the compiler's headers.
// Silenced before <immintrin.h> so that the pragma covers those lines.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/avx2/simd.h"
#include "core/target.h"

#define FOLIO_INLINE_AVX512 FOLIO_TARGET_AVX512 __attribute__((always_inline)) static inline

namespace folio::cpu::avx512 {

// One float from the 16 lanes: the 256-bit halves combined, then
// avx2::hsum / hmax (quarters, pairs, lanes).
FOLIO_INLINE_AVX512 float hsum(__m512 v) {
  return avx2::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
FOLIO_INLINE_AVX512 float hmax(__m512 v) {
  return avx2::hmax(_mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// exp(x), max relative error about 2 ulp over the whole float range (1 ulp
// measured): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2, exact
// products by FMA), e^r by its degree-7 Taylor polynomial (truncation < 6e-9
// relative), then vscalefps multiplies by 2^n, which rounds overflow to +inf
// and underflow to subnormals correctly. Below -104 (where e^x rounds to 0,
// e.g. -inf from attention masks) lanes are zeroed by the mask instead of
// computed: an underflowing vscalefps costs a microcode assist per
// instruction. x is clamped to [-160, 160] first, so +inf gives +inf; NaN
// stays NaN (max/min keep the NaN operand, and NaN lanes stay live).
// floor: lanes below it are 0 (kExpNormalFloor: every result that would be
// subnormal, avx2/simd.h).
FOLIO_INLINE_AVX512 __m512 exp(__m512 x, float floor = -104.0f) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(floor), _CMP_NLT_UQ);
  x = _mm512_min_ps(_mm512_set1_ps(160.0f), _mm512_max_ps(_mm512_set1_ps(-160.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(live, p, n);
}

// e^x for 8 floats (widened to doubles), rounded once to float, and the
// lanes where that float is certainly the libm expf's (`*settled`). In
// double: x = n ln2 + r (ln2 as the double nearest it plus the double
// nearest the rest; x - n hi is exact), e^r by its degree-10 Taylor
// polynomial (truncation below 2.2e-13 relative at |r| <= ln2/2), times
// 2^n; so the double is within 2^-40 of e^x, relative. A lane is settled
// when that double lies within 0.49 of the float's ulp from it (the true
// e^x then within 0.4901 ulp) and the float is a normal number that is not
// a power of two (the ulp below a power of two is half the one above):
// glibc's and musl's expf (ARM's optimized routines) are within 0.502 ulp
// of e^x, so their float is this one. About 2% of the lanes on uniform
// inputs are left unsettled, and every lane outside [-87, 88] or NaN.
FOLIO_INLINE_AVX512 __m256 expf_rounded8(__m256 xf, __mmask8* settled) {
  const __m512d x = _mm512_cvtps_pd(xf);
  const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(0x1.62e42fefa39efp-1), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(0x1.abc9e3b39803fp-56), r);
  constexpr double kInvFact[] = {1.0,         1.0,          1.0 / 2,      1.0 / 6,
                                 1.0 / 24,    1.0 / 120,    1.0 / 720,    1.0 / 5040,
                                 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800};
  __m512d p = _mm512_set1_pd(kInvFact[10]);
  for (int k = 9; k >= 0; --k) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kInvFact[k]));
  const __m512d d = _mm512_scalef_pd(p, n);
  const __m256 f = _mm512_cvtpd_ps(d);  // MXCSR's round-to-nearest-even
  const __m512d back = _mm512_cvtps_pd(f);
  const __m512d dist = _mm512_abs_pd(_mm512_sub_pd(d, back));  // exact: d and back are close
  const __m512d ulp = _mm512_scalef_pd(_mm512_set1_pd(0.49),
                                       _mm512_sub_pd(_mm512_getexp_pd(back), _mm512_set1_pd(23)));
  const __mmask8 in_range = _mm512_cmp_pd_mask(x, _mm512_set1_pd(-87.0), _CMP_GE_OQ) &
                            _mm512_cmp_pd_mask(x, _mm512_set1_pd(88.0), _CMP_LE_OQ);
  const __mmask8 not_pow2 =
      _mm256_test_epi32_mask(_mm256_castps_si256(f), _mm256_set1_epi32(0x007fffff));
  *settled = in_range & not_pow2 & _mm512_cmp_pd_mask(dist, ulp, _CMP_LE_OQ);
  return f;
}

// e^x for 16 floats, bit-identical to `scalar_exp` (the reference kernels'
// std::exp, i.e. libm's expf, passed in so that the call is compiled outside
// this target) in every lane: expf_rounded8 per half, and scalar_exp for the
// lanes it leaves unsettled.
FOLIO_INLINE_AVX512 __m512 expf_libm(__m512 x, float (*scalar_exp)(float)) {
  __mmask8 lo_ok, hi_ok;
  const __m256 lo = expf_rounded8(_mm512_castps512_ps256(x), &lo_ok);
  const __m256 hi = expf_rounded8(_mm512_extractf32x8_ps(x, 1), &hi_ok);
  __m512 e = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
  const unsigned unsettled =
      ~(static_cast<unsigned>(lo_ok) | static_cast<unsigned>(hi_ok) << 8) & 0xffffu;
  if (unsettled != 0) {
    alignas(64) float xs[16], es[16];
    _mm512_store_ps(xs, x);
    _mm512_store_ps(es, e);
    for (unsigned m = unsettled; m != 0; m &= m - 1) {
      const int l = __builtin_ctz(m);
      es[l] = scalar_exp(xs[l]);
    }
    e = _mm512_load_ps(es);
  }
  return e;
}

}  // namespace folio::cpu::avx512
