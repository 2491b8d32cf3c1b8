// AVX-512 + VNNI panels for the packed K-quant layouts Q4_K_X16 and
// Q6_K_X16 (quant/repack.h) x Q8_K activation rows (one f32 scale, int8
// quants and i16 sums of 16 per 256-element super-block).
//
// As for the 32-element layouts (packed_legacy.cc), a VNNI row holds 4 codes
// of each of the panel's 16 rows, and vpdpbusd with 4 broadcast activation
// quants adds to lane n = row n. The K-quant sub-block scales are unpacked
// bytes in the layout ([sub-block][row]), so applying them is one
// vpmovzxbd / vpmovsxbd and one vpmulld per sub-block for all 16 rows:
//   Q4_K: per 32-element group j: t = the 8 vpdpbusd (codes 0..15);
//         isum += t * scale_j; mins: msum += min_j * (sum of the group's
//         activation quants) by vpdpwssd on [min_2i, min_2i+1] pairs;
//         acc += float(isum) * (d * dx) - float(msum) * (dmin * dx).
//   Q6_K: per 16-element sub-block i (4 VNNI rows): t = 4 vpdpbusd (codes
//         0..63 from nibbles and a 2-bit plane) - 32 * bsum_i;
//         isum += t * scale_i (signed); acc += float(isum) * (d * dx).
// All integer sums are exact (|isum| < 2^27) and each output's float steps
// run once per super-block in K order: results do not depend on how many
// activation rows a call gets, or on the thread count.
#include <cstring>

#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using quant::BlockQ8_K;
using quant::kQKK;

FOLIO_INLINE_AVX512 __m512i bcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm512_set1_epi32(v);
}

// Prefetches [p, p + n) into L1, one line per 64 bytes. A decode step
// streams every weight once: each 32-element group step requests an eighth
// of the super-block two ahead (panels of a matrix are consecutive, so past
// a panel's end this reads the next panel).
FOLIO_INLINE_AVX512 void prefetch_lines(const uint8_t* p, size_t n) {
  for (size_t off = 0; off < n; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
}

FOLIO_INLINE_AVX512 __m512 half16(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Nibble codes of one 32-element group: VNNI rows 0-3 low, 4-7 high.
FOLIO_INLINE_AVX512 void nibble_rows(const uint8_t* g, __m512i (&w)[8]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int r = 0; r < 4; ++r) {
    const __m512i v = _mm512_loadu_si512(g + 64 * r);
    w[r] = _mm512_and_si512(v, m4);
    w[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
}

template <int C>
FOLIO_TARGET_AVX512 void q4_k_cols(int64_t k, const uint8_t* panel, const uint8_t* x, size_t xs,
                                   float* out, size_t os, __mmask16 mask) {
  const int64_t nsb = k / kQKK;
  const BlockQ8_K* xr[C];
  __m512 acc[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const BlockQ8_K*>(x + c * xs);
    acc[c] = _mm512_setzero_ps();
  }
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* s = panel + sb * quant::kQ4KxBytes;
    __m512i isum[C], msum[C];
    for (int c = 0; c < C; ++c) isum[c] = msum[c] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      prefetch_lines(s + 2 * quant::kQ4KxBytes + j * (quant::kQ4KxBytes / 8),
                     quant::kQ4KxBytes / 8);
      __m512i w[8];
      nibble_rows(s + quant::kQ4KxCodes + 256 * j, w);
      const __m512i sc = _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ4KxScales + 16 * j)));
      for (int c = 0; c < C; ++c) {
        const int8_t* q = xr[c][sb].qs + 32 * j;
        __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
        __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast4(q + 4));
        t0 = _mm512_dpbusd_epi32(t0, w[2], bcast4(q + 8));
        t1 = _mm512_dpbusd_epi32(t1, w[3], bcast4(q + 12));
        t0 = _mm512_dpbusd_epi32(t0, w[4], bcast4(q + 16));
        t1 = _mm512_dpbusd_epi32(t1, w[5], bcast4(q + 20));
        t0 = _mm512_dpbusd_epi32(t0, w[6], bcast4(q + 24));
        t1 = _mm512_dpbusd_epi32(t1, w[7], bcast4(q + 28));
        isum[c] = _mm512_add_epi32(isum[c], _mm512_mullo_epi32(_mm512_add_epi32(t0, t1), sc));
      }
    }
    for (int i = 0; i < 4; ++i) {
      // [min 2i, min 2i+1] of each row as i16 pairs.
      const __m512i mp = _mm512_cvtepu8_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + quant::kQ4KxMins + 32 * i)));
      for (int c = 0; c < C; ++c) {
        const int16_t* bs = xr[c][sb].bsums + 4 * i;
        const int32_t lo = bs[0] + bs[1], hi = bs[2] + bs[3];  // |.| <= 32 * 128
        const int32_t pair =
            static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                                 static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
        msum[c] = _mm512_dpwssd_epi32(msum[c], mp, _mm512_set1_epi32(pair));
      }
    }
    const __m512 d = half16(s + quant::kQ4KxD), dmin = half16(s + quant::kQ4KxDmin);
    for (int c = 0; c < C; ++c) {
      const __m512 dx = _mm512_set1_ps(xr[c][sb].d);
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), _mm512_mul_ps(d, dx), acc[c]);
      acc[c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum[c]), _mm512_mul_ps(dmin, dx), acc[c]);
    }
  }
  for (int c = 0; c < C; ++c)
    _mm512_mask_storeu_ps(reinterpret_cast<uint8_t*>(out) + c * os, mask, acc[c]);
}

