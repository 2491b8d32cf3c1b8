// simd::Neon, the NEON traits type of f32x16.h: 16 lanes as four q
// registers (lanes 0-3, 4-7, 8-11, 12-15). Advanced SIMD is in the ARMv8-A
// baseline: no target attribute. A tail (M: the live lane count) goes
// through a zeroed 16-float buffer, so dead lanes read as 0 and their memory
// is never touched. hsum adds q0 + q2 and q1 + q3, then the two, then lanes
// (0 + 2, 1 + 3) and the last pair: AVX-512's order, not vaddvq's.
#pragma once

#include <arm_neon.h>

#include <cstring>

#include "backend/cpu/kernel.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/simd/f32x16.h"

#define FOLIO_INLINE_NEON_OP __attribute__((always_inline)) inline

namespace folio::cpu::simd {

struct Neon {
  static constexpr int kLanes = 16;
  static constexpr KernelTier kTier = KernelTier::kNeon;
  static constexpr const char* kName = "neon";
  static constexpr bool kHasExpfLibm = false;

  struct V {
    float32x4_t q[4];
    friend FOLIO_INLINE_NEON_OP V operator+(V a, V b) {
      return {{vaddq_f32(a.q[0], b.q[0]), vaddq_f32(a.q[1], b.q[1]), vaddq_f32(a.q[2], b.q[2]),
               vaddq_f32(a.q[3], b.q[3])}};
    }
    friend FOLIO_INLINE_NEON_OP V operator-(V a, V b) {
      return {{vsubq_f32(a.q[0], b.q[0]), vsubq_f32(a.q[1], b.q[1]), vsubq_f32(a.q[2], b.q[2]),
               vsubq_f32(a.q[3], b.q[3])}};
    }
    friend FOLIO_INLINE_NEON_OP V operator*(V a, V b) {
      return {{vmulq_f32(a.q[0], b.q[0]), vmulq_f32(a.q[1], b.q[1]), vmulq_f32(a.q[2], b.q[2]),
               vmulq_f32(a.q[3], b.q[3])}};
    }
    friend FOLIO_INLINE_NEON_OP V operator/(V a, V b) {
      return {{vdivq_f32(a.q[0], b.q[0]), vdivq_f32(a.q[1], b.q[1]), vdivq_f32(a.q[2], b.q[2]),
               vdivq_f32(a.q[3], b.q[3])}};
    }
  };
  using M = int64_t;  // live lanes, 0..16
  struct I {          // 16 int32 lanes
    int32x4_t q[4];
  };

  FOLIO_INLINE_NEON V zero() { return set1(0.0f); }
  FOLIO_INLINE_NEON V set1(float x) {
    const float32x4_t v = vdupq_n_f32(x);
    return {{v, v, v, v}};
  }
  FOLIO_INLINE_NEON V load(const float* p) {
    return {{vld1q_f32(p), vld1q_f32(p + 4), vld1q_f32(p + 8), vld1q_f32(p + 12)}};
  }
  FOLIO_INLINE_NEON void store(float* p, V v) {
    vst1q_f32(p, v.q[0]);
    vst1q_f32(p + 4, v.q[1]);
    vst1q_f32(p + 8, v.q[2]);
    vst1q_f32(p + 12, v.q[3]);
  }
  FOLIO_INLINE_NEON M first(int64_t n) { return n >= 16 ? 16 : n; }
  FOLIO_INLINE_NEON V load(const float* p, M m) {
    float buf[16] = {};
    std::memcpy(buf, p, static_cast<size_t>(m) * sizeof(float));
    return load(buf);
  }
  FOLIO_INLINE_NEON void store(float* p, V v, M m) {
    float buf[16];
    store(buf, v);
    std::memcpy(p, buf, static_cast<size_t>(m) * sizeof(float));
  }
  FOLIO_INLINE_NEON V keep(V v, M m) { return select(m, v, zero()); }
  FOLIO_INLINE_NEON V select(M m, V a, V b) {
    static const uint32_t kIota[4] = {0, 1, 2, 3};
    const uint32x4_t iota = vld1q_u32(kIota);
    V r;
    for (int j = 0; j < 4; ++j) {
      const int64_t left = m - 4 * j < 0 ? 0 : m - 4 * j;
      const uint32x4_t live = vcltq_u32(iota, vdupq_n_u32(static_cast<uint32_t>(left)));
      r.q[j] = vbslq_f32(live, a.q[j], b.q[j]);
    }
    return r;
  }

