// AVX-512 + VNNI mul_mat for 256-element super-block weights (Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS) x F32 activations quantized once per op to Q8_K
// super-blocks (mul_mat_tiled: int8 quants, f32 scale, i16 sums of 16).
// A 64-element chunk of unsigned weight codes meets 64 contiguous Q8_K
// quants. Q4_K, Q5_K, Q6_K: vpdpbusd gives exact i32 dots of 4 elements per
// lane (|lane| <= 63 * 127 * 4 < 2^15), two chunks' dots are packed to i16
// (vpackssdw, no saturation) and vpdpwssd multiplies them by their group
// scales (spread once per super-block by vpermw) into the i32 sum: 2.5
// multiplies per chunk on the vector ports. Q2_K, Q3_K, IQ4_XS: vpmaddubsw
// (pairs in i16, never saturating: codes <= 63 give <= 63 * 127 * 2), then
// vpdpwssd with the scales per chunk. Sums are exact in i32 over the
// super-block; f32 FMAs per super-block apply d * dx. Offsets and minimums
// are integer sums of scale * bsum, once per super-block.
//
// Q4_K / Q5_K: 32 nibble bytes (low = group 2j, high = group 2j+1); Q5_K
//   adds 16 where the group's qh bit is set (vptestmb against [1 << 2j,
//   1 << 2j+1] per 256-bit half, then a byte-masked add). Mins: dmin *
//   sum_j m_j * (bsum[2j] + bsum[2j+1]), in 256 bits (8 lanes).
// Q6_K: 6-bit codes (0..63) from ql nibbles and qh bit pairs (variable
//   shifts per 256-bit half); -32 offset: 32 * sum_g scale_g * bsum_g.
// Q2_K: 2-bit codes: the 32 qs bytes of a 128-element half hold quarter Q at
//   bits 2Q (variable shifts per 256-bit half); 4-bit scale and min per 16
//   elements; mins: dmin * sum_g m_g * bsum_g.
// Q3_K: Q2_K's codes plus 4 where the hmask bit of the quarter is set (code
//   0..7, offset 4); signed 6-bit scales; offset: 4 * sum_g sc_g * bsum_g.
// IQ4_XS: signed levels of kIQ4NLValues by vpshufb; vpmaddubsw takes |w|
//   and x negated where w < 0 (a byte-masked subtract from zero):
//   |products| <= 127 * 127 * 2; signed 6-bit scale per 32 elements.
// Tile: 4 weight rows x 2 activation rows (Q4_K, Q5_K, Q6_K: 2 x 8 from 8
// activation rows on, mul_mat_quant.h); Q4_K, Q5_K, Q6_K unpack a row's
// super-block once and then visit every column. Each super-block step
// prefetches the same super-block of the next tile's rows. Integer sums are
// exact and each output's f32 steps depend only on K, never on the tile
// shape or the thread count.
#include <array>
#include <cstring>
#include <type_traits>

#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/mul_mat_quant.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/kquant_pick.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "core/target.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using avx2::load256;
using avx512::half_to_float;
using avx512::kQuantTileCols;
using avx512::kQuantTileRows;
using avx512::pair_epi8;
using avx512::store_tile;
using quant::BlockIQ4_XS;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQKK;

// 32 bytes in both 256-bit halves.
FOLIO_INLINE_AVX512 __m512i load256_twice(const void* p) {
  return _mm512_broadcast_i64x4(load256(p));
}

FOLIO_INLINE_AVX512 __m256i bsums_of(const BlockQ8_K& xb) {
  return load256(xb.bsums);
}

// i16 lane L of a chunk's vpmaddubsw output holds elements 2L, 2L+1 of the
// 64: the 16-element group `first + L / 8`.
FOLIO_INLINE_AVX512 __m512i group16_index(int first) {
  const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,
                                        16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  return _mm512_add_epi16(_mm512_srli_epi16(lane, 3),
                          _mm512_set1_epi16(static_cast<int16_t>(first)));
}