template <int C>
FOLIO_TARGET_AVX512 void q6_k_cols(int64_t k, const uint8_t* panel, const uint8_t* x, size_t xs,
                                   float* out, size_t os, __mmask16 mask) {
  const int64_t nsb = k / kQKK;
  const BlockQ8_K* xr[C];
  __m512 acc[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const BlockQ8_K*>(x + c * xs);
    acc[c] = _mm512_setzero_ps();
  }
  const __m512i m30 = _mm512_set1_epi8(0x30);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* s = panel + sb * quant::kQ6KxBytes;
    __m512i isum[C];
    for (int c = 0; c < C; ++c) isum[c] = _mm512_setzero_si512();
    for (int g = 0; g < 8; ++g) {
      prefetch_lines(s + 2 * quant::kQ6KxBytes + g * (quant::kQ6KxBytes / 8),
                     quant::kQ6KxBytes / 8);
      const uint8_t* gd = s + quant::kQ6KxCodes + quant::kQ6KxGroupBytes * g;
      __m512i w[8];
      nibble_rows(gd, w);
      const __m512i h0 = _mm512_loadu_si512(gd + 256), h1 = _mm512_loadu_si512(gd + 320);
      // Plane byte i bits 2f, 2f+1 -> bits 4, 5 of VNNI row 2f + (i >= 64):
      // w |= shifted plane & 0x30 (one vpternlogd: A | (B & C) = 0xF8).
      w[0] = _mm512_ternarylogic_epi32(w[0], _mm512_slli_epi16(h0, 4), m30, 0xF8);
      w[1] = _mm512_ternarylogic_epi32(w[1], _mm512_slli_epi16(h1, 4), m30, 0xF8);
      w[2] = _mm512_ternarylogic_epi32(w[2], _mm512_slli_epi16(h0, 2), m30, 0xF8);
      w[3] = _mm512_ternarylogic_epi32(w[3], _mm512_slli_epi16(h1, 2), m30, 0xF8);
      w[4] = _mm512_ternarylogic_epi32(w[4], h0, m30, 0xF8);
      w[5] = _mm512_ternarylogic_epi32(w[5], h1, m30, 0xF8);
      w[6] = _mm512_ternarylogic_epi32(w[6], _mm512_srli_epi16(h0, 2), m30, 0xF8);
      w[7] = _mm512_ternarylogic_epi32(w[7], _mm512_srli_epi16(h1, 2), m30, 0xF8);
      const __m512i sc0 = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ6KxScales + 32 * g)));
      const __m512i sc1 = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ6KxScales + 32 * g + 16)));
      for (int c = 0; c < C; ++c) {
        const int8_t* q = xr[c][sb].qs + 32 * g;
        __m512i t0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
        __m512i t1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[4], bcast4(q + 16));
        t0 = _mm512_dpbusd_epi32(t0, w[1], bcast4(q + 4));
        t1 = _mm512_dpbusd_epi32(t1, w[5], bcast4(q + 20));
        t0 = _mm512_dpbusd_epi32(t0, w[2], bcast4(q + 8));
        t1 = _mm512_dpbusd_epi32(t1, w[6], bcast4(q + 24));
        t0 = _mm512_dpbusd_epi32(t0, w[3], bcast4(q + 12));
        t1 = _mm512_dpbusd_epi32(t1, w[7], bcast4(q + 28));
        const int16_t* bs = xr[c][sb].bsums + 2 * g;
        t0 = _mm512_sub_epi32(t0, _mm512_set1_epi32(32 * bs[0]));
        t1 = _mm512_sub_epi32(t1, _mm512_set1_epi32(32 * bs[1]));
        isum[c] = _mm512_add_epi32(
            isum[c], _mm512_add_epi32(_mm512_mullo_epi32(t0, sc0), _mm512_mullo_epi32(t1, sc1)));
      }
    }
    const __m512 d = half16(s + quant::kQ6KxD);
    for (int c = 0; c < C; ++c) {
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]),
                               _mm512_mul_ps(d, _mm512_set1_ps(xr[c][sb].d)), acc[c]);
    }
  }
  for (int c = 0; c < C; ++c)
    _mm512_mask_storeu_ps(reinterpret_cast<uint8_t*>(out) + c * os, mask, acc[c]);
}

using ColsFn = void (*)(int64_t, const uint8_t*, const uint8_t*, size_t, float*, size_t, __mmask16);

template <ColsFn F4, ColsFn F3, ColsFn F2, ColsFn F1>
FOLIO_TARGET_AVX512 void kquant_panel(int64_t k, const void* panel, const void* x, size_t xs,
                                      int nc, int nr, float* out, size_t os) {
  const auto* p = static_cast<const uint8_t*>(panel);
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* ob = reinterpret_cast<uint8_t*>(out);
  const __mmask16 mask = static_cast<__mmask16>((1u << nr) - 1);
  int c = 0;
  for (; c + 4 <= nc; c += 4)
    F4(k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
  switch (nc - c) {
    case 3:
      F3(k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
      break;
    case 2:
      F2(k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
      break;
    case 1:
      F1(k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
      break;
    default:
      break;
  }
}

}  // namespace

PanelFn kquant_panel_avx512(DType packed) {
  switch (packed) {
    case DType::Q4_K_X16:
      return &kquant_panel<q4_k_cols<4>, q4_k_cols<3>, q4_k_cols<2>, q4_k_cols<1>>;
    case DType::Q6_K_X16:
      return &kquant_panel<q6_k_cols<4>, q6_k_cols<3>, q6_k_cols<2>, q6_k_cols<1>>;
    default:
      return nullptr;
  }
}

}  // namespace folio::cpu
