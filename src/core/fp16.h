// IEEE half and bfloat16 conversions, scalar and bit-exact with NumPy /
// the gguf package: f32 -> f16 and f32 -> bf16 round to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

namespace folio {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return bits_f32(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | mant << 13);
  }
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | mant << 13);  // inf / nan
  return bits_f32(sign | (exp + 127 - 15) << 23 | mant << 13);
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00 | ((abs >> 13) & 0x3ff));  // nan
  if (abs >= 0x47800000) {
    // >= 65536 (after rounding everything >= 65520 overflows): inf.
    return static_cast<uint16_t>(sign | 0x7c00);
  }
  if (abs < 0x38800000) {
    // Result is subnormal or zero: value = abs * 2^24 rounded to integer.
    const uint32_t e = abs >> 23;
    if (e < 102) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;  // 14 + (113 - e) ... places so that lsb is 2^-24
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias and round mantissa 23 -> 10 bits to nearest even.
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into exponent: correct
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 64);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace folio
