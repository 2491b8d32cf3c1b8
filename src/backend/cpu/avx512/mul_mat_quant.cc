// AVX-512 + VNNI mul_mat for 32-element-block weights (Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL) x F32 activations; the super-block types are in
// mul_mat_kquant.cc.
//
// Activations are quantized once per op (mul_mat_tiled) to Q8_0 rows
// (Q8Row32: int8 quants, f32 block scales, exact i32 block sums). One zmm
// holds two 32-element blocks; vpdpbusd (u8 x s8, four products per i32
// lane, no saturation) makes lanes 0-7 / 8-15 partial dots of block b /
// b+1, converted to f32 and scaled by [dw * dx] per half.
//
// vpdpbusd needs an unsigned weight operand, so every format becomes
// unsigned codes with an offset (value = d * (code - offset)), and each i32
// lane starts at -offset * (the sum of its 4 x quants, by one vpdpbusd of
// the offset bytes per column, shared by all rows), which cancels the offset
// exactly lane by lane: the lanes hold true partial dots, so the f32 sum
// meets no large cancelling terms (a -offset * block-sum correction in one
// lane would, after scaling, cost f32 rounding of that large term):
//   Q8_0    q ^ 0x80 = q + 128, offset 128
//   Q4_0    nibble, offset 8
//   Q5_0    nibble + 16 where the qh bit is set (a byte-masked add: bit e of
//           the 64-bit mask qh_b | qh_b+1 << 32 is element e), offset 16
//   IQ4_NL  kIQ4NLValues + 128 (1..241) by vpshufb of the nibbles, offset 128
// Q4_1 / Q5_1 (value = d * code + m) use the codes of Q4_0 / Q5_0 with no
// offset and add m * dx * sum(x quants) per block: the sum is the exact
// integer one, as exact as a Q8_1 activation row (which rounds d * sum to f16).
// The f16 scales of a block pair are packed into one register, converted
// together and spread by vpermps. Tile: 4 weight rows x 2 activation rows
// (mul_mat_quant.h); each step prefetches the same blocks of the next tile's
// rows (a mat-vec is a stream of the weights: without it the loads wait on
// memory about a third of the time). Integer sums are exact and each output's f32
// accumulation order depends only on K, never on the tile shape or the
// thread count.
#include <cstddef>
#include <cstring>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/mul_mat_quant.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "core/target.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using avx512::kQuantTileCols;
using avx512::kQuantTileRows;
using avx512::store_tile;
using quant::kQK;

// The unsigned code offset vpdpbusd's operand needs: the format's, or 128
// for the signed codes (Q8_0 quants, IQ4_NL levels), which become q + 128.
template <DType WT>
constexpr int32_t kVnniOffset = LegacyFormat<WT>::kSigned ? 128 : LegacyFormat<WT>::kOffset;

// Nibbles of blocks a and b (kPair) or of a alone, in element order:
// [lo_a, hi_a, lo_b, hi_b] (128-bit lanes): two broadcast loads give
// [qa, qa, qb, qb], lanes 1 and 3 shift right by 4, one mask.
template <typename Block, bool kPair>
FOLIO_INLINE_AVX512 __m512i nibbles(const Block* blk) {
  __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs)));
  if constexpr (kPair) {
    z = _mm512_mask_broadcast_i32x4(z, 0xFF00,
                                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)));
  }
  z = _mm512_mask_srli_epi16(z, 0xFF00FF00, z, 4);
  return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));
}

// 64 unsigned weight codes of blocks b and b+1 (kPair) or of block b alone
// (upper half: anything, it meets zero activations).
template <DType WT, bool kPair>
FOLIO_INLINE_AVX512 __m512i legacy_codes(const unsigned char* row, int64_t b) {
  using Block = typename LegacyFormat<WT>::Block;
  const Block* blk = reinterpret_cast<const Block*>(row) + b;
  if constexpr (WT == DType::Q8_0) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0].qs));
    __m512i q = _mm512_castsi256_si512(lo);
    if constexpr (kPair) {
      q = _mm512_inserti64x4(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1].qs)), 1);
    }
    return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  } else if constexpr (WT == DType::IQ4_NL) {
    const __m512i table =
        _mm512_add_epi8(_mm512_broadcast_i32x4(
                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues))),
                        _mm512_set1_epi8(static_cast<char>(0x80)));
    return _mm512_shuffle_epi8(table, nibbles<Block, kPair>(blk));
  } else if constexpr (WT == DType::Q5_0 || WT == DType::Q5_1) {
    uint32_t ha, hb = 0;
    std::memcpy(&ha, blk[0].qh, 4);
    if constexpr (kPair) std::memcpy(&hb, blk[1].qh, 4);
    const __mmask64 fifth = static_cast<__mmask64>(ha) | static_cast<__mmask64>(hb) << 32;
    const __m512i q = nibbles<Block, kPair>(blk);
    return _mm512_mask_add_epi8(q, fifth, q, _mm512_set1_epi8(16));
  } else {
    return nibbles<Block, kPair>(blk);
  }
}

// [a x 8, b x 8] from the two low f32 lanes of v.
FOLIO_INLINE_AVX512 __m512 spread_pair(__m128 v) {
  const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}