// i16 lanes 0-15 take group `first` (of 32 elements), lanes 16-31 group first+1.
FOLIO_INLINE_AVX512 __m512i group32_index(int first) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(first)),
                            _mm256_set1_epi16(static_cast<int16_t>(first + 1)), 1);
}

// ---------------------------------------------------------------- Q4_K, Q5_K

// The scale of every i16 lane after vpackssdw of the vpdpbusd dots of two
// chunks (a, b): in 128-bit lane k, i16 lanes 0-3 hold dot lanes 4k..4k+3 of
// a, lanes 4-7 those of b. `group` maps (chunk 0 / 1 of the pair, k) to the
// group whose elements those dot lanes summed; the result indexes the i16
// scale vector of the super-block (vpermw).
template <typename Group>
FOLIO_INLINE_AVX512 __m512i packed_pair_index(Group group) {
  alignas(64) int16_t idx[32];
  for (int p = 0; p < 32; ++p) idx[p] = static_cast<int16_t>(group(p % 8 / 4, p / 8));
  return _mm512_load_si512(idx);
}

// One pair of 64-element chunks for a row and a column: exact i32 dots of
// 4 elements per lane by vpdpbusd (|lane| <= 63 * 127 * 4 < 2^15 for codes
// up to 63), packed to i16 (no saturation), then multiplied by the group
// scales and summed in pairs into isum by vpdpwssd. Two p0 multiplies per
// chunk plus half of one, where vpmaddubsw + vpdpwssd took two full ones.
FOLIO_INLINE_AVX512 __m512i chunk_pair_dot(__m512i isum, __m512i wa, __m512i wb, const void* xa,
                                           const void* xb, __m512i scales) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i da = _mm512_dpbusd_epi32(zero, wa, _mm512_loadu_si512(xa));
  const __m512i db = _mm512_dpbusd_epi32(zero, wb, _mm512_loadu_si512(xb));
  return _mm512_dpwssd_epi32(isum, _mm512_packs_epi32(da, db), scales);
}

