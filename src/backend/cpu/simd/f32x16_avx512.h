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

  // Register parts (see f32x16_avx2.h): one part, the vector itself, plus
  // the widening loads of 16 f16 / bf16 values.
  using Part = Avx512;
  static constexpr int kParts = 1;
  FOLIO_SIMD_AVX512 V join(const V (&p)[1]) { return p[0]; }
  FOLIO_SIMD_AVX512 V load_f16(const uint16_t* p) {
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
  }
  FOLIO_SIMD_AVX512 V load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))};
  }
};

}  // namespace folio::cpu::simd
