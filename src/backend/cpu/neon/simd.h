// Small NEON helpers shared by the kernels in this folder (64-bit ARM only).
// Advanced SIMD is part of the ARMv8-A baseline, so these need no target
// attribute; the one instruction beyond it, SDOT (FEAT_DotProd), is emitted
// only by SdotI8 below, whose callers are chosen at run time (the
// neon_dotprod tier), and written as inline assembly so that no function
// needs a wider target than the baseline; likewise SMMLA (FEAT_I8MM) in
// MmlaI8, for the neon_i8mm tier.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#define FOLIO_INLINE_NEON __attribute__((always_inline)) static inline

namespace folio::cpu::neon {

FOLIO_INLINE_NEON float hsum(float32x4_t v) { return vaddvq_f32(v); }

// f32 of the f16 at p (unaligned).
FOLIO_INLINE_NEON float half_to_float(const void* p) {
  float16_t h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

// Four f16 at p widened to f32.
FOLIO_INLINE_NEON float32x4_t load_f16x4(const uint16_t* p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

// Four bf16 at p widened to f32 (bf16 is the top half of an f32).
FOLIO_INLINE_NEON float32x4_t load_bf16x4(const uint16_t* p) {
  return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

// Integer dot products of signed bytes, two ways with the same results:
//   acc.lane[i] += sum over a group of four byte products.
// SdotI8: one SDOT (FEAT_DotProd): lane i takes bytes 4i..4i+3.
// WidenI8: SMULL / SMLAL2 into i16 pairs (bytes i and i + 8), then SADALP
//   into i32: |a|, |b| <= 128 keep each i16 pair sum within 2 * 128 * 127.
// The lanes hold different partial sums, but callers only use the total
// (vaddvq_s32), which is the exact integer dot product either way.
struct SdotI8 {
  FOLIO_INLINE_NEON int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    // The assembler accepts SDOT only for an architecture that has it: the
    // directive allows it for this instruction and restores the build's
    // baseline (armv8-a: the project sets no -march) after it.
    __asm__(".arch armv8.2-a+dotprod\n\tsdot %0.4s, %1.16b, %2.16b\n\t.arch armv8-a"
            : "+w"(acc)
            : "w"(a), "w"(b));
    return acc;
  }
};
struct WidenI8 {
  FOLIO_INLINE_NEON int32x4_t dot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    const int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), a, b);
    return vpadalq_s16(acc, p);
  }
};

// MmlaI8 (the neon_i8mm tier, FEAT_I8MM): dot as SdotI8 for single pairs,
// and dot2x2 for a tile of two weight rows by two activation rows, two
// SMMLA: acc += [w0.x0, w0.x1, w1.x0, w1.x1], the exact dot products of 16
// signed bytes each (SMMLA multiplies a 2 x 8 by an 8 x 2 byte matrix, so
// each operand interleaves the two rows' 8-byte halves). The tiles that use
// it get the integers the other tiers get, hence the same bits.
struct MmlaI8 : SdotI8 {
  FOLIO_INLINE_NEON int32x4_t smmla(int32x4_t acc, int8x16_t a, int8x16_t b) {
    __asm__(".arch armv8.6-a+i8mm\n\tsmmla %0.4s, %1.16b, %2.16b\n\t.arch armv8-a"
            : "+w"(acc)
            : "w"(a), "w"(b));
    return acc;
  }
  FOLIO_INLINE_NEON int32x4_t dot2x2(int32x4_t acc, int8x16_t w0, int8x16_t w1, int8x16_t x0,
                                     int8x16_t x1) {
    const int64x2_t a0 = vreinterpretq_s64_s8(w0), a1 = vreinterpretq_s64_s8(w1);
    const int64x2_t b0 = vreinterpretq_s64_s8(x0), b1 = vreinterpretq_s64_s8(x1);
    acc = smmla(acc, vreinterpretq_s8_s64(vzip1q_s64(a0, a1)),
                vreinterpretq_s8_s64(vzip1q_s64(b0, b1)));
    return smmla(acc, vreinterpretq_s8_s64(vzip2q_s64(a0, a1)),
                 vreinterpretq_s8_s64(vzip2q_s64(b0, b1)));
  }
};

// Whether a dot policy has the 2 x 2 tile product.
template <class D>
inline constexpr bool kHasDot2x2 = requires(int32x4_t a, int8x16_t b) { D::dot2x2(a, b, b, b, b); };

// exp(x) with the arithmetic of avx2::exp (simd.h there): Cody-Waite split
// of ln2, degree-7 Taylor polynomial, 2^n as two normal power-of-two
// factors; below -104 (or floor) the lane is 0, x clamped to [-160, 160],
// NaN stays NaN.
FOLIO_INLINE_NEON float32x4_t exp(float32x4_t x, float floor = -104.0f) {
  const uint32x4_t live = vmvnq_u32(vcltq_f32(x, vdupq_n_f32(floor)));  // NaN: live
  x = vminq_f32(vdupq_n_f32(160.0f), vmaxq_f32(vdupq_n_f32(-160.0f), x));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
  r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187045e-06f));
  float32x4_t p = vdupq_n_f32(1.0f / 5040);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 720), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t ni = vandq_s32(vcvtq_s32_f32(n), vreinterpretq_s32_u32(live));
  const int32x4_t n1 = vshrq_n_s32(ni, 1);  // |n| <= 231: both factors are normal
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vreinterpretq_f32_u32(
      vandq_u32(vreinterpretq_u32_f32(vmulq_f32(vmulq_f32(p, s1), s2)), live));
}

// 4 x 4 f32 transpose (pure data movement), for kernels whose lanes are
// rows that must keep each row's reduction order (gated DeltaNet, the
// Mamba-2 scan): r[i] holds row i on entry and column i on exit.
FOLIO_INLINE_NEON void transpose4(float32x4_t r[4]) {
  const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
  const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
  r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
  r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
  r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

}  // namespace folio::cpu::neon