template <bool kQ5, int R, int C>
FOLIO_TARGET_AVX512 void q45_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                    size_t x_stride, float* out, size_t out_stride) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  const int64_t nsb = k / kQKK;
  const QuantTileRows<Block, const BlockQ8_K*, R, C> rows(k, w, w_stride, x, x_stride);
  __m512 acc[R][C];
  zero_tile(acc);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Chunk j: bytes 0-31 (dot lanes 0-7, 128-bit lanes 0-1) hold group 2j,
  // bytes 32-63 group 2j + 1. In the pair (0, 1), chunk c's 128-bit lane k
  // is group 2c + k / 2; the pair (2, 3) adds 4.
  const __m512i idx01 = packed_pair_index([](int chunk, int k) { return 2 * chunk + k / 2; });
  const __m512i idx23 = _mm512_add_epi16(idx01, _mm512_set1_epi16(4));
  for (int64_t sb = 0; sb < nsb; ++sb) {
    // Row by row: its codes and scales unpacked once, then every column.
    for (int r = 0; r < R; ++r) {
      const Block& b = rows.w[r][sb];
      rows.template prefetch_next<sizeof(Block)>(&b);
      const K4ScalesMins sm = unpack_k4_scales(b.scales);
      const __m512i scales = _mm512_castsi128_si512(
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.scales))));
      const __m512i s01 = _mm512_permutexvar_epi16(idx01, scales);
      const __m512i s23 = _mm512_permutexvar_epi16(idx23, scales);
      const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.mins));
      const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));  // m0, m0, m1, ...
      __m512i wq[4];
      for (int j = 0; j < 4; ++j) {
        // [low nibbles | high nibbles] of the same 32 bytes: groups 2j, 2j + 1.
        const __m512i q = load256_twice(b.qs + 32 * j);
        wq[j] = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xFFFF0000, q, 4), m4);
        if constexpr (kQ5) {
          const __m512i bits = pair_epi8(1 << (2 * j), 1 << (2 * j + 1));
          const __mmask64 fifth = _mm512_test_epi8_mask(load256_twice(b.qh), bits);
          wq[j] = _mm512_mask_add_epi8(wq[j], fifth, wq[j], _mm512_set1_epi8(16));
        }
      }
      // acc += (isum * d - msum * dmin) * dx, the mins part in 256 bits (its
      // 8 lanes).
      const __m512 d = _mm512_set1_ps(half_to_float(&b.d));
      const __m256 dmin = _mm256_set1_ps(half_to_float(&b.dmin));
      for (int c = 0; c < C; ++c) {
        const BlockQ8_K& xb = rows.x[c][sb];
        __m512i isum = chunk_pair_dot(_mm512_setzero_si512(), wq[0], wq[1], xb.qs, xb.qs + 64, s01);
        isum = chunk_pair_dot(isum, wq[2], wq[3], xb.qs + 128, xb.qs + 192, s23);
        const __m256 msum = _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bsums_of(xb)));
        const __m512 t = _mm512_sub_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(isum), d),
                                       _mm512_zextps256_ps512(_mm256_mul_ps(msum, dmin)));
        acc[r][c] = _mm512_fmadd_ps(t, _mm512_set1_ps(xb.d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- Q6_K

template <int R, int C>
FOLIO_TARGET_AVX512 void q6_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                   size_t x_stride, float* out, size_t out_stride) {
  const int64_t nsb = k / kQKK;
  const QuantTileRows<BlockQ6_K, const BlockQ8_K*, R, C> rows(k, w, w_stride, x, x_stride);
  __m512 acc[R][C];
  zero_tile(acc);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  // qh bit pairs to bits 4-5: elements 0-31 / 32-63 of a half use bits 0-1 /
  // 2-3 (shift left 4 / 2), elements 64-95 / 96-127 bits 4-5 / 6-7 (right 0 / 2).
  const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  // Half h: chunk s (elements 128h + 64s .. +63) has group 8h + 4s + k in
  // its k-th 128-bit lane (16 elements, 4 dot lanes).
  const __m512i idx0 = packed_pair_index([](int chunk, int k) { return 4 * chunk + k; });
  const __m512i idx1 = _mm512_add_epi16(idx0, _mm512_set1_epi16(8));
  for (int64_t sb = 0; sb < nsb; ++sb) {
    // Row by row: its codes and scales unpacked once, then every column.
    for (int r = 0; r < R; ++r) {
      const BlockQ6_K& b = rows.w[r][sb];
      rows.template prefetch_next<sizeof(BlockQ6_K)>(&b);
      const __m256i scales =  // 16 group scales as i16
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
      __m512i q[4], sh[2];  // codes of chunks 2h + s; group scales of half h
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
        const __m512i qh = load256_twice(b.qh + 32 * h);
        q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                   _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m30));
        q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                       _mm512_and_si512(_mm512_srlv_epi16(qh, shr), m30));
        sh[h] = _mm512_permutexvar_epi16(h == 0 ? idx0 : idx1, _mm512_castsi256_si512(scales));
      }
      // acc += (dot * d) * dx, dot = isum - 32 * sum_g sc_g * bsum_g.
      const __m512 d = _mm512_set1_ps(half_to_float(&b.d));
      for (int c = 0; c < C; ++c) {
        const BlockQ8_K& xb = rows.x[c][sb];
        __m512i isum = chunk_pair_dot(_mm512_setzero_si512(), q[0], q[1], xb.qs, xb.qs + 64, sh[0]);
        isum = chunk_pair_dot(isum, q[2], q[3], xb.qs + 128, xb.qs + 192, sh[1]);
        const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums_of(xb)), 5);
        const __m512i dot = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(off));
        acc[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), d), _mm512_set1_ps(xb.d),
                                    acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- Q2_K, Q3_K

