// AVX2 mul_mat for 32-element-block weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL) x F32 activations; the super-block types are in mul_mat_kquant.cc.
//
// Activations are quantized once per op (mul_mat_tiled) to Q8_0 rows
// (Q8Row32: int8 quants, f32 block scales, exact i32 block sums). Each block
// is one ymm of 32 weight codes against 32 activation quants: vpmaddubsw
// (u8 x s8 -> pairs summed in i16), vpmaddwd with ones (-> i32), then one
// f32 FMA with the product of the two block scales.
//
// Unsigned codes with an offset (the block value is d * (code - offset)):
//   Q4_0 nibble, offset 8;  Q5_0 nibble | qh bit << 4, offset 16. The offset
//   is removed exactly from every i16 pair sum by subtracting vpmaddubsw of
//   the offset bytes with x (once per column, shared by the rows; both
//   terms <= 31 * 127 * 2 < 2^15), so the lanes hold true partial dots and
//   the f32 sum meets no large cancelling terms.
// Codes with a minimum (value = d * code + m): Q4_1 nibble, Q5_1 nibble |
//   qh bit << 4. The minimum adds m * dx * sum(x quants): the sum is the
//   exact integer one, so this is as exact as a Q8_1 activation row (and
//   more: Q8_1 rounds d * sum to f16).
// Signed codes: Q8_0 quants, IQ4_NL levels from the 16-entry table by
//   vpshufb. vpmaddubsw needs an unsigned operand and must not saturate, so
//   it multiplies |w| by x carrying w's sign (vpsignb): |products| <=
//   127 * 127 * 2 < 2^15.
// The fifth bits (u32 qh) are spread to bytes by a byte shuffle (byte e
// takes qh byte e / 8), a test of bit e % 8, and a mask of 0x10.
// Tile: 2 weight rows x 2 activation rows (mul_mat_quant.h). Integer sums
// are exact and each output's f32 accumulation order depends only on K,
// never on the tile shape or the thread count.
#include <cstring>
#include <type_traits>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/mul_mat_quant.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using avx2::kQuantTileCols;
using avx2::kQuantTileRows;
using avx2::store_tile;
using quant::kQK;

// Elements 0-15: low nibbles of qs, 16-31: high nibbles.
FOLIO_INLINE_AVX2 __m256i nibbles(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

// Byte e = 0x10 where bit e of the little-endian u32 at qh is set, else 0.
FOLIO_INLINE_AVX2 __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return avx2::bit_bytes(bits, 0x10);
}

// f32(*h) in 8 lanes: a broadcast load of the f16 bits, one conversion.
FOLIO_INLINE_AVX2 __m256 half_x8(const uint16_t* h) {
  int16_t bits;
  std::memcpy(&bits, h, 2);
  return _mm256_cvtph_ps(_mm_set1_epi16(bits));
}

// The 32 codes of a block, element e in byte e (signed for Q8_0 / IQ4_NL).
template <DType WT>
FOLIO_INLINE_AVX2 __m256i legacy_codes(const typename LegacyFormat<WT>::Block& blk) {
  if constexpr (WT == DType::Q8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs));
  } else if constexpr (WT == DType::IQ4_NL) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
    return _mm256_shuffle_epi8(table, nibbles(blk.qs));
  } else if constexpr (WT == DType::Q5_0 || WT == DType::Q5_1) {
    return _mm256_or_si256(nibbles(blk.qs), fifth_bits(blk.qh));
  } else {
    return nibbles(blk.qs);
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX2 void legacy_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                   size_t x_stride, float* out, size_t out_stride) {
  using L = LegacyFormat<WT>;
  using Block = typename L::Block;
  const int64_t nb = k / kQK;
  const QuantTileRows<Block, Q8Row32, R, C> rows(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xq[C];
    __m256 xd[C];     // dx x 8
    __m256i xoff[C];  // offset * (x quant pair sums), i16
    __m256 xm[C];     // dx * sum(x quants) in lane 0, for the minimum
    for (int c = 0; c < C; ++c) {
      xq[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.x[c].qs + b * kQK));
      xd[c] = _mm256_broadcast_ss(rows.x[c].d + b);
      if constexpr (L::kOffset != 0) {
        xoff[c] = _mm256_maddubs_epi16(_mm256_set1_epi8(L::kOffset), xq[c]);
      }
      if constexpr (L::kMin) {
        xm[c] = _mm256_zextps128_ps256(_mm_set_ss(rows.x[c].ds[b]));
      }
    }
    for (int r = 0; r < R; ++r) {
      const Block& blk = rows.w[r][b];
      rows.template prefetch_next<sizeof(Block)>(&blk);
      const __m256 dw = half_x8(&blk.d);
      const __m256i wq = legacy_codes<WT>(blk);
      if constexpr (L::kSigned) {
        const __m256i aw = _mm256_sign_epi8(wq, wq);
        for (int c = 0; c < C; ++c) {
          const __m256i dot =
              _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq[c], wq)), ones);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, xd[c]), acc[r][c]);
        }
      } else {
        __m256 mw;
        if constexpr (L::kMin) mw = half_x8(&blk.m);
        for (int c = 0; c < C; ++c) {
          __m256i pairs = _mm256_maddubs_epi16(wq, xq[c]);
          if constexpr (L::kOffset != 0) pairs = _mm256_sub_epi16(pairs, xoff[c]);
          const __m256i dot = _mm256_madd_epi16(pairs, ones);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, xd[c]), acc[r][c]);
          if constexpr (L::kMin) {
            acc[r][c] = _mm256_fmadd_ps(mw, xm[c], acc[r][c]);
          }
        }
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

}  // namespace

MatMulSpec quant_mul_mat_spec_avx2(DType w, int64_t) {
  const DotTileFn tile =
      dot_tile_for<kQuantTileRows, kQuantTileCols, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                   DType::Q5_0, DType::Q5_1, DType::IQ4_NL>(
          w, [](auto wt, auto r, auto c) -> FixedTileFn { return &legacy_tile<wt(), r(), c()>; });
  if (tile != nullptr) {
    return {ActFormat::kQ8_0, kQuantTileRows, kQuantTileCols, tile, &quantize_act_q8_0_avx2};
  }
  if (w == DType::MXFP4 || w == DType::NVFP4) return fp4_mul_mat_spec_avx2(w);
  return kquant_mul_mat_spec_avx2(w);
}

}  // namespace folio::cpu
