// AVX-512 + VNNI panels for the packed K-quant layouts Q4_K_X16, Q5_K_X16
// and Q6_K_X16, and for IQ4_XS_X16 (quant/repack.h) x Q8_K activation rows
// (one f32 scale, int8 quants and i16 sums of 16 per 256-element super-block).
//
// As for the 32-element layouts (packed_legacy.cc), a VNNI row holds 4 codes
// of each of the panel's 16 rows, and vpdpbusd with 4 broadcast activation
// quants adds to lane n = row n. The K-quant sub-block scales are unpacked
// bytes in the layout ([sub-block][row]), so applying them takes one
// widening load per sub-block for all 16 rows:
//   Q4_K: per 32-element group j: two half-group sums of 16 codes by 4
//         vpdpbusd each (|t| <= 16 * 15 * 128 < 2^15), paired as i16 in
//         each lane (one masked vpshufb) and scaled by one vpdpwssd with
//         [scale_j, scale_j]: isum += scale_j * (t0 + t1), exact, with no
//         vpmulld (2 uops on the port vpdpbusd needs); mins: msum +=
//         min_j * (sum of the group's activation quants) by vpdpwssd on
//         [min_2i, min_2i+1] pairs; acc += float(isum) * (d * dx) -
//         float(msum) * (dmin * dx).
//   Q5_K: as Q4_K, with bit 4 of the codes added from the group's plane (a
//         byte-masked add of 16 per VNNI row, as Q5_0_X16) and four
//         quarter-group sums of 8 codes (|t| <= 8 * 31 * 128 < 2^15) in two
//         vpdpwssd.
//   Q6_K: per 16-element sub-block i (4 VNNI rows): t = 4 vpdpbusd (codes
//         0..63 from nibbles and a 2-bit plane) - 32 * bsum_i;
//         isum += t * scale_i (signed); acc += float(isum) * (d * dx).
//   IQ4_XS: per 32-element group g: t = 8 vpdpbusd on the levels + 128
//         (kIQ4NLValues by vpshufb) - 128 * (the group's activation quant
//         sum); isum += t * scale_g (signed); acc += float(isum) * (d * dx).
// All integer sums are exact (|isum| < 2^27) and each output's float steps
// run once per super-block in K order: results do not depend on how many
// activation rows a call gets, or on the thread count. Tile: 16 rows x up
// to 8 activation rows; decode (one or two activation rows) reads 4 panels
// at once (packed_mul_mat.h) with the same per-output steps.
#include <cstring>

#include "backend/cpu/avx512/kquant_x16.h"
#include "backend/cpu/avx512/packed_panel.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "backend/cpu/drivers/dtype_switch.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using avx512::half16;
using avx512::iq4xs_accumulate;
using avx512::iq4xs_levels;
using avx512::iq4xs_scales;
using avx512::k4_accumulate;
using avx512::k4_bsum_pair;
using avx512::k4_codes;
using avx512::k4_min_pairs;
using avx512::q6_codes;
using avx512::q6_scales;
using quant::BlockQ8_K;
using quant::kQKK;

FOLIO_INLINE_AVX512 __m512i bcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm512_set1_epi32(v);
}

// Prefetches eighth `part` of the kBytes half a super-block past s into L1,
// one line per 64 bytes. A decode step streams every weight once: each
// 32-element group step requests an eighth of what follows it half a
// super-block (about 1 KB) on (panels of a matrix are consecutive, so past
// a panel's end this reads the next panel). Farther read-ahead decoded
// slower (BENCHMARKS.md).
template <size_t kBytes>
FOLIO_INLINE_AVX512 void prefetch_ahead(const uint8_t* s, int part) {
  const uint8_t* p = s + kBytes / 2 + part * (kBytes / 8);
  for (size_t off = 0; off < kBytes / 8; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
}

// Lane n of the result: [a_n as i16, b_n as i16] (|a_n|, |b_n| < 2^15): b's
// low half moved over a's high half, one masked in-lane byte shuffle.
FOLIO_INLINE_AVX512 __m512i pair16(__m512i a, __m512i b) {
  const __m512i idx = _mm512_set4_epi32(0x0D0C0000, 0x09080000, 0x05040000, 0x01000000);
  return _mm512_mask_shuffle_epi8(a, 0xCCCCCCCCCCCCCCCCull, b, idx);
}

// [scale_j, scale_j] of each row as i16 pairs.
FOLIO_INLINE_AVX512 __m512i k4_scale_pairs(const uint8_t* s, int j) {
  const __m512i sc = _mm512_cvtepu8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ4KxScales + 16 * j)));
  return _mm512_or_si512(sc, _mm512_slli_epi32(sc, 16));
}

