// AVX-512 + VNNI mul_mat for quantized weights x F32 activations.
//
// Activations are quantized once per op (mul_mat_tiled): to Q8_0 rows
// (Q8Row32: int8 quants, f32 block scales, block sums) for Q8_0 / Q4_0
// weights, to Q8_K super-blocks for Q4_K / Q6_K. The dot products then run
// on integers; only the per-block scales are applied in f32.
//
// Q8_0 / Q4_0: one zmm holds two 32-element blocks. vpdpbusd needs an
//   unsigned operand, so weights become unsigned codes with an offset
//   (Q8_0: q ^ 0x80 = q + 128; Q4_0: the raw nibble, offset 8) and the
//   accumulator starts at -offset * sum(x quants) of each block (lanes 0 and
//   8), which cancels the offset exactly. Lanes 0-7 / 8-15 then hold partial
//   dots of block b / b+1, converted to f32 and scaled by [dw*dx] per half.
// Q4_K: a 64-element chunk is the 32 quant bytes of two groups (low nibbles =
//   group 2j, high = group 2j+1) against 64 contiguous Q8_K quants:
//   vpmaddubsw (<= 15*127*2, no saturation), then vpdpwssd with the 6-bit
//   group scales spread by vpermw. The mins enter once per super-block as
//   dmin * sum_j m_j * (bsum[2j] + bsum[2j+1]).
// Q6_K: 6-bit codes (0..63) built from ql nibbles and qh bit pairs (variable
//   shifts per 256-bit half), vpmaddubsw (<= 63*127*2), vpdpwssd with the
//   int8 group scales; the -32 offset is removed once per super-block as
//   32 * sum_g scale_g * bsum_g.
// Tile: 4 weight rows x 2 activation rows (integer and f32 accumulators for
// each pair stay in registers); weight unpacking is shared by both columns.
// Integer sums are exact and each output's f32 accumulation order depends only
// on K, never on the tile shape or the thread count.
#include <cstring>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "core/target.h"
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

constexpr int kTileRows = 4;
constexpr int kTileCols = 2;

FOLIO_INLINE_AVX512 float half_to_float(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// [a x 8, b x 8]
FOLIO_INLINE_AVX512 __m512 pair_ps(float a, float b) {
  return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// a in lane 0, b in lane 8, zeros elsewhere.
FOLIO_INLINE_AVX512 __m512i pair_lane0(int32_t a, int32_t b) {
  return _mm512_mask_set1_epi32(_mm512_maskz_set1_epi32(0x0001, a), 0x0100, b);
}

template <int R, int C>
FOLIO_INLINE_AVX512 void store_tile(__m512 (&acc)[R][C], float* out, size_t out_stride) {
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = avx512::hsum(acc[r][c]);
  }
}

// ---------------------------------------------------------------- Q8_0, Q4_0

// 64 unsigned weight codes of blocks b and b+1 (kPair) or of block b alone
// (upper half: anything, it meets zero activations).
template <DType WT, bool kPair>
FOLIO_INLINE_AVX512 __m512i legacy_codes(const unsigned char* row, int64_t b) {
  if constexpr (WT == DType::Q8_0) {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[0].qs));
    __m512i q = _mm512_castsi256_si512(lo);
    if constexpr (kPair) {
      q = _mm512_inserti64x4(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk[1].qs)), 1);
    }
    return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {
    const auto* blk = reinterpret_cast<const BlockQ4_0*>(row) + b;
    const __m128i qa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[0].qs));
    __m256i q = _mm256_zextsi128_si256(qa);
    if constexpr (kPair) {
      q = _mm256_inserti128_si256(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk[1].qs)),
                                  1);
    }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(q, m4);                        // [lo_a | lo_b]
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);  // [hi_a | hi_b]
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));  // [lo_a, hi_a, lo_b, hi_b]
  }
}

template <DType WT>
FOLIO_INLINE_AVX512 float legacy_scale(const unsigned char* row, int64_t b) {
  if constexpr (WT == DType::Q8_0) {
    return half_to_float(&(reinterpret_cast<const BlockQ8_0*>(row) + b)->d);
  } else {
    return half_to_float(&(reinterpret_cast<const BlockQ4_0*>(row) + b)->d);
  }
}