// [f32(*a) x 8, f32(*b) x 8] for two f16 fields (b absent: 0): both halves
// packed in one register, one conversion, one permutation.
FOLIO_INLINE_AVX512 __m512 half_pair(const uint16_t* a, const uint16_t* b) {
  uint16_t ha, hb = 0;
  std::memcpy(&ha, a, 2);
  if (b != nullptr) std::memcpy(&hb, b, 2);
  const uint32_t packed = static_cast<uint32_t>(ha) | static_cast<uint32_t>(hb) << 16;
  return spread_pair(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(packed))));
}

// Q4_1 / Q5_1: d and m of blocks b and b+1 (m directly follows d): one
// 64-bit register [d_b, m_b, d_b+1, m_b+1], one conversion, two permutations.
template <typename Block>
FOLIO_INLINE_AVX512 void min_scale_pairs(const Block* blk, bool pair, __m512* d, __m512* m) {
  static_assert(offsetof(Block, m) == offsetof(Block, d) + 2);
  uint32_t a, b = 0;
  std::memcpy(&a, &blk[0].d, 4);
  if (pair) std::memcpy(&b, &blk[1].d, 4);
  const __m128 f =
      _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(static_cast<uint64_t>(b) << 32 | a)));
  const __m512 v = _mm512_castps128_ps512(f);
  *d = _mm512_permutexvar_ps(_mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0), v);
  *m = _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1), v);
}

// One step of blocks b, b+1 (kPair) or b; also prefetches the same blocks
// of the next tile's rows.
template <DType WT, int R, int C, bool kPair>
FOLIO_INLINE_AVX512 void legacy_step(const QuantTileRows<unsigned char, Q8Row32, R, C>& rows,
                                     int64_t b, __m512 (&acc)[R][C]) {
  using L = LegacyFormat<WT>;
  using Block = typename L::Block;
  constexpr int32_t kOffset = kVnniOffset<WT>;
  __m512i xq[C];
  __m512 xd[C];     // [dx_b x 8, dx_b+1 x 8]
  __m512i corr[C];  // -offset * (sum of the lane's 4 x quants), per i32 lane
  __m512 xm[C];     // dx * sum(x quants) of each block in lanes 0 and 8
  for (int c = 0; c < C; ++c) {
    __m128 d2;  // dx_b, dx_b+1 (0 without a pair)
    if constexpr (kPair) {
      xq[c] = _mm512_loadu_si512(rows.x[c].qs + b * kQK);
      d2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(rows.x[c].d + b)));
    } else {
      xq[c] = _mm512_zextsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows.x[c].qs + b * kQK)));
      d2 = _mm_load_ss(rows.x[c].d + b);
    }
    xd[c] = spread_pair(d2);
    if constexpr (kOffset != 0) {
      const __m512i zero = _mm512_setzero_si512();
      corr[c] = _mm512_sub_epi32(
          zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(static_cast<char>(kOffset)), xq[c]));
    }
    if constexpr (L::kMin) {
      const __m128 ds2 =
          kPair ? _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(rows.x[c].ds + b)))
                : _mm_load_ss(rows.x[c].ds + b);
      xm[c] = _mm512_maskz_mov_ps(0x0101, spread_pair(ds2));
    }
  }
  for (int r = 0; r < R; ++r) {
    const Block* blk = reinterpret_cast<const Block*>(rows.w[r]) + b;
    rows.template prefetch_next<(kPair ? 2 : 1) * sizeof(Block)>(blk);
    const __m512i wq = legacy_codes<WT, kPair>(rows.w[r], b);
    __m512 wd, wm;
    if constexpr (L::kMin) {
      min_scale_pairs(blk, kPair, &wd, &wm);
    } else {
      wd = half_pair(&blk[0].d, kPair ? &blk[1].d : nullptr);
    }
    for (int c = 0; c < C; ++c) {
      const __m512i dot = kOffset != 0 ? _mm512_dpbusd_epi32(corr[c], wq, xq[c])
                                       : _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq, xq[c]);
      acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(wd, xd[c]), acc[r][c]);
      if constexpr (L::kMin) acc[r][c] = _mm512_fmadd_ps(wm, xm[c], acc[r][c]);
    }
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX512 void legacy_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                     size_t x_stride, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const QuantTileRows<unsigned char, Q8Row32, R, C> rows(k, w, w_stride, x, x_stride);
  __m512 acc[R][C];
  zero_tile(acc);
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) legacy_step<WT, R, C, true>(rows, b, acc);
  if (b < nb) legacy_step<WT, R, C, false>(rows, b, acc);
  store_tile<R, C>(acc, out, out_stride);
}

}  // namespace

MatMulSpec quant_mul_mat_spec_avx512(DType w, int64_t m) {
  const DotTileFn tile =
      dot_tile_for<kQuantTileRows, kQuantTileCols, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                   DType::Q5_0, DType::Q5_1, DType::IQ4_NL>(
          w, [](auto wt, auto r, auto c) -> FixedTileFn { return &legacy_tile<wt(), r(), c()>; });
  if (tile != nullptr) {
    return {ActFormat::kQ8_0, kQuantTileRows, kQuantTileCols, tile, &quantize_act_q8_0_avx512};
  }
  return kquant_mul_mat_spec_avx512(w, m);
}

}  // namespace folio::cpu