  FOLIO_INLINE_NEON V add(V a, V b) { return a + b; }
  FOLIO_INLINE_NEON V sub(V a, V b) { return a - b; }
  FOLIO_INLINE_NEON V mul(V a, V b) { return a * b; }
  FOLIO_INLINE_NEON V div(V a, V b) { return a / b; }
  FOLIO_INLINE_NEON V min(V a, V b) {
    return {{vminq_f32(a.q[0], b.q[0]), vminq_f32(a.q[1], b.q[1]), vminq_f32(a.q[2], b.q[2]),
             vminq_f32(a.q[3], b.q[3])}};
  }
  FOLIO_INLINE_NEON V max(V a, V b) {
    return {{vmaxq_f32(a.q[0], b.q[0]), vmaxq_f32(a.q[1], b.q[1]), vmaxq_f32(a.q[2], b.q[2]),
             vmaxq_f32(a.q[3], b.q[3])}};
  }
  FOLIO_INLINE_NEON V fma(V a, V b, V c) {
    return {{vfmaq_f32(c.q[0], a.q[0], b.q[0]), vfmaq_f32(c.q[1], a.q[1], b.q[1]),
             vfmaq_f32(c.q[2], a.q[2], b.q[2]), vfmaq_f32(c.q[3], a.q[3], b.q[3])}};
  }
  FOLIO_INLINE_NEON V fnma(V a, V b, V c) {
    return {{vfmsq_f32(c.q[0], a.q[0], b.q[0]), vfmsq_f32(c.q[1], a.q[1], b.q[1]),
             vfmsq_f32(c.q[2], a.q[2], b.q[2]), vfmsq_f32(c.q[3], a.q[3], b.q[3])}};
  }
  FOLIO_INLINE_NEON V exp(V x) {
    return {{neon::exp(x.q[0]), neon::exp(x.q[1]), neon::exp(x.q[2]), neon::exp(x.q[3])}};
  }
  FOLIO_INLINE_NEON V exp_normal(V x) {
    return {{neon::exp(x.q[0], kExpNormalFloor), neon::exp(x.q[1], kExpNormalFloor),
             neon::exp(x.q[2], kExpNormalFloor), neon::exp(x.q[3], kExpNormalFloor)}};
  }

  FOLIO_INLINE_NEON float hsum(V v) {
    const float32x4_t a = vaddq_f32(vaddq_f32(v.q[0], v.q[2]), vaddq_f32(v.q[1], v.q[3]));
    const float32x2_t b = vadd_f32(vget_low_f32(a), vget_high_f32(a));
    return vget_lane_f32(b, 0) + vget_lane_f32(b, 1);
  }
  FOLIO_INLINE_NEON float hmax(V v) {
    const float32x4_t a = vmaxq_f32(vmaxq_f32(v.q[0], v.q[2]), vmaxq_f32(v.q[1], v.q[3]));
    const float32x2_t b = vmax_f32(vget_low_f32(a), vget_high_f32(a));
    return vmaxv_f32(b);
  }

