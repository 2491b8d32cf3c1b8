// Helpers shared by the AVX-512 quantized mul_mat tile files: mul_mat_quant.cc
// (32-element blocks x Q8_0 activation rows) and mul_mat_kquant.cc
// (256-element super-blocks x Q8_K activations). Both use the same tile
// shapes; the dispatch from a (rows, columns) remainder to a template
// instance is drivers/quant_tile.h's. Everything is `static inline` with the AVX-512 target
// attribute.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx512/simd.h"

namespace folio::cpu::avx512 {

// Weight rows x activation rows per tile: integer and f32 accumulators of
// each pair stay in registers; weight unpacking is shared by both columns.
inline constexpr int kQuantTileRows = 4;
inline constexpr int kQuantTileCols = 2;
// The wide tile of the super-block kernels for batches (8+ activation rows):
// each row's unpacked codes and scales serve 8 columns, so unpacking costs a
// quarter of what it does in the 4 x 2 tile (the f32 accumulators no longer
// all fit in registers; they are touched once per super-block).
inline constexpr int kWideTileRows = 2;
inline constexpr int kWideTileCols = 8;
inline constexpr int64_t kWideMinCols = 8;  // activation rows from which the wide tile is used

FOLIO_INLINE_AVX512 float half_to_float(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// [a x 32 bytes, b x 32 bytes]
FOLIO_INLINE_AVX512 __m512i pair_epi8(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(a)),
                            _mm256_set1_epi8(static_cast<char>(b)), 1);
}

// out(r, c) = sum of the 16 lanes of acc[r][c].
template <int R, int C>
FOLIO_INLINE_AVX512 void store_tile(__m512 (&acc)[R][C], float* out, size_t out_stride) {
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = hsum(acc[r][c]);
  }
}

}  // namespace folio::cpu::avx512
