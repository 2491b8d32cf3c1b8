// F32 bits to F16 / BF16 bits, integer code bit-exact with core/fp16.h
// (round to nearest even, subnormals kept, NaN quieted) whatever the
// driver's float rounding and denormal modes: set_rows.comp and
// rope_set_rows.comp.

uint f32_to_f16(uint x) {
  const uint sign = (x >> 16) & 0x8000u;
  const uint a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x47800000u) return sign | 0x7c00u;  // rounds to inf
  if (a < 0x38800000u) {  // subnormal or zero: a * 2^24 rounded to an integer
    const uint e = a >> 23;
    if (e < 102u) return sign;
    const uint mant = (a & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - e;
    uint half_ = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u);
    const uint mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half_ & 1u) != 0u)) ++half_;
    return sign | half_;
  }
  uint h = (a >> 13) - (112u << 10);
  const uint rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;  // a carry into the exponent is right
  return sign | h;
}

uint f32_to_bf16(uint x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 64u;  // quiet NaN
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