template <DType WT, int R, int C, bool kPair>
FOLIO_INLINE_AVX512 void legacy_step(const unsigned char* const (&wr)[R], const Q8Row32 (&xr)[C],
                                     int64_t b, __m512 (&acc)[R][C]) {
  constexpr int32_t kOffset = WT == DType::Q8_0 ? 128 : 8;
  __m512i xq[C];
  __m512 xd[C];
  __m512i corr[C];
  for (int c = 0; c < C; ++c) {
    if constexpr (kPair) {
      xq[c] = _mm512_loadu_si512(xr[c].qs + b * kQK);
      xd[c] = pair_ps(xr[c].d[b], xr[c].d[b + 1]);
      corr[c] = pair_lane0(-kOffset * xr[c].sum[b], -kOffset * xr[c].sum[b + 1]);
    } else {
      xq[c] = _mm512_zextsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c].qs + b * kQK)));
      xd[c] = pair_ps(xr[c].d[b], 0.0f);
      corr[c] = pair_lane0(-kOffset * xr[c].sum[b], 0);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512i wq = legacy_codes<WT, kPair>(wr[r], b);
    const __m512 wd =
        pair_ps(legacy_scale<WT>(wr[r], b), kPair ? legacy_scale<WT>(wr[r], b + 1) : 0.0f);
    for (int c = 0; c < C; ++c) {
      const __m512i dot = _mm512_dpbusd_epi32(corr[c], wq, xq[c]);
      acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(wd, xd[c]), acc[r][c]);
    }
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX512 void legacy_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                     size_t x_stride, float* out, size_t out_stride) {
  const int64_t nb = k / kQK;
  const unsigned char* wr[R];
  Q8Row32 xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c)
    xr[c] = q8row32(static_cast<const unsigned char*>(x) + c * x_stride, k);
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) legacy_step<WT, R, C, true>(wr, xr, b, acc);
  if (b < nb) legacy_step<WT, R, C, false>(wr, xr, b, acc);
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

FOLIO_INLINE_AVX512 ScalesMins unpack_q4_k_scales(const uint8_t* s) {
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
FOLIO_TARGET_AVX512 void q4_k_tile(int64_t k, const void* w, size_t w_stride, const void* x,
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
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isum[R][C];
    __m512i scales[R];  // 8 group scales as i16 in lanes 0-7
    __m256i mins[R];    // 16 i16: m0, m0, m1, m1, ... (pairs meet the 16-element bsums)
    for (int r = 0; r < R; ++r) {
      const ScalesMins sm = unpack_q4_k_scales(wr[r][sb].scales);
      scales[r] = _mm512_castsi128_si512(
          _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.scales))));
      const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.mins));
      mins[r] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
      for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
    }
    for (int j = 0; j < kQKK / 64; ++j) {
      // i16 lanes 0-15 take the scale of group 2j, lanes 16-31 of group 2j+1.
      const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * j)),
                                             _mm256_set1_epi16(static_cast<int16_t>(2 * j + 1)), 1);
      __m512i xq[C];
      for (int c = 0; c < C; ++c) xq[c] = _mm512_loadu_si512(xr[c][sb].qs + 64 * j);
      for (int r = 0; r < R; ++r) {
        const __m256i q =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][sb].qs + 32 * j));
        const __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, m4)),
                                              _mm256_and_si256(_mm256_srli_epi16(q, 4), m4), 1);
        const __m512i s = _mm512_permutexvar_epi16(idx, scales[r]);
        for (int c = 0; c < C; ++c) {
          isum[r][c] = _mm512_dpwssd_epi32(isum[r][c], _mm512_maddubs_epi16(wq, xq[c]), s);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&wr[r][sb].d);
      const float dmin = half_to_float(&wr[r][sb].dmin);
      for (int c = 0; c < C; ++c) {
        const float dx = xr[c][sb].d;
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].bsums));
        const __m512i msum = _mm512_zextsi256_si512(_mm256_madd_epi16(mins[r], bsums));
        acc[r][c] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]), _mm512_set1_ps(d * dx), acc[r][c]);
        acc[r][c] =
            _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_set1_ps(dmin * dx), acc[r][c]);
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
  const BlockQ6_K* wr[R];
  const BlockQ8_K* xr[C];
  for (int r = 0; r < R; ++r) {
    wr[r] = reinterpret_cast<const BlockQ6_K*>(static_cast<const unsigned char*>(w) + r * w_stride);
  }
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  // qh bit pairs to bits 4-5: elements 0-31 / 32-63 of a half use bits 0-1 /
  // 2-3 (shift left 4 / 2), elements 64-95 / 96-127 bits 4-5 / 6-7 (right 0 / 2).
  const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    __m512i isum[R][C];
    __m256i scales[R];  // 16 group scales as i16
    for (int r = 0; r < R; ++r) {
      scales[r] =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr[r][sb].scales)));
      for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      // Chunk 2h + s covers elements 128h + 64s .. +63; i16 lane L of its
      // vpmaddubsw output holds elements 2L, 2L+1, i.e. group 8h + 4s + L/8.
      const __m512i lane_group = _mm512_srli_epi16(
          _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14,
                           13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
          3);
      const __m512i idx0 =
          _mm512_add_epi16(lane_group, _mm512_set1_epi16(static_cast<int16_t>(8 * h)));
      const __m512i idx1 = _mm512_add_epi16(idx0, _mm512_set1_epi16(4));
      __m512i x0[C], x1[C];
      for (int c = 0; c < C; ++c) {
        x0[c] = _mm512_loadu_si512(xr[c][sb].qs + 128 * h);
        x1[c] = _mm512_loadu_si512(xr[c][sb].qs + 128 * h + 64);
      }
      for (int r = 0; r < R; ++r) {
        const __m512i ql = _mm512_loadu_si512(wr[r][sb].ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr[r][sb].qh + 32 * h)));
        const __m512i q0 = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                           _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m30));
        const __m512i q1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                           _mm512_and_si512(_mm512_srlv_epi16(qh, shr), m30));
        const __m512i sc = _mm512_castsi256_si512(scales[r]);
        const __m512i s0 = _mm512_permutexvar_epi16(idx0, sc);
        const __m512i s1 = _mm512_permutexvar_epi16(idx1, sc);
        for (int c = 0; c < C; ++c) {
          isum[r][c] = _mm512_dpwssd_epi32(isum[r][c], _mm512_maddubs_epi16(q0, x0[c]), s0);
          isum[r][c] = _mm512_dpwssd_epi32(isum[r][c], _mm512_maddubs_epi16(q1, x1[c]), s1);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float d = half_to_float(&wr[r][sb].d);
      for (int c = 0; c < C; ++c) {
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[c][sb].bsums));
        const __m256i off =
            _mm256_slli_epi32(_mm256_madd_epi16(scales[r], bsums), 5);  // 32 * sc * bsum
        const __m512i dot = _mm512_sub_epi32(isum[r][c], _mm512_zextsi256_si512(off));
        acc[r][c] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(d * xr[c][sb].d), acc[r][c]);
      }
    }
  }
  store_tile<R, C>(acc, out, out_stride);
}

