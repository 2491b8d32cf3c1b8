// GGUF block layouts, as plain structs. These are format facts (the bytes a
// GGUF file holds), shared by the scalar reference (quant_*.cc) and by the
// SIMD kernels (backend/cpu/).
//
// All multi-byte fields are little-endian in the file; folio only targets
// little-endian hosts (checked below). Half-precision fields (`d`, `dmin`,
// `m`, `s`) are raw IEEE binary16 bits: convert with core/fp16.h.
//
// Element order inside a block (element e = 0 .. block size - 1):
//   Q4_0/Q4_1/IQ4_NL  e < 16: low nibble of qs[e]; e >= 16: high nibble of qs[e-16].
//   Q5_0/Q5_1         as Q4_x for the low 4 bits; bit 4 of element e is bit e of qh (u32).
//   Q8_0/Q8_1         qs[e].
//   Q2_K   2 bits: byte (e/128)*32 + e%32, shift 2*((e%128)/32); scales[e/16]:
//          low nibble scale, high nibble min.
//   Q3_K   low 2 bits as Q2_K; bit 2 is hmask[e%32] bit e/32 (set means +0,
//          clear means -4); 16 6-bit scales packed in 12 bytes (see quant_k.cc).
//   Q4_K   nibble of qs[(e/64)*32 + e%32], low for (e%64) < 32; 8 6-bit
//          (scale, min) pairs for 32-element groups packed in 12 bytes.
//   Q5_K   as Q4_K for the low 4 bits; bit 4 is qh[e%32] bit e/32.
//   Q6_K   low 4 bits: nibble of ql[(e/128)*64 + e%64], low for (e%128) < 64;
//          high 2 bits: qh[(e/128)*32 + e%32] >> 2*((e%128)/32); scales[e/16].
//   Q8_K   qs[e]; bsums[g] = sum of qs[16g .. 16g+15].
//   IQ4_XS per 32-element group g: nibbles of qs[16g .. 16g+15] (low first),
//          mapped through kIQ4NLValues; 6-bit scale = scales_l nibble g |
//          (scales_h >> 2g & 3) << 4, minus 32.
//   MXFP4  as Q4_0 (e < 16: low nibble of qs[e], else high nibble of
//          qs[e-16]); codes are E2M1 values through kFP4Values.
//   NVFP4  64 elements in 4 sub-blocks of 16 (s = e / 16, j = e % 16): low
//          nibble of qs[8s + j] for j < 8, high nibble of qs[8s + j - 8]
//          otherwise; codes through kFP4Values, scale d[s] (UE4M3).
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace folio::quant {

static_assert(std::endian::native == std::endian::little, "GGUF blocks are little-endian");

inline constexpr int kQK = 32;     // elements in a legacy / IQ4_NL block
inline constexpr int kQKK = 256;   // elements in a K-quant / IQ4_XS super-block
inline constexpr int kQKNV = 64;   // elements in an NVFP4 block
inline constexpr int kNVSub = 16;  // elements per NVFP4 scale

struct BlockQ4_0 {
  uint16_t d;           // f16 scale
  uint8_t qs[kQK / 2];  // 4-bit quants, value = d * (q - 8)
};
struct BlockQ4_1 {
  uint16_t d;  // f16 scale
  uint16_t m;  // f16 minimum: value = d * q + m
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];        // 5th bits (u32, little-endian)
  uint8_t qs[kQK / 2];  // value = d * (q - 16)
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];  // value = d * q + m
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];  // value = d * q
};
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;  // f16 of d * sum(qs): used by dot kernels against Q4_1/Q5_1
  int8_t qs[kQK];
};
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // 4-bit scale | 4-bit min << 4, per 16 elements
  uint8_t qs[kQKK / 4];
  uint16_t d;     // f16 super-block scale for scales
  uint16_t dmin;  // f16 super-block scale for mins
};
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];  // 16 6-bit scales (offset 32)
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];    // 8 x (6-bit scale, 6-bit min)
  uint8_t qs[kQKK / 2];  // value = d * sc * q - dmin * m
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];  // value = d * scale * (q - 32)
  uint16_t d;
};
struct BlockQ8_K {
  float d;  // f32 scale (not f16)
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];  // value = d * kIQ4NLValues[q]
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};
struct BlockMXFP4 {
  uint8_t e;            // E8M0 shared exponent: value = e8m0_half(e) * kFP4Values[q]
  uint8_t qs[kQK / 2];  // 4-bit E2M1 codes
};
// value = ue4m3_half(d[s]) * kFP4Values[q] for element e of sub-block s = e / 16.
struct BlockNVFP4 {
  uint8_t d[kQKNV / kNVSub];  // UE4M3 scale per 16 elements
  uint8_t qs[kQKNV / 2];      // 4-bit E2M1 codes, 8 bytes per sub-block
};

// Sizes are GGUF format facts; tests/quant also checks them against
// traits(DType).type_size.
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockNVFP4) == 36);

// The 16 non-linear levels of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The 16 E2M1 (FP4) values of MXFP4 and NVFP4, doubled so they are integers:
// code bit 3 is the sign, bits 0-2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}. The
// scale decoders below return half the scale, which undoes the doubling.
inline constexpr int8_t kFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of the E8M0 scale 2^(e - 127), i.e. 2^(e - 128); e = 0 and 1 give the
// subnormals 2^-128 and 2^-127. 255 (NaN in the OCP spec) decodes as 2^127,
// as ggml does.
constexpr float e8m0_half_to_f32(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// Half of the unsigned E4M3 scale (4 exponent bits, bias 7, 3 mantissa bits,
// exponent 0 subnormal). Bit 7 is ignored, except that 0x7F itself (the
// E4M3 NaN) decodes as 0 while 0xFF gives 240, as ggml does.
constexpr float ue4m3_half_to_f32(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const int exp = (x >> 3) & 0xF, man = x & 7;
  constexpr float kTwoToMinus10 = std::bit_cast<float>(uint32_t{117} << 23);
  if (exp == 0) return static_cast<float>(man) * kTwoToMinus10;
  // (1 + man / 8) * 2^(exp - 7) / 2 = (8 + man) * 2^(exp - 11), exact.
  return static_cast<float>(8 + man) *
         std::bit_cast<float>(static_cast<uint32_t>(exp - 11 + 127) << 23);
}

// Both decoders as 256-entry tables, for kernels that look scales up.
inline constexpr auto kE8M0Half = [] {
  std::array<float, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = e8m0_half_to_f32(static_cast<uint8_t>(i));
  return t;
}();
inline constexpr auto kUE4M3Half = [] {
  std::array<float, 256> t{};
  for (int i = 0; i < 256; ++i) t[i] = ue4m3_half_to_f32(static_cast<uint8_t>(i));
  return t;
}();

// Q4_K / Q5_K scale packing: 8 pairs of 6-bit (scale, min) in 12 bytes.
//   bytes 0-3:  scale j (j < 4) in bits 0-5, bits 6-7 = high 2 bits of scale j+4
//   bytes 4-7:  min j   (j < 4) in bits 0-5, bits 6-7 = high 2 bits of min j+4
//   bytes 8-11: low 4 bits of scale j+4 | low 4 bits of min j+4 << 4
inline void unpack_scale_min_k4(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

}  // namespace folio::quant