// isum += scale_j * (dot of group j's codes w with the activation quants q).
template <DType P>
FOLIO_INLINE_AVX512 __m512i k4_group_dot(__m512i isum, const __m512i (&w)[8], const int8_t* q,
                                         __m512i sc2) {
  if constexpr (P == DType::Q4_K_X16) {
    // Two half-group sums of 16 codes (|.| <= 16 * 15 * 128 < 2^15),
    // paired as i16 and scaled by one vpdpwssd.
    __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
    __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast4(q + 4));
    t0 = _mm512_dpbusd_epi32(t0, w[2], bcast4(q + 8));
    t1 = _mm512_dpbusd_epi32(t1, w[3], bcast4(q + 12));
    t0 = _mm512_dpbusd_epi32(t0, w[4], bcast4(q + 16));
    t1 = _mm512_dpbusd_epi32(t1, w[5], bcast4(q + 20));
    t0 = _mm512_dpbusd_epi32(t0, w[6], bcast4(q + 24));
    t1 = _mm512_dpbusd_epi32(t1, w[7], bcast4(q + 28));
    return _mm512_dpwssd_epi32(isum, pair16(t0, t1), sc2);
  } else {
    // Quarter-group sums of 8 codes (|.| <= 8 * 31 * 128 < 2^15).
    __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
    __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast4(q + 4));
    __m512i t2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[2], bcast4(q + 8));
    __m512i t3 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[3], bcast4(q + 12));
    t0 = _mm512_dpbusd_epi32(t0, w[4], bcast4(q + 16));
    t1 = _mm512_dpbusd_epi32(t1, w[5], bcast4(q + 20));
    t2 = _mm512_dpbusd_epi32(t2, w[6], bcast4(q + 24));
    t3 = _mm512_dpbusd_epi32(t3, w[7], bcast4(q + 28));
    isum = _mm512_dpwssd_epi32(isum, pair16(t0, t1), sc2);
    return _mm512_dpwssd_epi32(isum, pair16(t2, t3), sc2);
  }
}

// One Q4_K_X16 / Q5_K_X16 super-block `s` x C activation rows.
template <DType P, int C>
FOLIO_INLINE_AVX512 void k4_superblock(const uint8_t* s, const BlockQ8_K* const (&xr)[C],
                                       int64_t sb, __m512 (&acc)[C]) {
  constexpr size_t kBytes = P == DType::Q4_K_X16 ? quant::kQ4KxBytes : quant::kQ5KxBytes;
  __m512i isum[C], msum[C];
  for (int c = 0; c < C; ++c) isum[c] = msum[c] = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) {
    prefetch_ahead<kBytes>(s, j);
    __m512i w[8];
    k4_codes<P>(s, j, w);
    const __m512i sc2 = k4_scale_pairs(s, j);
    for (int c = 0; c < C; ++c) isum[c] = k4_group_dot<P>(isum[c], w, xr[c][sb].qs + 32 * j, sc2);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512i mp = k4_min_pairs(s, i);
    for (int c = 0; c < C; ++c)
      msum[c] = _mm512_dpwssd_epi32(msum[c], mp, k4_bsum_pair(xr[c][sb], i));
  }
  for (int c = 0; c < C; ++c) acc[c] = k4_accumulate(acc[c], isum[c], msum[c], s, xr[c][sb].d);
}

