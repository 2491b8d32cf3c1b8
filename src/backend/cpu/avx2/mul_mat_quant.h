// Helpers shared by the AVX2 quantized mul_mat tile files: mul_mat_quant.cc
// (32-element blocks x Q8_0 activation rows), mul_mat_fp4.cc and
// mul_mat_kquant.cc (256-element super-blocks x Q8_K activations). They use
// the same tile shape; the dispatch from a (rows, columns) remainder to a
// template instance is drivers/quant_tile.h's. Everything is `static inline`
// with the AVX2 target attribute.
// Like the AVX-512 tiles, each block / super-block step prefetches the same
// bytes of the next tile's rows (drivers/quant_tile.h QuantTileRows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx2/simd.h"

namespace folio::cpu::avx2 {

// Weight rows x activation rows per tile: each (row, column) pair holds an
// i32 and an f32 accumulator, and the unpacked codes of a row are shared by
// both columns, within the 16 ymm registers.
inline constexpr int kQuantTileRows = 2;
inline constexpr int kQuantTileCols = 2;

FOLIO_INLINE_AVX2 float half_to_float(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Byte e (0..31) = `value` where bit e of `bits` is set, else 0: a byte
// shuffle spreads byte e / 8 of the word to byte e, then bit e % 8 is tested.
FOLIO_INLINE_AVX2 __m256i bit_bytes(uint32_t bits, char value) {
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                          _mm256_set1_epi8(value));
}

// out(r, c) = sum of the 8 lanes of acc[r][c].
template <int R, int C>
FOLIO_INLINE_AVX2 void store_tile(__m256 (&acc)[R][C], float* out, size_t out_stride) {
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = hsum(acc[r][c]);
  }
}

// Lanes 0-7 (i16) = bytes[2q], lanes 8-15 = bytes[2q + 1], sign- or
// zero-extended, where `bytes` holds 16 per-group values in both 128-bit
// lanes: the scales of the two 16-element groups one 32-byte quarter spans.
template <int Q, bool kSigned>
FOLIO_INLINE_AVX2 __m256i scale_pair(__m256i bytes) {
  const __m256i ctl = _mm256_set_m128i(_mm_set1_epi8(static_cast<char>(2 * Q + 1)),
                                       _mm_set1_epi8(static_cast<char>(2 * Q)));
  const __m256i twice = _mm256_shuffle_epi8(bytes, ctl);  // each i16 = b | b << 8
  return kSigned ? _mm256_srai_epi16(twice, 8) : _mm256_srli_epi16(twice, 8);
}

}  // namespace folio::cpu::avx2
