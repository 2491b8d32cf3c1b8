// rope (kRope, normal and neox modes) over the traits type (f32x16.h): the
// vector loop of the shared table driver (scalar/rope_tables.h), 16 pairs
// per step in double like the reference: x0, x1 widened, two products and
// a subtraction (or sum) rounded separately, no FMA, then one rounding to
// float: the reference's result exactly, on every tier. Normal mode splits
// adjacent pairs into even / odd lanes and back (load_pairs / store_pairs).
// The last half % 16 pairs go through zero-padded buffers with the same
// arithmetic.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/cpu/scalar/rope_tables.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// out0 = x0 c - x1 s, out1 = x0 s + x1 c in double, rounded once to float.
template <class S>
__attribute__((always_inline)) inline void rope_rotate(typename S::V x0f, typename S::V x1f,
                                                       const double* c, const double* s,
                                                       typename S::V* o0, typename S::V* o1) {
  const typename S::D x0 = S::widen(x0f), x1 = S::widen(x1f);
  const typename S::D cv = S::load_f64(c), sv = S::load_f64(s);
  *o0 = S::narrow(x0 * cv - x1 * sv);
  *o1 = S::narrow(x0 * sv + x1 * cv);
}

// Every pair of one row: 16 at a time, then the rest through buffers.
template <class S>
int64_t rope_pairs(const float* x, float* d, int64_t half, bool neox, const double* c,
                   const double* s) {
  using V = typename S::V;
  int64_t i = 0;
  if (neox) {
    for (; i + 16 <= half; i += 16) {
      V o0, o1;
      rope_rotate<S>(S::load(x + i), S::load(x + i + half), c + i, s + i, &o0, &o1);
      S::store(d + i, o0);
      S::store(d + i + half, o1);
    }
  } else {
    for (; i + 16 <= half; i += 16) {
      V e, o, o0, o1;
      S::load_pairs(x + 2 * i, &e, &o);
      rope_rotate<S>(e, o, c + i, s + i, &o0, &o1);
      S::store_pairs(d + 2 * i, o0, o1);
    }
  }
  if (i < half) {
    const int64_t n = half - i;
    float x0[16] = {}, x1[16] = {}, y0[16], y1[16];
    double cb[16] = {}, sb[16] = {};
    std::memcpy(cb, c + i, static_cast<size_t>(n) * sizeof(double));
    std::memcpy(sb, s + i, static_cast<size_t>(n) * sizeof(double));
    for (int64_t k = 0; k < n; ++k) {
      x0[k] = neox ? x[i + k] : x[2 * (i + k)];
      x1[k] = neox ? x[i + k + half] : x[2 * (i + k) + 1];
    }
    V o0, o1;
    rope_rotate<S>(S::load(x0), S::load(x1), cb, sb, &o0, &o1);
    S::store(y0, o0);
    S::store(y1, o1);
    for (int64_t k = 0; k < n; ++k) {
      d[neox ? i + k : 2 * (i + k)] = y0[k];
      d[neox ? i + k + half : 2 * (i + k) + 1] = y1[k];
    }
  }
  return half;
}

template <class S>
Status rope(const Op& op, const KernelContext& ctx) {
  return rope_tables(op, ctx, rope_pairs<S>);
}

}  // namespace folio::cpu::simd
