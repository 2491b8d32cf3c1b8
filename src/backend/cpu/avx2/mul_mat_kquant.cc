// AVX2 mul_mat for 256-element super-block weights (Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_XS) x F32 activations quantized once per op to Q8_K super-blocks
// (mul_mat_tiled: int8 quants, f32 scale, i16 sums of 16). Per 32 elements,
// vpmaddubsw multiplies unsigned weight codes with the Q8_K quants (pairs
// summed in i16, never saturating: codes <= 63 give <= 63 * 127 * 2), then
// vpmaddwd multiplies by the group scales (one i16 per lane) into i32, summed
// exactly over the super-block; one f32 FMA per super-block applies d * dx.
// Offsets and minimums are integer sums of scale * bsum, once per block.
//
// Q4_K / Q5_K: a 64-element chunk is 32 nibble bytes (low = group 2j, high =
//   group 2j+1) against 64 contiguous quants; Q5_K ORs in the fifth bits
//   (qh[l] bit g, moved to bit 4 by 16-bit shifts: no neighbour bits reach
//   it). Mins: dmin * sum_j m_j * (bsum[2j] + bsum[2j+1]).
// Q6_K: 6-bit codes (0..63) from ql nibbles | qh bit pairs, with two int8
//   scales per 32 elements; -32 offset: 32 * sum_g sc_g * bsum_g.
// Q2_K: 2-bit codes, quarter Q of a 128-element half at bits 2Q of its 32
//   bytes, with a 4-bit scale and a 4-bit min per 16 elements; mins: dmin *
//   sum_g m_g * bsum_g.
// Q3_K: Q2_K's codes plus the hmask bit (set: +0, clear: -4) as bit 2, i.e.
//   code 0..7 with offset 4; 16 signed 6-bit scales; offset: 4 * sum_g sc_g *
//   bsum_g.
// IQ4_XS: levels of kIQ4NLValues by vpshufb (signed, so |w| times x carrying
//   w's sign, as Q8_0), a signed 6-bit scale per 32 elements.
// Scales of 16-element groups reach the i16 lanes by a byte shuffle
// (mul_mat_quant.h scale_pair): lanes 0-7 the group of elements 0-15 of the
// quarter, lanes 8-15 the next.
// Tile: 2 weight rows x 2 activation rows. Integer sums are exact and each
// output's f32 accumulation order depends only on K, never on the tile shape
// or the thread count.
#include <array>
#include <cstring>
#include <type_traits>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/mul_mat_quant.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/kquant_pick.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using avx2::half_to_float;
using avx2::kQuantTileCols;
using avx2::kQuantTileRows;
using avx2::load256;
using avx2::scale_pair;
using avx2::store_tile;
using quant::BlockIQ4_XS;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQKK;

FOLIO_INLINE_AVX2 __m256i bsums_of(const BlockQ8_K& xb) {
  return load256(xb.bsums);
}

// ---------------------------------------------------------------- Q4_K, Q5_K

