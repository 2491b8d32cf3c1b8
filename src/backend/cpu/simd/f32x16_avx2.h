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
  static constexpr bool kHasExpfLibm = false;

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
  struct M {  // the live lanes of each half, and how many there are
    __m256i lo, hi;
    int64_t n;
  };
  struct I {  // 16 int32 lanes
    __m256i lo, hi;
  };

  FOLIO_SIMD_AVX2 V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  FOLIO_SIMD_AVX2 V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  FOLIO_SIMD_AVX2 V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  FOLIO_SIMD_AVX2 void store(float* p, V v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  FOLIO_SIMD_AVX2 M first(int64_t n) { return {avx2::lanes(n), avx2::lanes(n > 8 ? n - 8 : 0), n}; }
  // A half that is all live or all dead takes a plain load / store or none:
  // a tail costs what an 8-lane loop's tail did.
  FOLIO_SIMD_AVX2 V load(const float* p, M m) {
    return {m.n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m.lo),
            m.n > 8 ? _mm256_maskload_ps(p + 8, m.hi) : _mm256_setzero_ps()};
  }
  FOLIO_SIMD_AVX2 void store(float* p, V v, M m) {
    if (m.n >= 8) {
      _mm256_storeu_ps(p, v.lo);
    } else {
      _mm256_maskstore_ps(p, m.lo, v.lo);
    }
    if (m.n > 8) _mm256_maskstore_ps(p + 8, m.hi, v.hi);
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
  FOLIO_SIMD_AVX2 V exp_normal(V x) {
    return {avx2::exp(x.lo, kExpNormalFloor), avx2::exp(x.hi, kExpNormalFloor)};
  }

  FOLIO_SIMD_AVX2 float hsum(V v) { return avx2::hsum(_mm256_add_ps(v.lo, v.hi)); }
  FOLIO_SIMD_AVX2 float hmax(V v) { return avx2::hmax(_mm256_max_ps(v.lo, v.hi)); }

  // Flash attention (simd/flash_attn.h): sign bits, and the sums of 8
  // vectors at once (hsum's tree for each: halves, then avx2::hsum's).
  FOLIO_SIMD_AVX2 float widen_f16(uint16_t h) { return _cvtsh_ss(h); }
  FOLIO_SIMD_AVX2 V abs(V v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return {_mm256_andnot_ps(sign, v.lo), _mm256_andnot_ps(sign, v.hi)};
  }
  FOLIO_SIMD_AVX2 V copysign(V a, V b) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return {_mm256_or_ps(_mm256_andnot_ps(sign, a.lo), _mm256_and_ps(sign, b.lo)),
            _mm256_or_ps(_mm256_andnot_ps(sign, a.hi), _mm256_and_ps(sign, b.hi))};
  }
  // Lane L of the result: hsum(a[L]). The network's inputs are permuted
  // (w[i] = s[4 * (i % 2) + i / 2]) so that its output order is natural.
  FOLIO_SIMD_AVX2 __m256 hsums(const V (&a)[8]) {
    __m256 s[8], w[4], r[2];
    for (int k = 0; k < 8; ++k) s[k] = _mm256_add_ps(a[k].lo, a[k].hi);
    for (int k = 0; k < 4; ++k) {
      const __m256 v0 = s[4 * ((2 * k) % 2) + (2 * k) / 2];
      const __m256 v1 = s[4 * ((2 * k + 1) % 2) + (2 * k + 1) / 2];
      w[k] =
          _mm256_add_ps(_mm256_permute2f128_ps(v0, v1, 0x20), _mm256_permute2f128_ps(v0, v1, 0x31));
    }
    for (int k = 0; k < 2; ++k) {
      r[k] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0x44),
                           _mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0xEE));
    }
    return _mm256_add_ps(_mm256_shuffle_ps(r[0], r[1], 0x88), _mm256_shuffle_ps(r[0], r[1], 0xDD));
  }

  // Activation quantizers (simd/quantize_act.h).
  FOLIO_SIMD_AVX2 V max_abs(V acc, V x) {  // max(acc, |x|); a NaN x keeps acc
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return {_mm256_max_ps(_mm256_andnot_ps(sign, x.lo), acc.lo),
            _mm256_max_ps(_mm256_andnot_ps(sign, x.hi), acc.hi)};
  }
  FOLIO_SIMD_AVX2 int first_abs_equal(V x, float a) {  // first lane with |x| == a, or -1
    const __m256 sign = _mm256_set1_ps(-0.0f), av = _mm256_set1_ps(a);
    const int lo = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, x.lo), av, _CMP_EQ_OQ));
    const int hi = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, x.hi), av, _CMP_EQ_OQ));
    const unsigned bits = static_cast<unsigned>(lo | hi << 8);
    return bits == 0 ? -1 : __builtin_ctz(bits);
  }
  // roundf (ties away from zero: trunc, plus sign(v) when |v - trunc v| >=
  // 0.5, exact), clamped to [-128, 127], NaN -> 0.
  FOLIO_SIMD_AVX2 __m256i round_away_i8_half(__m256 v) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 sign_one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign));
    __m256 r = _mm256_add_ps(t, _mm256_and_ps(up, sign_one));
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
    const __m256 ordered = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
    return _mm256_and_si256(_mm256_cvttps_epi32(r), _mm256_castps_si256(ordered));
  }
  FOLIO_SIMD_AVX2 I round_away_i8(V v) {
    return {round_away_i8_half(v.lo), round_away_i8_half(v.hi)};
  }
  // Round to nearest even (the default MXCSR mode), NaN -> 0, at most 127.
  FOLIO_SIMD_AVX2 __m256i round_even_max127_half(__m256 v) {
    const __m256i ordered = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
    return _mm256_min_epi32(_mm256_and_si256(_mm256_cvtps_epi32(v), ordered),
                            _mm256_set1_epi32(127));
  }
  FOLIO_SIMD_AVX2 I round_even_max127(V v) {
    return {round_even_max127_half(v.lo), round_even_max127_half(v.hi)};
  }
  FOLIO_SIMD_AVX2 I add(I a, I b) {
    return {_mm256_add_epi32(a.lo, b.lo), _mm256_add_epi32(a.hi, b.hi)};
  }
  FOLIO_SIMD_AVX2 int32_t hsum(I v) {
    __m256i s8 = _mm256_add_epi32(v.lo, v.hi);
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
  }
  // 16 lanes in [-128, 127] as 16 bytes at p.
  FOLIO_SIMD_AVX2 void store_i8(int8_t* p, I v) {
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v.lo, v.hi), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }
  FOLIO_SIMD_AVX2 float round_f16(float x) {  // x rounded to f16 (RNE) and back
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT)));
  }
  FOLIO_SIMD_AVX2 void store_f16(uint16_t* p, V v) {  // 16 lanes as f16 (f32x16_avx512.h)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8),
                     _mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

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
    FOLIO_SIMD_AVX2 V set1(float x) { return _mm256_set1_ps(x); }
    FOLIO_SIMD_AVX2 V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    // The first n values (0 < n < 8), dead lanes 0, memory past them untouched.
    FOLIO_SIMD_AVX2 V load_first(const float* p, int64_t n) {
      return _mm256_maskload_ps(p, avx2::lanes(n));
    }
    FOLIO_SIMD_AVX2 V load_f16_first(const uint16_t* p, int64_t n) {
      __m128i h = _mm_setzero_si128();
      switch (n) {  // no 16-bit masked load on AVX2
        case 7:
          h = _mm_insert_epi16(h, p[6], 6);
          [[fallthrough]];
        case 6:
          h = _mm_insert_epi16(h, p[5], 5);
          [[fallthrough]];
        case 5:
          h = _mm_insert_epi16(h, p[4], 4);
          [[fallthrough]];
        case 4:
          h = _mm_insert_epi16(h, p[3], 3);
          [[fallthrough]];
        case 3:
          h = _mm_insert_epi16(h, p[2], 2);
          [[fallthrough]];
        case 2:
          h = _mm_insert_epi16(h, p[1], 1);
          [[fallthrough]];
        default:
          h = _mm_insert_epi16(h, p[0], 0);
      }
      return _mm256_cvtph_ps(h);
    }
    FOLIO_SIMD_AVX2 V load_i8(const int8_t* p) {  // 8 int8 values, exactly
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
    }
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

  // Rope (simd/rope.h): 4 doubles, what vcvtps2pd widens 4 floats into.
  struct D {
    static constexpr int kLanes = 4;
    __m256d v;
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline D operator+(D a, D b) {
      return {_mm256_add_pd(a.v, b.v)};
    }
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline D operator-(D a, D b) {
      return {_mm256_sub_pd(a.v, b.v)};
    }
    friend FOLIO_TARGET_AVX2 __attribute__((always_inline)) inline D operator*(D a, D b) {
      return {_mm256_mul_pd(a.v, b.v)};
    }
  };
  FOLIO_SIMD_AVX2 D load_d(const double* p) { return {_mm256_loadu_pd(p)}; }
  FOLIO_SIMD_AVX2 D widen(const float* p) { return {_mm256_cvtps_pd(_mm_loadu_ps(p))}; }
  FOLIO_SIMD_AVX2 void narrow(float* p, D v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v.v)); }
  // 8 floats = 4 adjacent pairs: even elements to *even, odd to *odd.
  FOLIO_SIMD_AVX2 void widen_pairs(const float* p, D* even, D* odd) {
    const __m256i split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(p), split);
    even->v = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    odd->v = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  }
  FOLIO_SIMD_AVX2 void narrow_pairs(float* p, D even, D odd) {
    const __m128 e = _mm256_cvtpd_ps(even.v), o = _mm256_cvtpd_ps(odd.v);
    _mm_storeu_ps(p, _mm_unpacklo_ps(e, o));
    _mm_storeu_ps(p + 4, _mm_unpackhi_ps(e, o));
  }
};

}  // namespace folio::cpu::simd