  // Flash attention (simd/flash_attn.h): sign bits, and the sums of 4
  // vectors at once (hsum's order for each: q0 + q2, q1 + q3, the two, then
  // lanes 0 + 2, 1 + 3 and the last pair).
  FOLIO_INLINE_NEON float widen_f16(uint16_t h) { return neon::half_to_float(&h); }
  FOLIO_INLINE_NEON V abs(V v) {
    return {{vabsq_f32(v.q[0]), vabsq_f32(v.q[1]), vabsq_f32(v.q[2]), vabsq_f32(v.q[3])}};
  }
  FOLIO_INLINE_NEON V copysign(V a, V b) {
    const uint32x4_t sign = vdupq_n_u32(0x80000000u);
    V r;
    for (int k = 0; k < 4; ++k) r.q[k] = vbslq_f32(sign, b.q[k], a.q[k]);
    return r;
  }
  FOLIO_INLINE_NEON float32x4_t hsums(const V (&a)[4]) {
    float32x4_t h[4];
    for (int k = 0; k < 4; ++k) {
      h[k] = vaddq_f32(vaddq_f32(a[k].q[0], a[k].q[2]), vaddq_f32(a[k].q[1], a[k].q[3]));
    }
    // u = (h0[0] + h0[2], h0[1] + h0[3], h1[0] + h1[2], h1[1] + h1[3]), w for h2, h3.
    const float32x4_t u = vaddq_f32(vcombine_f32(vget_low_f32(h[0]), vget_low_f32(h[1])),
                                    vcombine_f32(vget_high_f32(h[0]), vget_high_f32(h[1])));
    const float32x4_t w = vaddq_f32(vcombine_f32(vget_low_f32(h[2]), vget_low_f32(h[3])),
                                    vcombine_f32(vget_high_f32(h[2]), vget_high_f32(h[3])));
    return vpaddq_f32(u, w);
  }

  // Activation quantizers (simd/quantize_act.h).
  FOLIO_INLINE_NEON V max_abs(V acc, V x) {  // max(acc, |x|); a NaN x keeps acc
    V r;
    for (int k = 0; k < 4; ++k) r.q[k] = vmaxnmq_f32(acc.q[k], vabsq_f32(x.q[k]));
    return r;
  }
  FOLIO_INLINE_NEON int first_abs_equal(V x, float a) {  // first lane with |x| == a, or -1
    float buf[16];
    store(buf, x);
    for (int i = 0; i < 16; ++i) {
      if (buf[i] == a || buf[i] == -a) return i;
    }
    return -1;
  }
  // roundf (FCVTAS: ties away from zero, NaN -> 0), clamped to [-128, 127].
  FOLIO_INLINE_NEON I round_away_i8(V x) {
    I r;
    for (int k = 0; k < 4; ++k) {
      r.q[k] = vminq_s32(vmaxq_s32(vcvtaq_s32_f32(x.q[k]), vdupq_n_s32(-128)), vdupq_n_s32(127));
    }
    return r;
  }
  // Round to nearest even (FCVTNS, NaN -> 0), at most 127.
  FOLIO_INLINE_NEON I round_even_max127(V x) {
    I r;
    for (int k = 0; k < 4; ++k) r.q[k] = vminq_s32(vcvtnq_s32_f32(x.q[k]), vdupq_n_s32(127));
    return r;
  }
  FOLIO_INLINE_NEON I add(I a, I b) {
    I r;
    for (int k = 0; k < 4; ++k) r.q[k] = vaddq_s32(a.q[k], b.q[k]);
    return r;
  }
  FOLIO_INLINE_NEON int32_t hsum(I v) {
    return vaddvq_s32(vaddq_s32(vaddq_s32(v.q[0], v.q[1]), vaddq_s32(v.q[2], v.q[3])));
  }
  // 16 lanes in [-128, 127] as 16 bytes at p.
  FOLIO_INLINE_NEON void store_i8(int8_t* p, I v) {
    const int16x8_t lo = vcombine_s16(vqmovn_s32(v.q[0]), vqmovn_s32(v.q[1]));
    const int16x8_t hi = vcombine_s16(vqmovn_s32(v.q[2]), vqmovn_s32(v.q[3]));
    vst1q_s8(p, vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
  }
  FOLIO_INLINE_NEON float round_f16(float x) {  // x rounded to f16 (RNE) and back
    return static_cast<float>(static_cast<float16_t>(x));
  }
  FOLIO_INLINE_NEON void store_f16(uint16_t* p, V v) {  // 16 lanes as f16 (f32x16_avx512.h)
    for (int i = 0; i < 4; ++i) vst1_u16(p + 4 * i, vreinterpret_u16_f16(vcvt_f16_f32(v.q[i])));
  }

  // Register parts (see f32x16_avx2.h): V as four q registers, lanes
  // [4i, 4i + 4) in part i.
  struct Quarter {
    static constexpr int kLanes = 4;
    using V = float32x4_t;
    FOLIO_INLINE_NEON V zero() { return vdupq_n_f32(0.0f); }
    FOLIO_INLINE_NEON V set1(float x) { return vdupq_n_f32(x); }
    FOLIO_INLINE_NEON V load(const float* p) { return vld1q_f32(p); }
    FOLIO_INLINE_NEON void store(float* p, V v) { vst1q_f32(p, v); }
    FOLIO_INLINE_NEON V mul(V a, V b) { return vmulq_f32(a, b); }
    FOLIO_INLINE_NEON V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
    FOLIO_INLINE_NEON V load_f16(const uint16_t* p) { return neon::load_f16x4(p); }
    FOLIO_INLINE_NEON V load_bf16(const uint16_t* p) { return neon::load_bf16x4(p); }
    // The first n values (0 < n < 4), dead lanes 0, memory past them untouched.
    FOLIO_INLINE_NEON V load_first(const float* p, int64_t n) {
      float32x4_t v = vdupq_n_f32(0.0f);
      v = vld1q_lane_f32(p, v, 0);
      if (n > 1) v = vld1q_lane_f32(p + 1, v, 1);
      if (n > 2) v = vld1q_lane_f32(p + 2, v, 2);
      return v;
    }
    FOLIO_INLINE_NEON V load_f16_first(const uint16_t* p, int64_t n) {
      uint16x4_t h = vdup_n_u16(0);
      h = vld1_lane_u16(p, h, 0);
      if (n > 1) h = vld1_lane_u16(p + 1, h, 1);
      if (n > 2) h = vld1_lane_u16(p + 2, h, 2);
      return vcvt_f32_f16(vreinterpret_f16_u16(h));
    }
    FOLIO_INLINE_NEON V load_i8(const int8_t* p) {  // 4 int8 values, exactly
      int32_t w;
      std::memcpy(&w, p, sizeof(w));
      const int16x8_t h = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(w)));
      return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
    }
  };
  using Part = Quarter;
  static constexpr int kParts = 4;
  FOLIO_INLINE_NEON V join(const float32x4_t (&p)[4]) { return {{p[0], p[1], p[2], p[3]}}; }