template <bool kQ5, int R, int C>
FOLIO_TARGET_AVX2 void q45_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                  size_t x_stride, float* out, size_t out_stride) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  const QuantTileRows<Block, const BlockQ8_K*, R, C> t(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m10 = _mm256_set1_epi8(0x10);
  for (int64_t sb = 0; sb < k / kQKK; ++sb) {
    t.prefetch(sb);
    __m256i isum[R][C];
    uint8_t sc[R][8];
    __m256i mins[R];  // 16 i16: m0, m0, m1, m1, ... (pairs meet the 16-element bsums)
    for (int r = 0; r < R; ++r) {
      const K4ScalesMins sm = unpack_k4_scales(t.w[r][sb].scales);
      std::memcpy(sc[r], &sm.scales, 8);
      const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.mins));
      mins[r] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int j = 0; j < kQKK / 64; ++j) {
      __m256i x0[C], x1[C];
      for (int c = 0; c < C; ++c) {
        x0[c] = load256(t.x[c][sb].qs + 64 * j);
        x1[c] = load256(t.x[c][sb].qs + 64 * j + 32);
      }
      for (int r = 0; r < R; ++r) {
        const __m256i q = load256(t.w[r][sb].qs + 32 * j);
        __m256i lo = _mm256_and_si256(q, m4);                        // group 2j
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);  // group 2j+1
        if constexpr (kQ5) {
          // Bits 2j / 2j+1 of every qh byte to bit 4 (bit 0 / 1 after the shift).
          const __m256i qh = _mm256_srli_epi16(load256(t.w[r][sb].qh), 2 * j);
          lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(qh, 4), m10));
          hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(qh, 3), m10));
        }
        const __m256i s0 = _mm256_set1_epi16(sc[r][2 * j]);
        const __m256i s1 = _mm256_set1_epi16(sc[r][2 * j + 1]);
        for (int c = 0; c < C; ++c) {
          const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0[c]), s0);
          const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1[c]), s1);
          isum[r][c] = _mm256_add_epi32(isum[r][c], _mm256_add_epi32(p0, p1));
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&t.w[r][sb].d);
      const float dmin = half_to_float(&t.w[r][sb].dmin);
      for (int c = 0; c < C; ++c) {
        const float dx = t.x[c][sb].d;
        const __m256i msum = _mm256_madd_epi16(mins[r], bsums_of(t.x[c][sb]));
        acc[r][c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]), _mm256_set1_ps(d * dx), acc[r][c]);
        acc[r][c] =
            _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * dx), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- Q6_K

// Codes of quarter Q (elements 32Q .. 32Q+31) of a 128-element half: low 4
// bits from ql (bytes 0-31 for even Q, 32-63 for odd; low nibble for Q < 2),
// bits 4-5 from qh bit pair Q moved to bits 4-5.
template <int Q>
FOLIO_INLINE_AVX2 __m256i q6_codes(const uint8_t* ql, __m256i qh) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  const __m256i l = load256(ql + 32 * (Q & 1));
  const __m256i low =
      Q < 2 ? _mm256_and_si256(l, m4) : _mm256_and_si256(_mm256_srli_epi16(l, 4), m4);
  __m256i high;
  if constexpr (Q == 0) high = _mm256_slli_epi16(qh, 4);
  if constexpr (Q == 1) high = _mm256_slli_epi16(qh, 2);
  if constexpr (Q == 2) high = qh;
  if constexpr (Q == 3) high = _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(low, _mm256_and_si256(high, m30));
}

template <int Q, int R, int C>
FOLIO_INLINE_AVX2 void q6_quarter(const BlockQ6_K* const (&wr)[R], const BlockQ8_K* const (&xr)[C],
                                  int64_t sb, int h, __m256i (&isum)[R][C]) {
  __m256i xq[C];
  for (int c = 0; c < C; ++c) xq[c] = load256(xr[c][sb].qs + 128 * h + 32 * Q);
  for (int r = 0; r < R; ++r) {
    const __m256i qh = load256(wr[r][sb].qh + 32 * h);
    const __m256i q = q6_codes<Q>(wr[r][sb].ql + 64 * h, qh);
    // i16 lanes 0-7 hold elements 0-15 (group g), lanes 8-15 group g+1.
    const int g = 8 * h + 2 * Q;
    const __m256i s = _mm256_set_m128i(_mm_set1_epi16(wr[r][sb].scales[g + 1]),
                                       _mm_set1_epi16(wr[r][sb].scales[g]));
    for (int c = 0; c < C; ++c) {
      isum[r][c] =
          _mm256_add_epi32(isum[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xq[c]), s));
    }
  }
}

