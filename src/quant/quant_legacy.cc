// Legacy 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the
// activation format Q8_1. Layouts in blocks.h.
//
// Quantizers follow the gguf package (gguf.quants), which mirrors ggml's
// quantize_row_*_ref: every intermediate is an f32 operation in the same
// order (x * id, then + 8.5; (x - min) * id, then + 0.5), so the bytes match.
// Rounding: Q4_x/Q5_x truncate after adding 0.5 (ties go up); Q8_0/Q8_1 use
// roundf (ties away from zero), which gguf reproduces with np_roundf.
// One deliberate choice: the sign of a zero scale. For an all-zero block the
// gguf package takes `max` from the first element (so a leading -0.0 gives
// d = +0.0) while ggml C starts from +0.0 (d = -0.0 always); we follow gguf.
// Q4_1/Q5_1 min/max keep the first of equal values (ggml C); NumPy's
// reduction order decides this for mixed +0.0/-0.0 and is not reproducible.
#include <cmath>
#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_ref.h"
#include "quant/strict_fp.h"

namespace folio::quant::ref {

namespace {

// Truncation toward zero clamped to [0, hi], NaN -> 0. For the values the
// quantizers produce (0 < v < hi + 2) this is C's integer cast then MIN(hi, .).
inline uint8_t trunc_clamp(float v, int hi) {
  if (!(v >= 0.0f)) return 0;
  if (v >= static_cast<float>(hi)) return static_cast<uint8_t>(hi);
  return static_cast<uint8_t>(v);
}

// roundf (half away from zero) into int8, clamped, NaN -> 0. |v| <= 127 up
// to rounding error for finite input, so the clamp only guards inf/NaN.
inline int8_t round_i8(float v) {
  const float r = std::round(v);
  if (r >= 127.0f) return 127;
  if (r <= -128.0f) return -128;
  return r == r ? static_cast<int8_t>(r) : 0;
}

// The element with the largest magnitude, the first one on ties; for an
// all-zero block that is x[0] (as NumPy's argmax picks it).
inline float signed_absmax(const float* x) {
  float amax = std::fabs(x[0]);
  int imax = 0;
  for (int j = 1; j < kQK; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      imax = j;
    }
  }
  return x[imax];
}

inline float absmax(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return amax;
}

inline void min_max(const float* x, float* min, float* max) {
  float lo = std::numeric_limits<float>::max();
  float hi = -std::numeric_limits<float>::max();
  for (int j = 0; j < kQK; ++j) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *min = lo;
  *max = hi;
}

inline float inverse_or_zero(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- dequantize

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>((b.qs[j] & 0xF) - 8);
      dst[j + kQK / 2] = d * static_cast<float>((b.qs[j] >> 4) - 8);
    }
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(b.qs[j] & 0xF) + m;
      dst[j + kQK / 2] = d * static_cast<float>(b.qs[j] >> 4) + m;
    }
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = f16_to_f32(b.d);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int q1 = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      dst[j] = d * static_cast<float>(q0 - 16);
      dst[j + kQK / 2] = d * static_cast<float>(q1 - 16);
    }
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = f16_to_f32(b.d);
    const float m = f16_to_f32(b.m);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = (b.qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int q1 = (b.qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      dst[j] = d * static_cast<float>(q0) + m;
      dst[j + kQK / 2] = d * static_cast<float>(q1) + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b.qs[j]);
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockQ8_1>(src, i);
    const float d = f16_to_f32(b.d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b.qs[j]);
  }
}

// ------------------------------------------------------------------ quantize

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = signed_absmax(src) / -8.0f;
    const float id = inverse_or_zero(d);
    BlockQ4_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = src[j] * id;
      const float x1 = src[j + kQK / 2] * id;
      const uint8_t q0 = trunc_clamp(x0 + 8.5f, 15);
      const uint8_t q1 = trunc_clamp(x1 + 8.5f, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float min, max;
    min_max(src, &min, &max);
    const float d = (max - min) / 15.0f;
    const float id = inverse_or_zero(d);
    BlockQ4_1 b;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const float x0 = (src[j] - min) * id;
      const float x1 = (src[j + kQK / 2] - min) * id;
      const uint8_t q0 = trunc_clamp(x0 + 0.5f, 15);
      const uint8_t q1 = trunc_clamp(x1 + 0.5f, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = signed_absmax(src) / -16.0f;
    const float id = inverse_or_zero(d);
    BlockQ5_0 b;
    b.d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q0 = trunc_clamp(src[j] * id + 16.5f, 31);
      const uint8_t q1 = trunc_clamp(src[j + kQK / 2] * id + 16.5f, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float min, max;
    min_max(src, &min, &max);
    const float d = (max - min) / 31.0f;
    const float id = inverse_or_zero(d);
    BlockQ5_1 b;
    b.d = f32_to_f16(d);
    b.m = f32_to_f16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q0 = trunc_clamp((src[j] - min) * id + 0.5f, 31);
      const uint8_t q1 = trunc_clamp((src[j + kQK / 2] - min) * id + 0.5f, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    store_block(dst, i, b);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = absmax(src) / 127.0f;
    const float id = inverse_or_zero(d);
    BlockQ8_0 b;
    b.d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = round_i8(src[j] * id);
    store_block(dst, i, b);
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float d = absmax(src) / 127.0f;
    const float id = inverse_or_zero(d);
    BlockQ8_1 b;
    b.d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      b.qs[j] = round_i8(src[j] * id);
      sum += b.qs[j];
    }
    b.s = f32_to_f16(static_cast<float>(sum) * d);
    store_block(dst, i, b);
  }
}

}  // namespace folio::quant::ref