  // Rope (simd/rope.h): 4 doubles as two q registers.
  struct D {
    static constexpr int kLanes = 4;
    float64x2_t lo, hi;
    friend FOLIO_INLINE_NEON_OP D operator+(D a, D b) {
      return {vaddq_f64(a.lo, b.lo), vaddq_f64(a.hi, b.hi)};
    }
    friend FOLIO_INLINE_NEON_OP D operator-(D a, D b) {
      return {vsubq_f64(a.lo, b.lo), vsubq_f64(a.hi, b.hi)};
    }
    friend FOLIO_INLINE_NEON_OP D operator*(D a, D b) {
      return {vmulq_f64(a.lo, b.lo), vmulq_f64(a.hi, b.hi)};
    }
  };
  FOLIO_INLINE_NEON D load_d(const double* p) { return {vld1q_f64(p), vld1q_f64(p + 2)}; }
  FOLIO_INLINE_NEON D widen4(float32x4_t x) {
    return {vcvt_f64_f32(vget_low_f32(x)), vcvt_high_f64_f32(x)};
  }
  FOLIO_INLINE_NEON float32x4_t narrow4(D v) { return vcvt_high_f32_f64(vcvt_f32_f64(v.lo), v.hi); }
  FOLIO_INLINE_NEON D widen(const float* p) { return widen4(vld1q_f32(p)); }
  FOLIO_INLINE_NEON void narrow(float* p, D v) { vst1q_f32(p, narrow4(v)); }
  // 8 floats = 4 adjacent pairs (LD2 / ST2): even elements to *even, odd to *odd.
  FOLIO_INLINE_NEON void widen_pairs(const float* p, D* even, D* odd) {
    const float32x4x2_t v = vld2q_f32(p);
    *even = widen4(v.val[0]);
    *odd = widen4(v.val[1]);
  }
  FOLIO_INLINE_NEON void narrow_pairs(float* p, D even, D odd) {
    float32x4x2_t o;
    o.val[0] = narrow4(even);
    o.val[1] = narrow4(odd);
    vst2q_f32(p, o);
  }
};

}  // namespace folio::cpu::simd