template <int R, int C>
FOLIO_TARGET_AVX2 void q6_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                 size_t x_stride, float* out, size_t out_stride) {
  const QuantTileRows<BlockQ6_K, const BlockQ8_K*, R, C> t(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  for (int64_t sb = 0; sb < k / kQKK; ++sb) {
    t.prefetch(sb);
    __m256i isum[R][C];
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      q6_quarter<0>(t.w, t.x, sb, h, isum);
      q6_quarter<1>(t.w, t.x, sb, h, isum);
      q6_quarter<2>(t.w, t.x, sb, h, isum);
      q6_quarter<3>(t.w, t.x, sb, h, isum);
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&t.w[r][sb].d);
      const __m256i scales = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.w[r][sb].scales)));
      for (int c = 0; c < C; ++c) {
        const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums_of(t.x[c][sb])),
                                              5);  // 32 * sc * bsum
        const __m256i dot = _mm256_sub_epi32(isum[r][c], off);
        acc[r][c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * t.x[c][sb].d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- Q2_K, Q3_K

// The 16 signed Q3_K scales (minus 32) as bytes.
FOLIO_INLINE_AVX2 __m128i q3_k_scale_bytes(const uint8_t* s) {
  const std::array<uint32_t, 4> u = unpack_q3_k_scales(s);
  const __m128i v = _mm_setr_epi32(static_cast<int32_t>(u[0]), static_cast<int32_t>(u[1]),
                                   static_cast<int32_t>(u[2]), static_cast<int32_t>(u[3]));
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

// Quarter Q (0..7: elements 32Q .. 32Q+31) of a Q2_K / Q3_K super-block:
// 2-bit codes of qs bytes 32 (Q / 4) .. +31 at bits 2 (Q % 4); Q3_K adds its
// hmask bit Q as bit 2. `scales` holds the 16 group scales (bytes) in both
// 128-bit lanes.
template <bool kQ3, int Q, int R, int C>
FOLIO_INLINE_AVX2 void q23_quarter(const uint8_t* const (&qs)[R], const uint8_t* const (&hm)[R],
                                   const __m256i (&scales)[R], const int8_t* const (&xq)[C],
                                   __m256i (&isum)[R][C]) {
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256i xv[C];
  for (int c = 0; c < C; ++c) xv[c] = load256(xq[c] + 32 * Q);
  for (int r = 0; r < R; ++r) {
    __m256i code =
        _mm256_and_si256(_mm256_srli_epi16(load256(qs[r] + 32 * (Q / 4)), 2 * (Q % 4)), m3);
    if constexpr (kQ3) {
      const __m256i h = load256(hm[r]);
      const __m256i at2 = Q < 2 ? _mm256_slli_epi16(h, 2 - Q) : _mm256_srli_epi16(h, Q - 2);
      code = _mm256_or_si256(code, _mm256_and_si256(at2, _mm256_set1_epi8(4)));
    }
    const __m256i s = scale_pair<Q, kQ3>(scales[r]);
    for (int c = 0; c < C; ++c) {
      isum[r][c] =
          _mm256_add_epi32(isum[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(code, xv[c]), s));
    }
  }
}

template <bool kQ3, int R, int C>
FOLIO_TARGET_AVX2 void q23_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                  size_t x_stride, float* out, size_t out_stride) {
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  const QuantTileRows<Block, const BlockQ8_K*, R, C> t(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  for (int64_t sb = 0; sb < k / kQKK; ++sb) {
    t.prefetch(sb);
    __m256i isum[R][C];
    __m256i scales[R];  // group scales (Q3_K: minus 32) as bytes, in both lanes
    __m256i mins[R];    // Q2_K: 16 group mins as i16
    const uint8_t* qs[R];
    const uint8_t* hm[R];
    const int8_t* xq[C];
    for (int r = 0; r < R; ++r) {
      const Block& b = t.w[r][sb];
      qs[r] = b.qs;
      if constexpr (kQ3) {
        hm[r] = b.hmask;
        scales[r] = _mm256_broadcastsi128_si256(q3_k_scale_bytes(b.scales));
      } else {
        hm[r] = nullptr;
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
        scales[r] = _mm256_broadcastsi128_si256(_mm_and_si128(raw, _mm_set1_epi8(0x0F)));
        mins[r] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
      }
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int c = 0; c < C; ++c) xq[c] = t.x[c][sb].qs;
    q23_quarter<kQ3, 0>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 1>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 2>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 3>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 4>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 5>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 6>(qs, hm, scales, xq, isum);
    q23_quarter<kQ3, 7>(qs, hm, scales, xq, isum);
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&t.w[r][sb].d);
      __m256i sc16;
      float dmin = 0.0f;
      if constexpr (kQ3) {
        sc16 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(scales[r]));
      } else {
        dmin = half_to_float(&t.w[r][sb].dmin);
      }
      for (int c = 0; c < C; ++c) {
        const float dx = t.x[c][sb].d;
        const __m256i bsums = bsums_of(t.x[c][sb]);
        if constexpr (kQ3) {
          const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), 2);  // 4 sc bsum
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[r][c], off)),
                                        _mm256_set1_ps(d * dx), acc[r][c]);
        } else {
          const __m256i msum = _mm256_madd_epi16(mins[r], bsums);
          acc[r][c] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]), _mm256_set1_ps(d * dx), acc[r][c]);
          acc[r][c] =
              _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * dx), acc[r][c]);
        }
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- IQ4_XS

