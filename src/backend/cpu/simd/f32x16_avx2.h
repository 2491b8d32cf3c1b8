// simd::Avx2, the AVX2 traits type of f32x16.h: 16 lanes as two ymm halves
// (lanes 0-7 in lo, 8-15 in hi), so every lane does what AVX-512's lane does
// and hsum adds the halves first, as AVX-512's first step does. Masked lanes
// use vmaskmovps (dead lanes read as 0, never touched in memory).
#pragma once

#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/simd/f32x16.h"

#define FOLIO_SIMD_AVX2 FOLIO_INLINE_AVX2

namespace folio::cpu::simd {

struct Avx2 {
  static constexpr int kLanes = 16;
  static constexpr KernelTier kTier = KernelTier::kAvx2;
  static constexpr const char* kName = "avx2";

  struct V {
    __m256 lo, hi;
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline V operator+(V a, V b) {
      return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
    }
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline V operator-(V a, V b) {
      return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
    }
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline V operator*(V a, V b) {
      return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
    }
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline V operator/(V a, V b) {
      return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)};
    }
  };
  struct M {
    __m256i lo, hi;
  };

  FOLIO_SIMD_AVX2 V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  FOLIO_SIMD_AVX2 V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  FOLIO_SIMD_AVX2 V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  FOLIO_SIMD_AVX2 void store(float* p, V v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  FOLIO_SIMD_AVX2 M first(int64_t n) { return {avx2::lanes(n), avx2::lanes(n > 8 ? n - 8 : 0)}; }
  FOLIO_SIMD_AVX2 V load(const float* p, M m) {
    return {_mm256_maskload_ps(p, m.lo), _mm256_maskload_ps(p + 8, m.hi)};
  }
  FOLIO_SIMD_AVX2 void store(float* p, V v, M m) {
    _mm256_maskstore_ps(p, m.lo, v.lo);
    _mm256_maskstore_ps(p + 8, m.hi, v.hi);
  }
  FOLIO_SIMD_AVX2 V keep(V v, M m) {
    return {_mm256_and_ps(v.lo, _mm256_castsi256_ps(m.lo)),
            _mm256_and_ps(v.hi, _mm256_castsi256_ps(m.hi))};
  }
  FOLIO_SIMD_AVX2 V select(M m, V a, V b) {
    return {_mm256_blendv_ps(b.lo, a.lo, _mm256_castsi256_ps(m.lo)),
            _mm256_blendv_ps(b.hi, a.hi, _mm256_castsi256_ps(m.hi))};
  }

  FOLIO_SIMD_AVX2 V add(V a, V b) { return a + b; }
  FOLIO_SIMD_AVX2 V sub(V a, V b) { return a - b; }
  FOLIO_SIMD_AVX2 V mul(V a, V b) { return a * b; }
  FOLIO_SIMD_AVX2 V div(V a, V b) { return a / b; }
  FOLIO_SIMD_AVX2 V min(V a, V b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
  FOLIO_SIMD_AVX2 V max(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
  FOLIO_SIMD_AVX2 V fma(V a, V b, V c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  FOLIO_SIMD_AVX2 V fnma(V a, V b, V c) {
    return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)};
  }
  FOLIO_SIMD_AVX2 V exp(V x) { return {avx2::exp(x.lo), avx2::exp(x.hi)}; }

  FOLIO_SIMD_AVX2 float hsum(V v) { return avx2::hsum(_mm256_add_ps(v.lo, v.hi)); }
  FOLIO_SIMD_AVX2 float hmax(V v) { return avx2::hmax(_mm256_max_ps(v.lo, v.hi)); }

  // Register parts (simd/mul_mat_float.h, whose tiles may run the parts of
  // their accumulators one after the other): V is kParts Part::V, lanes
  // [8i, 8i + 8) in part i. Part: 8 lanes, lane-wise as above, plus the
  // widening loads of 8 f16 / bf16 values.
  struct Half {
    static constexpr int kLanes = 8;
    using V = __m256;
    FOLIO_SIMD_AVX2 V zero() { return _mm256_setzero_ps(); }
    FOLIO_SIMD_AVX2 V load(const float* p) { return _mm256_loadu_ps(p); }
    FOLIO_SIMD_AVX2 void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    FOLIO_SIMD_AVX2 V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    FOLIO_SIMD_AVX2 V load_f16(const uint16_t* p) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    FOLIO_SIMD_AVX2 V load_bf16(const uint16_t* p) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  };
  using Part = Half;
  static constexpr int kParts = 2;
  FOLIO_SIMD_AVX2 V join(const __m256 (&p)[2]) { return {p[0], p[1]}; }
};

}  // namespace folio::cpu::simd
