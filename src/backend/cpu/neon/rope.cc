// NEON rope (kRope, normal and neox modes): the vector loop of the shared
// table driver (drivers/rope_tables.h), 4 pairs per step in double (two
// 2-lane halves) like the reference: x0, x1 widened, two products and a
// subtraction (or sum) rounded separately, no FMA, then one rounding to
// float: the reference's result exactly. Normal mode splits adjacent pairs
// with LD2 / ST2.
#include <cstdint>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/drivers/rope_tables.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {

namespace {

// Two pairs: out0 = x0 c - x1 s, out1 = x0 s + x1 c in double.
FOLIO_INLINE_NEON void rotate2(float64x2_t x0, float64x2_t x1, const double* c, const double* s,
                               float64x2_t* o0, float64x2_t* o1) {
  const float64x2_t cv = vld1q_f64(c), sv = vld1q_f64(s);
  *o0 = vsubq_f64(vmulq_f64(x0, cv), vmulq_f64(x1, sv));
  *o1 = vaddq_f64(vmulq_f64(x0, sv), vmulq_f64(x1, cv));
}

// Four pairs (x0 lanes, x1 lanes) rounded once to float.
FOLIO_INLINE_NEON void rotate4(float32x4_t x0, float32x4_t x1, const double* c, const double* s,
                               float32x4_t* o0, float32x4_t* o1) {
  float64x2_t a0, a1, b0, b1;
  rotate2(vcvt_f64_f32(vget_low_f32(x0)), vcvt_f64_f32(vget_low_f32(x1)), c, s, &a0, &a1);
  rotate2(vcvt_high_f64_f32(x0), vcvt_high_f64_f32(x1), c + 2, s + 2, &b0, &b1);
  *o0 = vcvt_high_f32_f64(vcvt_f32_f64(a0), b0);
  *o1 = vcvt_high_f32_f64(vcvt_f32_f64(a1), b1);
}

// Pairs [0, 4 * (half / 4)) of one row, 4 at a time.
int64_t rope_pairs(const float* x, float* d, int64_t half, bool neox, const double* c,
                   const double* s) {
  int64_t i = 0;
  if (neox) {
    for (; i + 4 <= half; i += 4) {
      float32x4_t o0, o1;
      rotate4(vld1q_f32(x + i), vld1q_f32(x + i + half), c + i, s + i, &o0, &o1);
      vst1q_f32(d + i, o0);
      vst1q_f32(d + i + half, o1);
    }
  } else {
    for (; i + 4 <= half; i += 4) {
      const float32x4x2_t v = vld2q_f32(x + 2 * i);  // even, odd elements
      float32x4x2_t o;
      rotate4(v.val[0], v.val[1], c + i, s + i, &o.val[0], &o.val[1]);
      vst2q_f32(d + 2 * i, o);
    }
  }
  return i;
}

}  // namespace

Status rope_neon(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, rope_pairs);
}

}  // namespace folio::cpu