// isum += sum over the two 16-element sub-blocks of group g of
// scale * (dot of the codes with the activation quants - 32 * bsum).
FOLIO_INLINE_AVX512 __m512i q6_group_dot(__m512i isum, const __m512i (&w)[8], const BlockQ8_K& xb,
                                         int g, __m512i sc0, __m512i sc1) {
  const int8_t* q = xb.qs + 32 * g;
  __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
  __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[4], bcast4(q + 16));
  t0 = _mm512_dpbusd_epi32(t0, w[1], bcast4(q + 4));
  t1 = _mm512_dpbusd_epi32(t1, w[5], bcast4(q + 20));
  t0 = _mm512_dpbusd_epi32(t0, w[2], bcast4(q + 8));
  t1 = _mm512_dpbusd_epi32(t1, w[6], bcast4(q + 24));
  t0 = _mm512_dpbusd_epi32(t0, w[3], bcast4(q + 12));
  t1 = _mm512_dpbusd_epi32(t1, w[7], bcast4(q + 28));
  const int16_t* bs = xb.bsums + 2 * g;
  t0 = _mm512_sub_epi32(t0, _mm512_set1_epi32(32 * bs[0]));
  t1 = _mm512_sub_epi32(t1, _mm512_set1_epi32(32 * bs[1]));
  return _mm512_add_epi32(
      isum, _mm512_add_epi32(_mm512_mullo_epi32(t0, sc0), _mm512_mullo_epi32(t1, sc1)));
}

// One Q6_K_X16 super-block `s` x C activation rows.
template <int C>
FOLIO_INLINE_AVX512 void q6_superblock(const uint8_t* s, const BlockQ8_K* const (&xr)[C],
                                       int64_t sb, __m512 (&acc)[C]) {
  __m512i isum[C];
  for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
  for (int g = 0; g < 8; ++g) {
    prefetch_ahead<quant::kQ6KxBytes>(s, g);
    __m512i w[8];
    q6_codes(s, g, w);
    const __m512i sc0 = q6_scales(s, g, 0), sc1 = q6_scales(s, g, 1);
    for (int c = 0; c < C; ++c) isum[c] = q6_group_dot(isum[c], w, xr[c][sb], g, sc0, sc1);
  }
  const __m512 d = half16(s + quant::kQ6KxD);
  for (int c = 0; c < C; ++c) {
    acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]),
                             _mm512_mul_ps(d, _mm512_set1_ps(xr[c][sb].d)), acc[c]);
  }
}

// isum += scale_g * (dot of group g's levels with the activation quants),
// from the levels + 128 (w) less 128 * the group's activation quant sum.
FOLIO_INLINE_AVX512 __m512i iq4xs_group_dot(__m512i isum, const __m512i (&w)[8],
                                            const BlockQ8_K& xb, int g, __m512i sc) {
  const int8_t* q = xb.qs + 32 * g;
  __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
  __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast4(q + 4));
  for (int r = 2; r < 8; r += 2) {
    t0 = _mm512_dpbusd_epi32(t0, w[r], bcast4(q + 4 * r));
    t1 = _mm512_dpbusd_epi32(t1, w[r + 1], bcast4(q + 4 * r + 4));
  }
  const int16_t* bs = xb.bsums + 2 * g;
  const __m512i t =
      _mm512_sub_epi32(_mm512_add_epi32(t0, t1), _mm512_set1_epi32(128 * (bs[0] + bs[1])));
  return _mm512_add_epi32(isum, _mm512_mullo_epi32(t, sc));
}

// One IQ4_XS_X16 super-block `s` x C activation rows.
template <int C>
FOLIO_INLINE_AVX512 void iq4xs_superblock(const uint8_t* s, const BlockQ8_K* const (&xr)[C],
                                          int64_t sb, __m512 (&acc)[C]) {
  constexpr size_t kBytes = quant::kIQ4XSxBytes;
  __m512i isum[C];
  for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
  for (int g = 0; g < 8; ++g) {
    prefetch_ahead<kBytes>(s, g);
    __m512i w[8];
    iq4xs_levels(s, g, 128, w);
    const __m512i sc = iq4xs_scales(s, g);
    for (int c = 0; c < C; ++c) isum[c] = iq4xs_group_dot(isum[c], w, xr[c][sb], g, sc);
  }
  for (int c = 0; c < C; ++c) acc[c] = iq4xs_accumulate(acc[c], isum[c], s, xr[c][sb].d);
}