// The 16 signed Q3_K scales (minus 32) as bytes.
FOLIO_INLINE_AVX512 __m128i q3_k_scale_bytes(const uint8_t* s) {
  const std::array<uint32_t, 4> u = unpack_q3_k_scales(s);
  const __m128i v = _mm_setr_epi32(static_cast<int32_t>(u[0]), static_cast<int32_t>(u[1]),
                                   static_cast<int32_t>(u[2]), static_cast<int32_t>(u[3]));
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

template <bool kQ3, int R, int C>
FOLIO_TARGET_AVX512 void q23_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                    size_t x_stride, float* out, size_t out_stride) {
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  const int64_t nsb = k / kQKK;
  const QuantTileRows<Block, const BlockQ8_K*, R, C> rows(k, w, w_stride, x, x_stride);
  __m512 acc[R][C];
  zero_tile(acc);
  const __m512i m3 = _mm512_set1_epi8(3);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isum[R][C];
    __m256i scales[R];  // 16 group scales as i16 (Q3_K: minus 32)
    __m256i mins[R];    // Q2_K: 16 group mins as i16
    for (int r = 0; r < R; ++r) {
      rows.template prefetch_next<sizeof(Block)>(rows.w[r] + sb);
      if constexpr (kQ3) {
        scales[r] = _mm256_cvtepi8_epi16(q3_k_scale_bytes(rows.w[r][sb].scales));
      } else {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows.w[r][sb].scales));
        const __m128i m4 = _mm_set1_epi8(0x0F);
        scales[r] = _mm256_cvtepu8_epi16(_mm_and_si128(raw, m4));
        mins[r] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
      }
      for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      for (int s = 0; s < 2; ++s) {
        // Chunk (h, s): elements 128h + 64s .. +63 = quarters 4h + 2s, 4h + 2s + 1.
        const __m512i shift =
            _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(4 * s)),
                               _mm256_set1_epi16(static_cast<int16_t>(4 * s + 2)), 1);
        const int quarter = 4 * h + 2 * s;
        const __m512i bits = pair_epi8(1 << quarter, 1 << (quarter + 1));
        const __m512i idx = group16_index(8 * h + 4 * s);
        __m512i xq[C];
        for (int c = 0; c < C; ++c) xq[c] = _mm512_loadu_si512(rows.x[c][sb].qs + 128 * h + 64 * s);
        for (int r = 0; r < R; ++r) {
          __m512i code = _mm512_and_si512(
              _mm512_srlv_epi16(load256_twice(rows.w[r][sb].qs + 32 * h), shift), m3);
          if constexpr (kQ3) {
            const __mmask64 high = _mm512_test_epi8_mask(load256_twice(rows.w[r][sb].hmask), bits);
            code = _mm512_mask_add_epi8(code, high, code, _mm512_set1_epi8(4));
          }
          const __m512i sc = _mm512_permutexvar_epi16(idx, _mm512_castsi256_si512(scales[r]));
          for (int c = 0; c < C; ++c) {
            isum[r][c] = _mm512_dpwssd_epi32(isum[r][c], _mm512_maddubs_epi16(code, xq[c]), sc);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&rows.w[r][sb].d);
      for (int c = 0; c < C; ++c) {
        const float dx = rows.x[c][sb].d;
        const __m256i bsums = bsums_of(rows.x[c][sb]);
        if constexpr (kQ3) {
          const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(scales[r], bsums), 2);
          const __m512i dot = _mm512_sub_epi32(isum[r][c], _mm512_zextsi256_si512(off));
          acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(d * dx), acc[r][c]);
        } else {
          const float dmin = half_to_float(&rows.w[r][sb].dmin);
          const __m512i msum = _mm512_zextsi256_si512(_mm256_madd_epi16(mins[r], bsums));
          acc[r][c] =
              _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]), _mm512_set1_ps(d * dx), acc[r][c]);
          acc[r][c] =
              _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_set1_ps(dmin * dx), acc[r][c]);
        }
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- IQ4_XS