template <int R, int C>
FOLIO_TARGET_AVX2 void iq4_xs_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                   size_t x_stride, float* out, size_t out_stride) {
  const QuantTileRows<BlockIQ4_XS, const BlockQ8_K*, R, C> t(k, w, w_stride, x, x_stride);
  __m256 acc[R][C];
  zero_tile(acc);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i table = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
  for (int64_t sb = 0; sb < k / kQKK; ++sb) {
    t.prefetch(sb);
    __m256i isum[R][C];
    int16_t sc[R][8];  // signed 6-bit group scales minus 32
    for (int r = 0; r < R; ++r) {
      unpack_iq4_xs_scales(t.w[r][sb], sc[r]);
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int j = 0; j < kQKK / 64; ++j) {
      __m256i x0[C], x1[C];
      for (int c = 0; c < C; ++c) {
        x0[c] = load256(t.x[c][sb].qs + 64 * j);
        x1[c] = load256(t.x[c][sb].qs + 64 * j + 32);
      }
      for (int r = 0; r < R; ++r) {
        // Bytes 0-15: group 2j, 16-31: group 2j+1; low nibbles first.
        const __m256i q = load256(t.w[r][sb].qs + 32 * j);
        const __m256i lo = _mm256_and_si256(q, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        const __m256i w0 = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20));
        const __m256i w1 = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31));
        const __m256i a0 = _mm256_sign_epi8(w0, w0);
        const __m256i a1 = _mm256_sign_epi8(w1, w1);
        const __m256i s0 = _mm256_set1_epi16(sc[r][2 * j]);
        const __m256i s1 = _mm256_set1_epi16(sc[r][2 * j + 1]);
        for (int c = 0; c < C; ++c) {
          const __m256i p0 =
              _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(x0[c], w0)), s0);
          const __m256i p1 =
              _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(x1[c], w1)), s1);
          isum[r][c] = _mm256_add_epi32(isum[r][c], _mm256_add_epi32(p0, p1));
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&t.w[r][sb].d);
      for (int c = 0; c < C; ++c) {
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]),
                                      _mm256_set1_ps(d * t.x[c][sb].d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- dispatch

// The tile of each K-quant type and shape.
FOLIO_KQUANT_PICK;

}  // namespace

MatMulSpec kquant_mul_mat_spec_avx2(DType w) {
  const DotTileFn tile =
      dot_tile_for<kQuantTileRows, kQuantTileCols, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                   DType::Q5_K, DType::Q6_K, DType::IQ4_XS>(w, kquant_pick);
  FOLIO_CHECK_MSG(tile != nullptr, "no avx2 quantized mul_mat tile for {}", dtype_name(w));
  return {ActFormat::kQ8_K, kQuantTileRows, kQuantTileCols, tile, &quantize_act_q8_k_avx2};
}

}  // namespace folio::cpu
