// AVX2 mul_mat for quantized weights x F32 activations.
//
// Activations are quantized once per op (mul_mat_tiled): to Q8_0 rows
// (Q8Row32: int8 quants, f32 block scales, block sums) for Q8_0 / Q4_0
// weights, to Q8_K super-blocks for Q4_K / Q6_K. Dot products run on
// integers with vpmaddubsw (u8 x s8 -> pairs summed in i16) and vpmaddwd
// (i16 x i16 -> pairs summed in i32); per-block scales are applied in f32.
//
// Q8_0: one ymm per 32-element block. vpmaddubsw needs an unsigned operand
//   and must not saturate, so it multiplies |w| by x carrying w's sign
//   (vpsignb): |products| <= 127*127*2 < 2^15.
// Q4_0: the nibbles (0..15) are the unsigned operand; the -8 offset is removed
//   exactly by starting the block's i32 lanes at -8 * sum(x quants).
// Q4_K: per 32-element group, vpmaddubsw of the nibbles with the Q8_K quants
//   (<= 15*127*2), then vpmaddwd with the group's 6-bit scale, accumulated in
//   i32 over the super-block; the mins enter once per super-block as
//   dmin * sum_j m_j * (bsum[2j] + bsum[2j+1]).
// Q6_K: 6-bit codes (0..63) from ql nibbles | qh bit pairs, vpmaddubsw
//   (<= 63*127*2), vpmaddwd with the two int8 scales of the 32 elements;
//   the -32 offset is removed once per super-block as 32 * sum_g sc_g * bsum_g.
// Tile: 2 weight rows x 2 activation rows (the K-quant loops hold an i32 and
// an f32 accumulator per pair plus the unpacked codes within 16 registers).
// Integer sums are exact and each output's f32 accumulation order depends only
// on K, never on the tile shape or the thread count.
#include <cstring>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using quant::BlockQ4_0;
using quant::BlockQ4_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

constexpr int kTileRows = 2;
constexpr int kTileCols = 2;

FOLIO_INLINE_AVX2 float half_to_float(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

template <int R, int C>
FOLIO_INLINE_AVX2 void store_tile(__m256 (&acc)[R][C], float* out, size_t out_stride) {
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = avx2::hsum(acc[r][c]);
  }
}

// ---------------------------------------------------------------- Q8_0, Q4_0

template <DType WT, int R, int C>
FOLIO_TARGET_AVX2 void legacy_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                   size_t x_stride, float* out, size_t out_stride) {
  using Block = std::conditional_t<WT == DType::Q8_0, BlockQ8_0, BlockQ4_0>;
  const int64_t nb = k / kQK;
  const Block* wr[R];
  Q8Row32 xr[C];
  for (int r = 0; r < R; ++r) {
    wr[r] = reinterpret_cast<const Block*>(static_cast<const unsigned char*>(w) + r * w_stride);
  }
  for (int c = 0; c < C; ++c)
    xr[c] = q8row32(static_cast<const unsigned char*>(x) + c * x_stride, k);
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i xq[C];
    for (int c = 0; c < C; ++c) {
      xq[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c].qs + b * kQK));
    }
    for (int r = 0; r < R; ++r) {
      const float dw = half_to_float(&wr[r][b].d);
      if constexpr (WT == DType::Q8_0) {
        const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][b].qs));
        const __m256i aw = _mm256_sign_epi8(wq, wq);
        for (int c = 0; c < C; ++c) {
          const __m256i dot =
              _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq[c], wq)), ones);
          acc[r][c] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * xr[c].d[b]), acc[r][c]);
        }
      } else {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][b].qs));
        // Elements 0-15: low nibbles, 16-31: high nibbles.
        const __m256i wq = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
        for (int c = 0; c < C; ++c) {
          const __m256i corr = _mm256_zextsi128_si256(_mm_cvtsi32_si128(-8 * xr[c].sum[b]));
          const __m256i dot =
              _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wq, xq[c]), ones), corr);
          acc[r][c] =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * xr[c].d[b]), acc[r][c]);
        }
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- Q4_K

// The 8 six-bit scales and mins of a Q4_K super-block, as bytes (format
// facts in quant/blocks.h: bytes 0-3 / 4-7 hold scales / mins 0-3 in their
// low 6 bits and the top 2 bits of scales / mins 4-7; bytes 8-11 the low
// nibbles of scales 4-7 and, above them, of mins 4-7).
struct ScalesMins {
  uint64_t scales;
  uint64_t mins;
};

inline ScalesMins unpack_q4_k_scales(const uint8_t* s) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  const uint32_t sc_lo = a & 0x3F3F3F3F;
  const uint32_t sc_hi = (c & 0x0F0F0F0F) | ((a >> 2) & 0x30303030);
  const uint32_t mn_lo = b & 0x3F3F3F3F;
  const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0F) | ((b >> 2) & 0x30303030);
  return {static_cast<uint64_t>(sc_hi) << 32 | sc_lo, static_cast<uint64_t>(mn_hi) << 32 | mn_lo};
}

