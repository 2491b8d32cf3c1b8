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
#pragma once

#include <bit>
#include <cstdint>

namespace folio::quant {

static_assert(std::endian::native == std::endian::little, "GGUF blocks are little-endian");

inline constexpr int kQK = 32;    // elements in a legacy / IQ4_NL block
inline constexpr int kQKK = 256;  // elements in a K-quant / IQ4_XS super-block

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

// The 16 non-linear levels of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

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
