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
  // The 16-vector reduction network of hsums and its batched relatives:
  // lane L of the result combines a[L]'s lanes i and i + 8, then + 4, + 2,
  // + 1, with kOp.
  enum ReduceOp { kAddPs, kMaxPs, kAddEpi32 };
  template <ReduceOp kOp>
  FOLIO_SIMD_AVX512 __m512 combine(__m512 x, __m512 y) {
    if constexpr (kOp == kAddPs) return _mm512_add_ps(x, y);
    if constexpr (kOp == kMaxPs) return _mm512_max_ps(x, y);
    if constexpr (kOp == kAddEpi32) {
      return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(x), _mm512_castps_si512(y)));
    }
  }
  template <ReduceOp kOp>
  FOLIO_SIMD_AVX512 __m512 reduce16(const __m512 (&a)[16]) {
    __m512 w[8], u[4], r[2];
    for (int k = 0; k < 8; ++k) {
      // Network inputs v[i] = a[4 * (i % 4) + i / 4], taken in pairs (2k, 2k + 1).
      const __m512 v0 = a[4 * ((2 * k) % 4) + (2 * k) / 4];
      const __m512 v1 = a[4 * ((2 * k + 1) % 4) + (2 * k + 1) / 4];
      w[k] = combine<kOp>(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xEE));
    }
    for (int k = 0; k < 4; ++k) {
      u[k] = combine<kOp>(_mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0x88),
                          _mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0xDD));
    }
    for (int k = 0; k < 2; ++k) {
      r[k] = combine<kOp>(_mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0x44),
                          _mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0xEE));
    }
    return combine<kOp>(_mm512_shuffle_ps(r[0], r[1], 0x88), _mm512_shuffle_ps(r[0], r[1], 0xDD));
  }

  static constexpr int kLanes = 16;
  static constexpr KernelTier kTier = KernelTier::kAvx512;
  static constexpr const char* kName = "avx512";
  static constexpr bool kHasExpfLibm = true;

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
  FOLIO_SIMD_AVX512 V exp_normal(V x) { return {avx512::exp(x.v, kExpNormalFloor)}; }
  FOLIO_SIMD_AVX512 V expf_libm(V x, float (*scalar_exp)(float)) {
    return {avx512::expf_libm(x.v, scalar_exp)};
  }

  FOLIO_SIMD_AVX512 float hsum(V v) { return avx512::hsum(v.v); }
  FOLIO_SIMD_AVX512 float hmax(V v) { return avx512::hmax(v.v); }

  // Flash attention (simd/flash_attn.h): sign bits, and the sums of 16
  // vectors at once (hsum's tree for each).
  FOLIO_SIMD_AVX512 float widen_f16(uint16_t h) { return _cvtsh_ss(h); }
  FOLIO_SIMD_AVX512 V abs(V v) { return {_mm512_abs_ps(v.v)}; }
  FOLIO_SIMD_AVX512 V copysign(V a, V b) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    return {_mm512_or_ps(_mm512_andnot_ps(sign, a.v), _mm512_and_ps(sign, b.v))};
  }
  // Lane L of the result: hsum(a[L]) (a_i + a_{i+8}, then + 4, + 2, + 1). A
  // 4 x 4 transpose of the inputs makes the network's output order natural.
  FOLIO_SIMD_AVX512 V hsums(const V (&a)[16]) {
    __m512 b[16];
    for (int i = 0; i < 16; ++i) b[i] = a[i].v;
    return {reduce16<kAddPs>(b)};
  }

  // Activation quantizers (simd/quantize_act.h). Batched forms over 16
  // blocks: hsums' network with max for the blocks' largest magnitudes and
  // with integer adds for their quant sums; then the per-block forms.
  FOLIO_SIMD_AVX512 V hmaxs(const V (&a)[16]) {
    __m512 b[16];
    for (int i = 0; i < 16; ++i) b[i] = a[i].v;
    return {reduce16<kMaxPs>(b)};
  }
  FOLIO_SIMD_AVX512 I hsums(const I (&a)[16]) {
    __m512 b[16];
    for (int i = 0; i < 16; ++i) b[i] = _mm512_castsi512_ps(a[i]);
    return _mm512_castps_si512(reduce16<kAddEpi32>(b));
  }
  FOLIO_SIMD_AVX512 V recip_or_zero(V v) {  // 1 / v, 0 where v == 0
    return {_mm512_maskz_div_ps(_mm512_cmp_ps_mask(v.v, _mm512_setzero_ps(), _CMP_NEQ_OQ),
                                _mm512_set1_ps(1.0f), v.v)};
  }
  FOLIO_SIMD_AVX512 V round_f16(V v) {  // each lane as round_f16(float)
    return {_mm512_cvtph_ps(_mm512_cvtps_ph(v.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))};
  }
  FOLIO_SIMD_AVX512 V to_float(I v) { return {_mm512_cvtepi32_ps(v)}; }
  FOLIO_SIMD_AVX512 void store(int32_t* p, I v) { _mm512_storeu_si512(p, v); }
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
  // 16 lanes rounded to f16 (RNE; NaN quieted, its top mantissa bits kept:
  // core/fp16.h's f32_to_f16) at p.
  FOLIO_SIMD_AVX512 void store_f16(uint16_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }

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
  // The first n values (0 < n < 16), dead lanes 0, memory past them untouched.
  FOLIO_SIMD_AVX512 V load_first(const float* p, int64_t n) { return load(p, first(n)); }
  FOLIO_SIMD_AVX512 V load_f16_first(const uint16_t* p, int64_t n) {
    return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first(n), p))};
  }
  FOLIO_SIMD_AVX512 V load_i8(const int8_t* p) {  // 16 int8 values, exactly
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))};
  }

  // Rope (simd/rope.h): 8 doubles, what vcvtps2pd widens 8 floats into.
  struct D {
    static constexpr int kLanes = 8;
    __m512d v;
    friend FOLIO_SIMD_AVX512_OP D operator+(D a, D b) { return {_mm512_add_pd(a.v, b.v)}; }
    friend FOLIO_SIMD_AVX512_OP D operator-(D a, D b) { return {_mm512_sub_pd(a.v, b.v)}; }
    friend FOLIO_SIMD_AVX512_OP D operator*(D a, D b) { return {_mm512_mul_pd(a.v, b.v)}; }
  };
  FOLIO_SIMD_AVX512 D load_d(const double* p) { return {_mm512_loadu_pd(p)}; }
  FOLIO_SIMD_AVX512 D widen(const float* p) { return {_mm512_cvtps_pd(_mm256_loadu_ps(p))}; }
  FOLIO_SIMD_AVX512 void narrow(float* p, D v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v.v)); }
  // 16 floats = 8 adjacent pairs: even elements to *even, odd to *odd.
  FOLIO_SIMD_AVX512 void widen_pairs(const float* p, D* even, D* odd) {
    const __m512i ev = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 v = _mm512_loadu_ps(p);
    even->v = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_permutexvar_ps(ev, v)));
    odd->v = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_permutexvar_ps(od, v)));
  }
  FOLIO_SIMD_AVX512 void narrow_pairs(float* p, D even, D odd) {
    const __m512i join = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    _mm512_storeu_ps(p,
                     _mm512_permutex2var_ps(_mm512_castps256_ps512(_mm512_cvtpd_ps(even.v)), join,
                                            _mm512_castps256_ps512(_mm512_cvtpd_ps(odd.v))));
  }
};

}  // namespace folio::cpu::simd
