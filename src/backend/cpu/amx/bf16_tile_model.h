// The arithmetic of the AMX BF16 mul_mat (amx/mul_mat_bf16_amx.cc), in
// scalar C++: the exact bits its tiles give, for the kernel's fallback, the
// tile emulator (tests/backend/amx_emulation/) and the tests that hold the
// real instructions to it.
//
// Activations: f32 -> bf16 as vcvtneps2bf16 does: round to nearest even,
// f32 denormals to (signed) zero, NaN quieted.
//
// TDPBF16PS, per output element and per instruction of P pairs (the kernel's
// instructions always take 16 pairs, 32 elements of K), as measured on a
// Sapphire Rapids Xeon against 51,200 random outputs per shape (every bit
// equal): the even products and the odd products are summed in two separate
// chains, each a fused multiply-add per pair in ascending order starting
// from zero, and the accumulator then adds their sum:
//   E = fma(a[2p], b[2p], E), O = fma(a[2p + 1], b[2p + 1], O), p = 0..P-1
//   C = C + (E + O)
// Every input is read with denormals as zero (bf16 operands, the f32
// accumulator) and every rounded result (round to nearest even) flushes a
// denormal to zero. The hardware's other orders (one chain, pair sums
// rounded once, one exact sum per instruction) each disagreed on a quarter
// to a third of the outputs.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/fp16.h"

namespace folio::cpu::amx_bf16 {

// K elements per TDPBF16PS of the kernel (an A tile row of 64 bytes).
inline constexpr int64_t kStep = 32;

// Denormal -> zero of the same sign.
inline float flush(float f) {
  const uint32_t u = f32_bits(f);
  return (u & 0x7f800000u) == 0 ? bits_f32(u & 0x80000000u) : f;
}

// A bf16 operand as the tile reads it (denormals as zero).
inline float bf16_operand(uint16_t b) {
  return flush(bits_f32(static_cast<uint32_t>(b) << 16));
}

// vcvtneps2bf16 on one value.
inline uint16_t act_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  if ((u & 0x7f800000u) == 0) return static_cast<uint16_t>((u & 0x80000000u) >> 16);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// One TDPBF16PS output element: c after the instruction over `pairs`
// (a[2p], a[2p + 1]) x (b[2p], b[2p + 1]).
inline float dpbf16ps(float c, const uint16_t* a, const uint16_t* b, int pairs) {
  float e = 0.0f, o = 0.0f;
  for (int p = 0; p < pairs; ++p) {
    e = flush(std::fma(bf16_operand(a[2 * p]), bf16_operand(b[2 * p]), e));
    o = flush(std::fma(bf16_operand(a[2 * p + 1]), bf16_operand(b[2 * p + 1]), o));
  }
  return flush(flush(c) + flush(e + o));
}

// What the kernel gives for dot(w, x) over k elements: x rounded by
// act_to_bf16, both zero-padded to a multiple of kStep, one dpbf16ps per
// kStep elements from c = 0.
inline float dot_model(const uint16_t* w, const float* x, int64_t k) {
  float c = 0.0f;
  for (int64_t i = 0; i < k; i += kStep) {
    uint16_t a[kStep] = {}, b[kStep] = {};
    for (int64_t j = 0; j < kStep && i + j < k; ++j) {
      a[j] = act_to_bf16(x[i + j]);
      b[j] = w[i + j];
    }
    c = dpbf16ps(c, a, b, static_cast<int>(kStep / 2));
  }
  return c;
}

}  // namespace folio::cpu::amx_bf16
