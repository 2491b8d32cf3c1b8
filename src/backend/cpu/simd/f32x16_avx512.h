// simd::Avx512, the AVX-512 traits type of f32x16.h: one zmm per vector, a
// __mmask16 per tail (masked loads read dead lanes as 0 and never touch
// their memory).
#pragma once

#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/simd/f32x16.h"

#define FOLIO_SIMD_AVX512 FOLIO_INLINE_AVX512
#define FOLIO_SIMD_AVX512_OP FOLIO_TARGET_AVX512 __attribute__((always_inline)) inline

namespace folio::cpu::simd {

struct Avx512 {
  static constexpr int kLanes = 16;
  static constexpr KernelTier kTier = KernelTier::kAvx512;
  static constexpr const char* kName = "avx512";

  struct V {
    __m512 v;
    friend FOLIO_SIMD_AVX512_OP V operator+(V a, V b) { return {_mm512_add_ps(a.v, b.v)}; }
    friend FOLIO_SIMD_AVX512_OP V operator-(V a, V b) { return {_mm512_sub_ps(a.v, b.v)}; }
    friend FOLIO_SIMD_AVX512_OP V operator*(V a, V b) { return {_mm512_mul_ps(a.v, b.v)}; }
    friend FOLIO_SIMD_AVX512_OP V operator/(V a, V b) { return {_mm512_div_ps(a.v, b.v)}; }
  };
  using M = __mmask16;
  using I = __m512i;  // 16 int32 lanes

  FOLIO_SIMD_AVX512 V zero() { return {_mm512_setzero_ps()}; }
  FOLIO_SIMD_AVX512 V set1(float x) { return {_mm512_set1_ps(x)}; }
  FOLIO_SIMD_AVX512 V load(const float* p) { return {_mm512_loadu_ps(p)}; }
  FOLIO_SIMD_AVX512 void store(float* p, V v) { _mm512_storeu_ps(p, v.v); }
  FOLIO_SIMD_AVX512 M first(int64_t n) {
    return n >= 16 ? static_cast<M>(0xFFFF) : static_cast<M>((1u << n) - 1);
  }
  FOLIO_SIMD_AVX512 V load(const float* p, M m) { return {_mm512_maskz_loadu_ps(m, p)}; }
  FOLIO_SIMD_AVX512 void store(float* p, V v, M m) { _mm512_mask_storeu_ps(p, m, v.v); }
  FOLIO_SIMD_AVX512 V keep(V v, M m) { return {_mm512_maskz_mov_ps(m, v.v)}; }
  FOLIO_SIMD_AVX512 V select(M m, V a, V b) { return {_mm512_mask_mov_ps(b.v, m, a.v)}; }

  FOLIO_SIMD_AVX512 V add(V a, V b) { return a + b; }
  FOLIO_SIMD_AVX512 V sub(V a, V b) { return a - b; }
  FOLIO_SIMD_AVX512 V mul(V a, V b) { return a * b; }
  FOLIO_SIMD_AVX512 V div(V a, V b) { return a / b; }
  FOLIO_SIMD_AVX512 V min(V a, V b) { return {_mm512_min_ps(a.v, b.v)}; }
  FOLIO_SIMD_AVX512 V max(V a, V b) { return {_mm512_max_ps(a.v, b.v)}; }
  FOLIO_SIMD_AVX512 V fma(V a, V b, V c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  FOLIO_SIMD_AVX512 V fnma(V a, V b, V c) { return {_mm512_fnmadd_ps(a.v, b.v, c.v)}; }
  FOLIO_SIMD_AVX512 V exp(V x) { return {avx512::exp(x.v)}; }

  FOLIO_SIMD_AVX512 float hsum(V v) { return avx512::hsum(v.v); }
  FOLIO_SIMD_AVX512 float hmax(V v) { return avx512::hmax(v.v); }

  // Activation quantizers (simd/quantize_act.h).
  FOLIO_SIMD_AVX512 V max_abs(V acc, V x) {  // max(acc, |x|); a NaN x keeps acc
    return {_mm512_max_ps(_mm512_abs_ps(x.v), acc.v)};
  }
  FOLIO_SIMD_AVX512 int first_abs_equal(V x, float a) {  // first lane with |x| == a, or -1
    const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(x.v), _mm512_set1_ps(a), _CMP_EQ_OQ);
    return hit == 0 ? -1 : __builtin_ctz(hit);
  }
  // roundf (ties away from zero: trunc, plus sign(v) when |v - trunc v| >=
  // 0.5, exact), clamped to [-128, 127], NaN -> 0.
  FOLIO_SIMD_AVX512 I round_away_i8(V x) {
    const __m512 v = x.v;
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
    const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 sign_one =
        _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
    __m512 r = _mm512_mask_add_ps(t, up, t, sign_one);
    r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
    const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    return _mm512_maskz_cvttps_epi32(ordered, r);
  }
  // Round to nearest even (the default MXCSR mode), NaN -> 0, at most 127.
  FOLIO_SIMD_AVX512 I round_even_max127(V x) {
    const __m512i q = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(x.v, x.v, _CMP_ORD_Q), x.v);
    return _mm512_min_epi32(q, _mm512_set1_epi32(127));
  }
  FOLIO_SIMD_AVX512 I add(I a, I b) { return _mm512_add_epi32(a, b); }
  FOLIO_SIMD_AVX512 int32_t hsum(I v) { return _mm512_reduce_add_epi32(v); }
  // 16 lanes in [-128, 127] as 16 bytes at p.
  FOLIO_SIMD_AVX512 void store_i8(int8_t* p, I v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v));
  }
  FOLIO_SIMD_AVX512 float round_f16(float x) {  // x rounded to f16 (RNE) and back
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT)));
  }
};

}  // namespace folio::cpu::simd