// Decode: C (<= 2) activation rows x NP consecutive panels, NP weight
// streams at once (a single stream per thread leaves the memory system
// idle), each output with the same integer sums and float steps as the
// column tiles.
template <DType P>
struct KQuantMulti {
  template <int NP, int C>
  FOLIO_TARGET_AVX512 static void run(int64_t k, const uint8_t* panels, size_t pb, const uint8_t* x,
                                      size_t xs, float* out, size_t os, __mmask16 last_mask) {
    const BlockQ8_K* xr[C];
    __m512 acc[NP][C];
    for (int c = 0; c < C; ++c) {
      xr[c] = reinterpret_cast<const BlockQ8_K*>(x + c * xs);
      for (int i = 0; i < NP; ++i) acc[i][c] = _mm512_setzero_ps();
    }
    if constexpr (P == DType::Q6_K_X16) {
      q6(k, panels, pb, xr, acc);
    } else if constexpr (P == DType::IQ4_XS_X16) {
      iq4xs(k, panels, pb, xr, acc);
    } else {
      k4(k, panels, pb, xr, acc);
    }
    avx512::store_panels<NP, C>(acc, out, os, last_mask);
  }

  template <int NP, int C>
  FOLIO_TARGET_AVX512 static void k4(int64_t k, const uint8_t* panels, size_t pb,
                                     const BlockQ8_K* (&xr)[C], __m512 (&acc)[NP][C]) {
    constexpr size_t kBytes = P == DType::Q4_K_X16 ? quant::kQ4KxBytes : quant::kQ5KxBytes;
    const int64_t nsb = k / kQKK;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      __m512i isum[NP][C], msum[NP][C];
      for (int i = 0; i < NP; ++i) {
        for (int c = 0; c < C; ++c) isum[i][c] = msum[i][c] = _mm512_setzero_si512();
      }
      for (int j = 0; j < 8; ++j) {
        for (int i = 0; i < NP; ++i) {
          const uint8_t* s = panels + i * pb + sb * kBytes;
          prefetch_ahead<kBytes>(s, j);
          __m512i w[8];
          k4_codes<P>(s, j, w);
          const __m512i sc2 = k4_scale_pairs(s, j);
          for (int c = 0; c < C; ++c)
            isum[i][c] = k4_group_dot<P>(isum[i][c], w, xr[c][sb].qs + 32 * j, sc2);
        }
      }
      for (int m = 0; m < 4; ++m) {
        for (int i = 0; i < NP; ++i) {
          const __m512i mp = k4_min_pairs(panels + i * pb + sb * kBytes, m);
          for (int c = 0; c < C; ++c)
            msum[i][c] = _mm512_dpwssd_epi32(msum[i][c], mp, k4_bsum_pair(xr[c][sb], m));
        }
      }
      for (int i = 0; i < NP; ++i) {
        for (int c = 0; c < C; ++c) {
          acc[i][c] = k4_accumulate(acc[i][c], isum[i][c], msum[i][c],
                                    panels + i * pb + sb * kBytes, xr[c][sb].d);
        }
      }
    }
  }

  template <int NP, int C>
  FOLIO_TARGET_AVX512 static void iq4xs(int64_t k, const uint8_t* panels, size_t pb,
                                        const BlockQ8_K* (&xr)[C], __m512 (&acc)[NP][C]) {
    constexpr size_t kBytes = quant::kIQ4XSxBytes;
    const int64_t nsb = k / kQKK;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      __m512i isum[NP][C];
      for (int i = 0; i < NP; ++i) {
        for (int c = 0; c < C; ++c) isum[i][c] = _mm512_setzero_si512();
      }
      for (int g = 0; g < 8; ++g) {
        for (int i = 0; i < NP; ++i) {
          const uint8_t* s = panels + i * pb + sb * kBytes;
          prefetch_ahead<kBytes>(s, g);
          __m512i w[8];
          iq4xs_levels(s, g, 128, w);
          const __m512i sc = iq4xs_scales(s, g);
          for (int c = 0; c < C; ++c) isum[i][c] = iq4xs_group_dot(isum[i][c], w, xr[c][sb], g, sc);
        }
      }
      for (int i = 0; i < NP; ++i) {
        for (int c = 0; c < C; ++c) {
          acc[i][c] =
              iq4xs_accumulate(acc[i][c], isum[i][c], panels + i * pb + sb * kBytes, xr[c][sb].d);
        }
      }
    }
  }

  template <int NP, int C>
  FOLIO_TARGET_AVX512 static void q6(int64_t k, const uint8_t* panels, size_t pb,
                                     const BlockQ8_K* (&xr)[C], __m512 (&acc)[NP][C]) {
    const int64_t nsb = k / kQKK;
    for (int64_t sb = 0; sb < nsb; ++sb) {
      __m512i isum[NP][C];
      for (int i = 0; i < NP; ++i) {
        for (int c = 0; c < C; ++c) isum[i][c] = _mm512_setzero_si512();
      }
      for (int g = 0; g < 8; ++g) {
        for (int i = 0; i < NP; ++i) {
          const uint8_t* s = panels + i * pb + sb * quant::kQ6KxBytes;
          prefetch_ahead<quant::kQ6KxBytes>(s, g);
          __m512i w[8];
          q6_codes(s, g, w);
          const __m512i sc0 = q6_scales(s, g, 0), sc1 = q6_scales(s, g, 1);
          for (int c = 0; c < C; ++c)
            isum[i][c] = q6_group_dot(isum[i][c], w, xr[c][sb], g, sc0, sc1);
        }
      }
      for (int i = 0; i < NP; ++i) {
        const __m512 d = half16(panels + i * pb + sb * quant::kQ6KxBytes + quant::kQ6KxD);
        for (int c = 0; c < C; ++c) {
          acc[i][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][c]),
                                      _mm512_mul_ps(d, _mm512_set1_ps(xr[c][sb].d)), acc[i][c]);
        }
      }
    }
  }
};

