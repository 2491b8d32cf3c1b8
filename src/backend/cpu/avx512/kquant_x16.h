// The K-quant packed layouts' per-super-block pieces (quant/repack.h:
// Q4_K_X16, Q5_K_X16, Q6_K_X16, IQ4_XS_X16) that the AVX-512 VNNI panels
// (packed_kquant.cc) and the AMX panels (amx/packed_kquant_amx.cc) share:
// the codes of a 32-element group as 8 VNNI rows of 64 bytes (lane n, i.e.
// bytes 4n..4n+3, = panel row n), the sub-block scales and mins of the 16
// rows as i32 / i16 lanes, and the float step each output takes once per
// super-block. One copy of the float step is what keeps the two tiers'
// results bit-identical.
#pragma once

#include <cstring>

#include "backend/cpu/avx512/simd.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu::avx512 {

using quant::BlockQ8_K;

FOLIO_INLINE_AVX512 __m512 half16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Nibble codes of one 32-element group: VNNI rows 0-3 low, 4-7 high.
FOLIO_INLINE_AVX512 void nibble_rows(const uint8_t* g, __m512i (&w)[8]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int r = 0; r < 4; ++r) {
    const __m512i v = _mm512_loadu_si512(g + 64 * r);
    w[r] = _mm512_and_si512(v, m4);
    w[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

// Q4_K_X16 / Q5_K_X16: the codes of group j (Q5_K: nibbles + bit 4 from
// the group's plane, a byte-masked add of 16 per VNNI row).
template <DType P>
FOLIO_INLINE_AVX512 void k4_codes(const uint8_t* s, int j, __m512i (&w)[8]) {
  if constexpr (P == DType::Q4_K_X16) {
    nibble_rows(s + quant::kQ4KxCodes + 256 * j, w);
  } else {
    const uint8_t* g = s + quant::kQ5KxCodes + quant::kQ5KxGroupBytes * j;
    nibble_rows(g, w);
    const __m512i sixteen = _mm512_set1_epi8(16);
    for (int r = 0; r < 8; ++r) {
      uint64_t bits;
      std::memcpy(&bits, g + 256 + 8 * r, 8);
      w[r] = _mm512_mask_add_epi8(w[r], static_cast<__mmask64>(bits), w[r], sixteen);
    }
  }
}

// Q5_K_X16 shares Q4_K_X16's head (d, dmin, scales, mins).
static_assert(quant::kQ5KxD == quant::kQ4KxD && quant::kQ5KxDmin == quant::kQ4KxDmin &&
              quant::kQ5KxScales == quant::kQ4KxScales && quant::kQ5KxMins == quant::kQ4KxMins);

// [min 2i, min 2i+1] of each row as i16 pairs.
FOLIO_INLINE_AVX512 __m512i k4_min_pairs(const uint8_t* s, int i) {
  return _mm512_cvtepu8_epi16(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + quant::kQ4KxMins + 32 * i)));
}

// [bsum of group 2i, of group 2i+1] as one i16 pair (|.| <= 32 * 128).
FOLIO_INLINE_AVX512 __m512i k4_bsum_pair(const BlockQ8_K& xb, int i) {
  const int16_t* bs = xb.bsums + 4 * i;
  const int32_t lo = bs[0] + bs[1], hi = bs[2] + bs[3];
  return _mm512_set1_epi32(
      static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                           static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
}

// acc += float(isum) * (d * dx) - float(msum) * (dmin * dx), once per super-block.
FOLIO_INLINE_AVX512 __m512 k4_accumulate(__m512 acc, __m512i isum, __m512i msum, const uint8_t* s,
                                         float dx) {
  const __m512 d = half16(s + quant::kQ4KxD), dmin = half16(s + quant::kQ4KxDmin);
  const __m512 vdx = _mm512_set1_ps(dx);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, vdx), acc);
  return _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, vdx), acc);
}

// The 6-bit codes (0..63) of group g of a Q6_K_X16 super-block.
FOLIO_INLINE_AVX512 void q6_codes(const uint8_t* s, int g, __m512i (&w)[8]) {
  const __m512i m30 = _mm512_set1_epi8(0x30);
  const uint8_t* gd = s + quant::kQ6KxCodes + quant::kQ6KxGroupBytes * g;
  nibble_rows(gd, w);
  const __m512i h0 = _mm512_loadu_si512(gd + 256), h1 = _mm512_loadu_si512(gd + 320);
  // Plane byte i bits 2f, 2f+1 -> bits 4, 5 of VNNI row 2f + (i >= 64):
  // w |= shifted plane & 0x30 (one vpternlogd: A | (B & C) = 0xF8).
  w[0] = _mm512_ternarylogic_epi32(w[0], _mm512_slli_epi16(h0, 4), m30, 0xF8);
  w[1] = _mm512_ternarylogic_epi32(w[1], _mm512_slli_epi16(h1, 4), m30, 0xF8);
  w[2] = _mm512_ternarylogic_epi32(w[2], _mm512_slli_epi16(h0, 2), m30, 0xF8);
  w[3] = _mm512_ternarylogic_epi32(w[3], _mm512_slli_epi16(h1, 2), m30, 0xF8);
  w[4] = _mm512_ternarylogic_epi32(w[4], h0, m30, 0xF8);
  w[5] = _mm512_ternarylogic_epi32(w[5], h1, m30, 0xF8);
  w[6] = _mm512_ternarylogic_epi32(w[6], _mm512_srli_epi16(h0, 2), m30, 0xF8);
  w[7] = _mm512_ternarylogic_epi32(w[7], _mm512_srli_epi16(h1, 2), m30, 0xF8);
}

// IQ4_XS_X16: the kIQ4NLValues levels of group g's codes plus `bias` (128
// for vpdpbusd's unsigned operand, 0 for the signed tile bytes of AMX).
FOLIO_INLINE_AVX512 void iq4xs_levels(const uint8_t* s, int g, int bias, __m512i (&w)[8]) {
  nibble_rows(s + quant::kIQ4XSxCodes + 256 * g, w);
  const __m512i table = _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128(
                                            reinterpret_cast<const __m128i*>(quant::kIQ4NLValues))),
                                        _mm512_set1_epi8(static_cast<char>(bias)));
  for (int r = 0; r < 8; ++r) w[r] = _mm512_shuffle_epi8(table, w[r]);
}

// IQ4_XS_X16: the signed scales (-32..31) of group g, one per row.
FOLIO_INLINE_AVX512 __m512i iq4xs_scales(const uint8_t* s, int g) {
  return _mm512_cvtepi8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kIQ4XSxScales + 16 * g)));
}

// IQ4_XS_X16: acc += float(isum) * (d * dx), once per super-block.
FOLIO_INLINE_AVX512 __m512 iq4xs_accumulate(__m512 acc, __m512i isum, const uint8_t* s, float dx) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum),
                         _mm512_mul_ps(half16(s + quant::kIQ4XSxD), _mm512_set1_ps(dx)), acc);
}

// Signed scales of sub-block 2g (half 0) or 2g + 1 (half 1), one per row.
FOLIO_INLINE_AVX512 __m512i q6_scales(const uint8_t* s, int g, int half) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(
      reinterpret_cast<const __m128i*>(s + quant::kQ6KxScales + 32 * g + 16 * half)));
}

}  // namespace folio::cpu::avx512