template <int R, int C>
FOLIO_TARGET_AVX512 void iq4_xs_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                     size_t x_stride, float* out, size_t out_stride) {
  const int64_t nsb = k / kQKK;
  const QuantTileRows<BlockIQ4_XS, const BlockQ8_K*, R, C> rows(k, w, w_stride, x, x_stride);
  __m512 acc[R][C];
  zero_tile(acc);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i table = _mm512_broadcast_i32x4(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isum[R][C];
    __m512i scales[R];  // 8 signed group scales (minus 32) as i16 in lanes 0-7
    for (int r = 0; r < R; ++r) {
      rows.template prefetch_next<sizeof(BlockIQ4_XS)>(rows.w[r] + sb);
      alignas(16) int16_t sc[8];
      unpack_iq4_xs_scales(rows.w[r][sb], sc);
      scales[r] = _mm512_castsi128_si512(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)));
      for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
    }
    for (int j = 0; j < kQKK / 64; ++j) {
      const __m512i idx = group32_index(2 * j);
      __m512i xq[C];
      for (int c = 0; c < C; ++c) xq[c] = _mm512_loadu_si512(rows.x[c][sb].qs + 64 * j);
      for (int r = 0; r < R; ++r) {
        // Bytes 0-15: group 2j, 16-31: group 2j+1; low nibbles first:
        // [qa, qa, qb, qb] by two broadcast loads, lanes 1 and 3 shifted.
        const uint8_t* qs = rows.w[r][sb].qs + 32 * j;
        __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
        z = _mm512_mask_broadcast_i32x4(z, 0xFF00,
                                        _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16)));
        z = _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xFF00FF00, z, 4), m4);
        const __m512i wv = _mm512_shuffle_epi8(table, z);
        const __m512i aw = _mm512_abs_epi8(wv);
        const __mmask64 neg = _mm512_movepi8_mask(wv);
        const __m512i s = _mm512_permutexvar_epi16(idx, scales[r]);
        for (int c = 0; c < C; ++c) {
          const __m512i sx = _mm512_mask_sub_epi8(xq[c], neg, _mm512_setzero_si512(), xq[c]);
          isum[r][c] = _mm512_dpwssd_epi32(isum[r][c], _mm512_maddubs_epi16(aw, sx), s);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&rows.w[r][sb].d);
      for (int c = 0; c < C; ++c) {
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]),
                                    _mm512_set1_ps(d * rows.x[c][sb].d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- dispatch

// The tile of each K-quant type and shape.
FOLIO_KQUANT_PICK;

}  // namespace

// The 4 x 2 tile; for Q4_K, Q5_K and Q6_K from kWideMinCols activation rows
// on, the wide one.
MatMulSpec kquant_mul_mat_spec_avx512(DType w, int64_t m) {
  if (m >= avx512::kWideMinCols) {
    if (DotTileFn wide = dot_tile_for<avx512::kWideTileRows, avx512::kWideTileCols, DType::Q4_K,
                                      DType::Q5_K, DType::Q6_K>(w, kquant_pick)) {
      return {ActFormat::kQ8_K, avx512::kWideTileRows, avx512::kWideTileCols, wide,
              &quantize_act_q8_k_avx512};
    }
  }
  const DotTileFn tile =
      dot_tile_for<kQuantTileRows, kQuantTileCols, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                   DType::Q5_K, DType::Q6_K, DType::IQ4_XS>(w, kquant_pick);
  FOLIO_CHECK_MSG(tile != nullptr, "no avx512 quantized mul_mat tile for {}", dtype_name(w));
  return {ActFormat::kQ8_K, kQuantTileRows, kQuantTileCols, tile, &quantize_act_q8_k_avx512};
}

}  // namespace folio::cpu