// ---------------------------------------------------------------- dispatch

#define FOLIO_TILE_TABLE(NAME, ...)                                                               \
  FOLIO_TARGET_AVX512 void NAME(int64_t k, const void* w, size_t w_stride, int nr, const void* x, \
                                size_t x_stride, int nc, float* out, size_t out_stride) {         \
    using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);       \
    static constexpr Fn kTable[kTileRows][kTileCols] = {{__VA_ARGS__<1, 1>, __VA_ARGS__<1, 2>},   \
                                                        {__VA_ARGS__<2, 1>, __VA_ARGS__<2, 2>},   \
                                                        {__VA_ARGS__<3, 1>, __VA_ARGS__<3, 2>},   \
                                                        {__VA_ARGS__<4, 1>, __VA_ARGS__<4, 2>}};  \
    kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);                         \
  }

template <int R, int C>
FOLIO_TARGET_AVX512 void q8_0_tile(int64_t k, const void* w, size_t ws, const void* x, size_t xs,
                                   float* out, size_t os) {
  legacy_tile<DType::Q8_0, R, C>(k, w, ws, x, xs, out, os);
}
template <int R, int C>
FOLIO_TARGET_AVX512 void q4_0_tile(int64_t k, const void* w, size_t ws, const void* x, size_t xs,
                                   float* out, size_t os) {
  legacy_tile<DType::Q4_0, R, C>(k, w, ws, x, xs, out, os);
}

FOLIO_TILE_TABLE(q8_0_tile_any, q8_0_tile)
FOLIO_TILE_TABLE(q4_0_tile_any, q4_0_tile)
FOLIO_TILE_TABLE(q4_k_tile_any, q4_k_tile)
FOLIO_TILE_TABLE(q6_k_tile_any, q6_k_tile)

#undef FOLIO_TILE_TABLE

}  // namespace

MatMulSpec quant_mul_mat_spec_avx512(DType w) {
  switch (w) {
    case DType::Q8_0:
      return {ActFormat::kQ8_0, kTileRows, kTileCols, &q8_0_tile_any, &quantize_act_q8_0_avx512};
    case DType::Q4_0:
      return {ActFormat::kQ8_0, kTileRows, kTileCols, &q4_0_tile_any, &quantize_act_q8_0_avx512};
    case DType::Q4_K:
      return {ActFormat::kQ8_K, kTileRows, kTileCols, &q4_k_tile_any, &quantize_act_q8_k_avx512};
    case DType::Q6_K:
      return {ActFormat::kQ8_K, kTileRows, kTileCols, &q6_k_tile_any, &quantize_act_q8_k_avx512};
    default:
      break;
  }
  FOLIO_CHECK_MSG(false, "no avx512 quantized mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
