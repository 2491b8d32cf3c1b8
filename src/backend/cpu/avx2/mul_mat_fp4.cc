// AVX2 mul_mat for the FP4 (E2M1) weight formats MXFP4 and NVFP4 x F32
// activations quantized once per op to Q8_0 rows (Q8Row32, as for the
// 32-element legacy blocks in mul_mat_quant.cc).
//
// The step is one 32-element activation block: one ymm of 32 weight codes
// against 32 activation quants. Codes become signed levels of kFP4Values
// (twice the E2M1 values, |level| <= 12) by vpshufb; vpmaddubsw needs an
// unsigned operand, so it multiplies |level| by the quant carrying the
// level's sign (vpsignb): |pair sums| <= 12 * 127 * 2, no saturation. One
// vpmaddwd with ones makes 8 exact i32 partial dots of 4 elements each,
// converted to f32 and multiplied by (weight half-scale x activation scale):
//   MXFP4  a 32-element block per step; half-scale kE8M0Half[e] (a power of
//          two) in all 8 lanes.
//   NVFP4  half h of a 64-element block per step: sub-blocks 2h and 2h + 1,
//          whose codes are the nibbles of qs[16h .. 16h + 15] (sub-block s:
//          low nibbles of its 8 bytes, then high nibbles), put in element
//          order by interleaving the low and high nibble bytes in 8-byte
//          runs; lanes 0-3 take kUE4M3Half[d[2h]], lanes 4-7 kUE4M3Half[d[2h+1]].
// Both half-scales are exact in f32 and their products with the activation
// scale are exact too (<= 4 + 11 significant bits), so each step adds one
// rounded product per lane. Tile: 2 weight rows x 2 activation rows
// (mul_mat_quant.h); each output's f32 accumulation order depends only on K,
// never on the tile shape or the thread count.
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/mul_mat_quant.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

// Codes and half-scales of the 32 weights that meet activation block g of a
// row (element order in the codes: element e in byte e).
template <DType WT>
FOLIO_INLINE_AVX2 void fp4_unit(const unsigned char* row, int64_t g, __m256i* codes, __m256* dw) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  if constexpr (WT == DType::MXFP4) {
    const auto* blk = reinterpret_cast<const quant::BlockMXFP4*>(row) + g;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->qs));
    *codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), mask);
    *dw = _mm256_set1_ps(quant::kE8M0Half[blk->e]);
  } else {
    static_assert(WT == DType::NVFP4);
    const auto* blk = reinterpret_cast<const quant::BlockNVFP4*>(row) + g / 2;
    const int h = static_cast<int>(g & 1);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->qs + 16 * h));
    const __m128i lo = _mm_and_si128(q, _mm256_castsi256_si128(mask));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm256_castsi256_si128(mask));
    *codes = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
    *dw = _mm256_set_m128(_mm_set1_ps(quant::kUE4M3Half[blk->d[2 * h + 1]]),
                          _mm_set1_ps(quant::kUE4M3Half[blk->d[2 * h]]));
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX2 void fp4_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                size_t x_stride, float* out, size_t out_stride) {
  const int64_t nb = k / quant::kQK;
  const QuantTileRows<unsigned char, Q8Row32, R, C> rows(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  const __m256i table = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kFP4Values)));
  const __m256i ones = _mm256_set1_epi16(1);
  // Weight bytes per 32 elements, rounded up to whole blocks for the prefetch.
  constexpr size_t kUnitBytes =
      WT == DType::MXFP4 ? sizeof(quant::BlockMXFP4) : sizeof(quant::BlockNVFP4) / 2;
  for (int64_t g = 0; g < nb; ++g) {
    __m256i xq[C];
    __m256 xd[C];
    for (int c = 0; c < C; ++c) {
      xq[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.x[c].qs + g * quant::kQK));
      xd[c] = _mm256_broadcast_ss(rows.x[c].d + g);
    }
    for (int r = 0; r < R; ++r) {
      rows.template prefetch_next<kUnitBytes>(rows.w[r] + g * kUnitBytes);
      __m256i codes;
      __m256 dw;
      fp4_unit<WT>(rows.w[r], g, &codes, &dw);
      const __m256i wq = _mm256_shuffle_epi8(table, codes);
      const __m256i aw = _mm256_sign_epi8(wq, wq);
      for (int c = 0; c < C; ++c) {
        const __m256i dot =
            _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq[c], wq)), ones);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, xd[c]), acc[r][c]);
      }
    }
  }
  avx2::store_tile<R, C>(acc, out, out_stride);
}

}  // namespace

MatMulSpec fp4_mul_mat_spec_avx2(DType w) {
  const DotTileFn tile =
      dot_tile_for<avx2::kQuantTileRows, avx2::kQuantTileCols, DType::MXFP4, DType::NVFP4>(
          w, [](auto wt, auto r, auto c) -> FixedTileFn { return &fp4_tile<wt(), r(), c()>; });
  FOLIO_CHECK_MSG(tile != nullptr, "fp4 spec for {}", dtype_name(w));
  return {ActFormat::kQ8_0, avx2::kQuantTileRows, avx2::kQuantTileCols, tile,
          &quantize_act_q8_0_avx2};
}

}  // namespace folio::cpu