template <int R, int C>
FOLIO_TARGET_AVX2 void q4_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                 size_t x_stride, float* out, size_t out_stride) {
  const int64_t nsb = k / kQKK;
  const BlockQ4_K* wr[R];
  const BlockQ8_K* xr[C];
  for (int r = 0; r < R; ++r) {
    wr[r] = reinterpret_cast<const BlockQ4_K*>(static_cast<const unsigned char*>(w) + r * w_stride);
  }
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m256i isum[R][C];
    uint8_t sc[R][8];
    __m256i mins[R];  // 16 i16: m0, m0, m1, m1, ... (pairs meet the 16-element bsums)
    for (int r = 0; r < R; ++r) {
      const ScalesMins sm = unpack_q4_k_scales(wr[r][sb].scales);
      std::memcpy(sc[r], &sm.scales, 8);
      const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.mins));
      mins[r] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int j = 0; j < kQKK / 64; ++j) {
      __m256i x0[C], x1[C];
      for (int c = 0; c < C; ++c) {
        x0[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].qs + 64 * j));
        x1[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].qs + 64 * j + 32));
      }
      for (int r = 0; r < R; ++r) {
        const __m256i q =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][sb].qs + 32 * j));
        const __m256i lo = _mm256_and_si256(q, m4);                        // group 2j
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);  // group 2j+1
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
      const float d = half_to_float(&wr[r][sb].d);
      const float dmin = half_to_float(&wr[r][sb].dmin);
      for (int c = 0; c < C; ++c) {
        const float dx = xr[c][sb].d;
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].bsums));
        const __m256i msum = _mm256_madd_epi16(mins[r], bsums);
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
  const __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32 * (Q & 1)));
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
  for (int c = 0; c < C; ++c) {
    xq[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].qs + 128 * h + 32 * Q));
  }
  for (int r = 0; r < R; ++r) {
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][sb].qh + 32 * h));
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
  const int64_t nsb = k / kQKK;
  const BlockQ6_K* wr[R];
  const BlockQ8_K* xr[C];
  for (int r = 0; r < R; ++r) {
    wr[r] = reinterpret_cast<const BlockQ6_K*>(static_cast<const unsigned char*>(w) + r * w_stride);
  }
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m256i isum[R][C];
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    for (int h = 0; h < 2; ++h) {
      q6_quarter<0>(wr, xr, sb, h, isum);
      q6_quarter<1>(wr, xr, sb, h, isum);
      q6_quarter<2>(wr, xr, sb, h, isum);
      q6_quarter<3>(wr, xr, sb, h, isum);
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&wr[r][sb].d);
      const __m256i scales =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][sb].scales)));
      for (int c = 0; c < C; ++c) {
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].bsums));
        const __m256i off =
            _mm256_slli_epi32(_mm256_madd_epi16(scales, bsums), 5);  // 32 * sc * bsum
        const __m256i dot = _mm256_sub_epi32(isum[r][c], off);
        acc[r][c] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * xr[c][sb].d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- dispatch

#define FOLIO_TILE_FN(NAME, TILE)                                                               \
  FOLIO_TARGET_AVX2 void NAME(int64_t k, const void* w, size_t w_stride, int nr, const void* x, \
                              size_t x_stride, int nc, float* out, size_t out_stride) {         \
    using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);     \
    static constexpr Fn kTable[kTileRows][kTileCols] = {{TILE<1, 1>, TILE<1, 2>},               \
                                                        {TILE<2, 1>, TILE<2, 2>}};              \
    kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);                       \
  }

template <int R, int C>
FOLIO_TARGET_AVX2 void q8_0_tile(int64_t k, const void* w, size_t ws, const void* x, size_t xs,
                                 float* out, size_t os) {
  legacy_tile<DType::Q8_0, R, C>(k, w, ws, x, xs, out, os);
}
template <int R, int C>
FOLIO_TARGET_AVX2 void q4_0_tile(int64_t k, const void* w, size_t ws, const void* x, size_t xs,
                                 float* out, size_t os) {
  legacy_tile<DType::Q4_0, R, C>(k, w, ws, x, xs, out, os);
}

FOLIO_TILE_FN(q8_0_tile_any, q8_0_tile)
FOLIO_TILE_FN(q4_0_tile_any, q4_0_tile)
FOLIO_TILE_FN(q4_k_tile_any, q4_k_tile)
FOLIO_TILE_FN(q6_k_tile_any, q6_k_tile)

#undef FOLIO_TILE_FN

}  // namespace

MatMulSpec quant_mul_mat_spec_avx2(DType w) {
  switch (w) {
    case DType::Q8_0:
      return {ActFormat::kQ8_0, kTileRows, kTileCols, &q8_0_tile_any, &quantize_act_q8_0_avx2};
    case DType::Q4_0:
      return {ActFormat::kQ8_0, kTileRows, kTileCols, &q4_0_tile_any, &quantize_act_q8_0_avx2};
    case DType::Q4_K:
      return {ActFormat::kQ8_K, kTileRows, kTileCols, &q4_k_tile_any, &quantize_act_q8_k_avx2};
    case DType::Q6_K:
      return {ActFormat::kQ8_K, kTileRows, kTileCols, &q6_k_tile_any, &quantize_act_q8_k_avx2};
    default:
      break;
  }
  FOLIO_CHECK_MSG(false, "no avx2 quantized mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
