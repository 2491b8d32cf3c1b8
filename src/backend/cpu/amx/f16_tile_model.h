// The arithmetic of the AMX F16 mul_mat (amx/mul_mat_bf16_amx.cc, F16
// weights on the TDPBF16PS tiles), in scalar C++: the exact bits the tiles
// give, for the kernel's fallback, the tile emulator's tests and the tests
// that hold the real instructions to it.
//
// An F16 weight w (11 significant bits) splits exactly into BF16 parts
// wh + wl: wh its f32 value truncated to BF16 (8 significant bits), wl the
// remainder (at most 3 significant bits, at least 2^-24 in magnitude, so a
// normal BF16). An f32 activation x splits into ah = x rounded to BF16
// (vcvtneps2bf16) and al = x - ah rounded to BF16, which leaves about 2^-17
// of x. Then w * x ~= wh * ah + wh * al + wl * ah, the dropped wl * al being
// about 2^-17 of the product: three tile products per 32 elements of K,
// NMSE near 1e-11 against the exact sum on uniform data (llama.cpp rounds
// the activations to F16, 11 significant bits, for F16 weights).
//
// Per 32 elements of K, from c = 0, ascending:
//   c = dpbf16ps(c, ah, wh); c = dpbf16ps(c, al, wh); c = dpbf16ps(c, ah, wl)
// (amx_bf16::dpbf16ps; each product is exact and the instruction symmetric
// in its operands, so the kernel may take either as the A tile).
//
// Non-finite values: wl = w - wh is NaN for an infinite or NaN weight (wh:
// the infinity, or the truncated NaN, which may read as infinite), so such
// a weight gives NaN outputs, as inf * 0 would. An activation whose ah is
// infinite or NaN has al = 0 (so inf * w stays inf instead of inf - inf).
#pragma once

#include <cstdint>

#include "backend/cpu/amx/bf16_tile_model.h"
#include "core/fp16.h"

namespace folio::cpu::amx_f16 {

using amx_bf16::kStep;

struct Split {
  uint16_t hi, lo;
};

// An F16 weight's exact BF16 parts.
inline Split split_weight(uint16_t h) {
  const float f = f16_to_f32(h);
  const uint32_t u = f32_bits(f);
  return {static_cast<uint16_t>(u >> 16),
          static_cast<uint16_t>(f32_bits(f - bits_f32(u & 0xffff0000u)) >> 16)};
}

// An f32 activation's BF16 parts: ah by vcvtneps2bf16, al the rounded rest.
inline Split split_activation(float x) {
  const uint16_t hi = amx_bf16::act_to_bf16(x);
  if ((hi & 0x7f80u) == 0x7f80u) return {hi, 0};
  return {hi, amx_bf16::act_to_bf16(x - bf16_to_f32(hi))};
}

// One step of the kernel: c after the three tile products of n <= kStep
// elements (the rest of the step zero) of F16 weights w and the activation
// parts ah, al (split_activation's).
inline float step_model(float c, const uint16_t* w, const uint16_t* ah, const uint16_t* al,
                        int64_t n) {
  uint16_t a_h[kStep] = {}, a_l[kStep] = {}, wh[kStep] = {}, wl[kStep] = {};
  for (int64_t j = 0; j < n; ++j) {
    const Split b = split_weight(w[j]);
    a_h[j] = ah[j];
    a_l[j] = al[j];
    wh[j] = b.hi;
    wl[j] = b.lo;
  }
  constexpr int kPairs = static_cast<int>(kStep / 2);
  c = amx_bf16::dpbf16ps(c, a_h, wh, kPairs);
  c = amx_bf16::dpbf16ps(c, a_l, wh, kPairs);
  return amx_bf16::dpbf16ps(c, a_h, wl, kPairs);
}

// What the kernel gives for dot(w, x) over k elements (w F16).
inline float dot_model(const uint16_t* w, const float* x, int64_t k) {
  float c = 0.0f;
  for (int64_t i = 0; i < k; i += kStep) {
    const int64_t n = k - i < kStep ? k - i : kStep;
    uint16_t ah[kStep] = {}, al[kStep] = {};
    for (int64_t j = 0; j < n; ++j) {
      const Split a = split_activation(x[i + j]);
      ah[j] = a.hi;
      al[j] = a.lo;
    }
    c = step_model(c, w + i, ah, al, n);
  }
  return c;
}

}  // namespace folio::cpu::amx_f16