// The prefill family (packed_panel.h): 16 rows x up to kCols activation
// rows. 8 amortizes each group's code unpack (shifts, masks, bit planes)
// over 8 columns; on the K = 4096 prefill shapes 8 beat 4, 6 and 12 for all
// three layouts.
template <DType P>
struct KQuantTiles {
  static constexpr int kCols = 8;
  static constexpr int64_t kStepElems = kQKK;
  static constexpr size_t kStepBytes = P == DType::Q4_K_X16     ? quant::kQ4KxBytes
                                       : P == DType::Q5_K_X16   ? quant::kQ5KxBytes
                                       : P == DType::IQ4_XS_X16 ? quant::kIQ4XSxBytes
                                                                : quant::kQ6KxBytes;
  using XRow = const BlockQ8_K*;
  static const BlockQ8_K* x_row(const uint8_t* x, int64_t) {
    return reinterpret_cast<const BlockQ8_K*>(x);
  }

  template <int C>
  FOLIO_INLINE_AVX512 void step(const uint8_t* s, const BlockQ8_K* const (&xr)[C], int64_t sb,
                                __m512 (&acc)[C]) {
    if constexpr (P == DType::Q6_K_X16) {
      q6_superblock<C>(s, xr, sb, acc);
    } else if constexpr (P == DType::IQ4_XS_X16) {
      iq4xs_superblock<C>(s, xr, sb, acc);
    } else {
      k4_superblock<P, C>(s, xr, sb, acc);
    }
  }
};

}  // namespace

MultiPanelFn kquant_decode_avx512(DType packed) {
  return dtype_switch<DType::Q4_K_X16, DType::Q5_K_X16, DType::Q6_K_X16, DType::IQ4_XS_X16>(
      packed, [](auto p) -> MultiPanelFn {
        return &avx512::decode_panels<KQuantMulti<decltype(p)::value>>;
      });
}

PanelFn kquant_panel_avx512(DType packed) {
  return dtype_switch<DType::Q4_K_X16, DType::Q5_K_X16, DType::Q6_K_X16, DType::IQ4_XS_X16>(
      packed,
      [](auto p) -> PanelFn { return &avx512::panel_cols<KQuantTiles<decltype(p)::value>>; });
}

}  // namespace folio::cpu
