// Rope (kRope, normal and neox modes) over the traits type (f32x16.h): the
// vector loop of the shared table driver (drivers/rope_tables.h), which owns
// the angle tables, the rest of each row and the thread split.
//
// S::D::kLanes pairs a step, in double like the reference: x0, x1 widened
// (S::widen; adjacent pairs split into even and odd elements by
// S::widen_pairs), two products and a subtraction (or sum) rounded
// separately, no FMA (the region switches contraction off), then one
// rounding to float (S::narrow, S::narrow_pairs): the reference's result
// exactly, on every tier. D is the tier's f64 width (AVX-512 8 lanes, AVX2
// and NEON 4), the half of a 16-lane step that the widening and narrowing
// conversions read and write whole: a 16-pair step would spend its time on
// the extracts and inserts around them.
#pragma once

#include <cstdint>

#include "backend/cpu/drivers/rope_tables.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// out0 = x0 c - x1 s, out1 = x0 s + x1 c for D::kLanes pairs.
template <class S>
void rope_rotate(typename S::D x0, typename S::D x1, const double* c, const double* s,
                 typename S::D* o0, typename S::D* o1) {
  const typename S::D cv = S::load_d(c), sv = S::load_d(s);
  *o0 = x0 * cv - x1 * sv;
  *o1 = x0 * sv + x1 * cv;
}

// Pairs [0, n) of one row, n the largest multiple of D::kLanes <= half
// (RopePairsFn).
template <class S>
int64_t rope_pairs(const float* x, float* d, int64_t half, bool neox, const double* c,
                   const double* s) {
  using D = typename S::D;
  constexpr int kStep = D::kLanes;
  int64_t i = 0;
  if (neox) {
    for (; i + kStep <= half; i += kStep) {
      D o0, o1;
      rope_rotate<S>(S::widen(x + i), S::widen(x + i + half), c + i, s + i, &o0, &o1);
      S::narrow(d + i, o0);
      S::narrow(d + i + half, o1);
    }
  } else {
    for (; i + kStep <= half; i += kStep) {
      D x0, x1, o0, o1;
      S::widen_pairs(x + 2 * i, &x0, &x1);
      rope_rotate<S>(x0, x1, c + i, s + i, &o0, &o1);
      S::narrow_pairs(d + 2 * i, o0, o1);
    }
  }
  return i;
}

template <class S>
Status rope(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, rope_pairs<S>);
}

}  // namespace folio::cpu::simd
