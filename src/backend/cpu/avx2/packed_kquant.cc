// AVX2 panels for the packed K-quant layouts Q4_K_X16, Q5_K_X16 and
// Q6_K_X16, and for IQ4_XS_X16 (quant/repack.h) x Q8_K activation rows
// (|quant| <= 127: the reference quantizer maps max |x| to -127).
//
// As in packed_legacy.cc, a 16-row panel is read as two halves of 8 rows
// (one i32 lane per row), and the byte dot steps take one of two forms
// (avx2/int_dot.h). Maddubs (avx2 tier): vpmaddubsw with 4 broadcast
// activation quants gives i16 pair sums, added in i16 while they cannot
// overflow; the sub-block scales then apply through vpmaddwd on [scale,
// scale] i16 pairs, which also widens to i32:
//   Q4_K: per 32-element group j, the 8 VNNI rows' sums in i16 (|.| <= 8 *
//         2 * 15 * 128 < 2^15), isum += scale_j * that; mins: msum +=
//         [min_2i, min_2i+1] . [bsum pair] (one vpmaddwd per 64 elements);
//         acc += float(isum) * (d * dx) - float(msum) * (dmin * dx).
//   Q5_K: as Q4_K with bit 4 from the group's plane, in two sums of 4 VNNI
//         rows (<= 4 * 2 * 31 * 128).
//   Q6_K: per 16-element sub-block, two sums of 2 VNNI rows (codes 0..63:
//         <= 2 * 2 * 63 * 128) scaled by the signed sub-block scale; the
//         codes' offset 32 comes off once per super-block as 32 *
//         sum(scale_i * bsum_i) (vpmaddwd on scale pairs); acc +=
//         float(isum) * (d * dx).
//   IQ4_XS: the signed levels (kIQ4NLValues by vpshufb) as |w| x (x
//         carrying w's sign), pairs <= 2 * 127 * 127, widened per VNNI row by
//         vpmaddwd with ones; the group's sum times its signed scale by
//         vpmulld; acc += float(isum) * (d * dx).
// Vnni (avx2_vnni tier), as the AVX-512 panels on half the lanes: vpdpbusd
// sums go straight to i32; Q4_K pairs two sums of 4 VNNI rows (|.| <= 16 *
// 15 * 128 < 2^15), Q5_K two pairs of sums of 2 rows (<= 8 * 31 * 128), as
// i16 for one vpdpwssd with [scale, scale] each; the mins take vpdpwssd;
// Q6_K subtracts 32 * bsum from each sub-block's sum of 4 rows and scales
// it by vpmulld; IQ4_XS takes the levels + 128 and subtracts 128 * the
// group's bsum before its vpmulld.
// The integers are the AVX-512 panels' (packed_kquant.cc there) and so are
// the float steps, once per super-block in K order: the tiers give the same
// bits, and no result depends on the batch or the thread count. Prefill
// tile: 8 rows x up to 4 activation rows; decode: a panel at a time
// (packed_panel.h).
#include <cstring>

#include "backend/cpu/avx2/int_dot.h"
#include "backend/cpu/avx2/mul_mat_quant.h"
#include "backend/cpu/avx2/packed_panel.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using avx2::bcast4;
using avx2::load256;
using avx2::store_rows;
using quant::BlockQ8_K;
using quant::kQKK;

FOLIO_INLINE_AVX2 __m128i load8(const uint8_t* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

// 8 f16 values at p, widened.
FOLIO_INLINE_AVX2 __m256 half8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Lane n = [a_n, b_n] as i16 (a, b: 8 i16 each).
FOLIO_INLINE_AVX2 __m256i pairs16(__m128i a, __m128i b) {
  return _mm256_set_m128i(_mm_unpackhi_epi16(a, b), _mm_unpacklo_epi16(a, b));
}

// Nibble codes of half h of one 32-element group (VNNI rows 0-3 low, 4-7 high).
FOLIO_INLINE_AVX2 void nibble_rows(const uint8_t* g, int h, __m256i (&w)[8]) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int r = 0; r < 4; ++r) {
    const __m256i v = load256(g + 64 * r + 32 * h);
    w[r] = _mm256_and_si256(v, m4);
    w[r + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  }
}

// Q5_K_X16 shares Q4_K_X16's head (d, dmin, scales, mins).
static_assert(quant::kQ5KxD == quant::kQ4KxD && quant::kQ5KxDmin == quant::kQ4KxDmin &&
              quant::kQ5KxScales == quant::kQ4KxScales && quant::kQ5KxMins == quant::kQ4KxMins);

template <DType P>
constexpr size_t kSuperBytes = P == DType::Q4_K_X16     ? quant::kQ4KxBytes
                               : P == DType::Q5_K_X16   ? quant::kQ5KxBytes
                               : P == DType::IQ4_XS_X16 ? quant::kIQ4XSxBytes
                                                        : quant::kQ6KxBytes;

// Prefetches the j-th eighth of the super-block at pf (decode streams:
// spread over the group steps, a burst of a whole super-block's lines would
// queue behind itself); nothing when pf is nullptr.
template <DType P>
FOLIO_INLINE_AVX2 void prefetch_eighth(const uint8_t* pf, int j) {
  if (pf == nullptr) return;
  constexpr size_t kPart = kSuperBytes<P> / 8;
  for (size_t off = 0; off < kPart; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(pf + j * kPart + off), _MM_HINT_T0);
}

// One super-block `s` of half h x C activation rows: acc[c] gets the
// super-block's float steps (Q4_K / Q5_K); pf: see prefetch_eighth.
template <DType P, typename D, int C>
FOLIO_INLINE_AVX2 void k4_superblock(const uint8_t* s, int h, const BlockQ8_K* const (&xb)[C],
                                     __m256 (&acc)[C], const uint8_t* pf) {
  __m256i isum[C];
  for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    prefetch_eighth<P>(pf, j);
    __m256i w[8];
    if constexpr (P == DType::Q4_K_X16) {
      nibble_rows(s + quant::kQ4KxCodes + 256 * j, h, w);
    } else {
      const uint8_t* g = s + quant::kQ5KxCodes + quant::kQ5KxGroupBytes * j;
      nibble_rows(g, h, w);
      for (int r = 0; r < 8; ++r) {
        uint32_t bits;
        std::memcpy(&bits, g + 256 + 8 * r + 4 * h, 4);
        w[r] = _mm256_or_si256(w[r], avx2::bit_bytes(bits, 0x10));
      }
    }
    const __m128i sc = _mm_cvtepu8_epi16(load8(s + quant::kQ4KxScales + 16 * j + 8 * h));
    const __m256i sc2 = pairs16(sc, sc);
    for (int c = 0; c < C; ++c) {
      const int8_t* q = xb[c]->qs + 32 * j;
      if constexpr (D::kVnni && P == DType::Q4_K_X16) {
        const __m256i z = _mm256_setzero_si256();
        __m256i t0 = D::dpbusd(z, w[0], bcast4(q)), t1 = D::dpbusd(z, w[1], bcast4(q + 4));
        for (int r = 2; r < 8; r += 2) {
          t0 = D::dpbusd(t0, w[r], bcast4(q + 4 * r));
          t1 = D::dpbusd(t1, w[r + 1], bcast4(q + 4 * r + 4));
        }
        isum[c] = D::dpwssd(isum[c], avx2::pair16(t0, t1), sc2);
      } else if constexpr (D::kVnni) {
        const __m256i z = _mm256_setzero_si256();
        __m256i t[4];
        for (int r = 0; r < 4; ++r) t[r] = D::dpbusd(z, w[r], bcast4(q + 4 * r));
        for (int r = 0; r < 4; ++r) t[r] = D::dpbusd(t[r], w[r + 4], bcast4(q + 16 + 4 * r));
        isum[c] = D::dpwssd(isum[c], avx2::pair16(t[0], t[1]), sc2);
        isum[c] = D::dpwssd(isum[c], avx2::pair16(t[2], t[3]), sc2);
      } else if constexpr (P == DType::Q4_K_X16) {
        __m256i t = _mm256_maddubs_epi16(w[0], bcast4(q));
        for (int r = 1; r < 8; ++r)
          t = _mm256_add_epi16(t, _mm256_maddubs_epi16(w[r], bcast4(q + 4 * r)));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(t, sc2));
      } else {
        __m256i t0 = _mm256_maddubs_epi16(w[0], bcast4(q));
        __m256i t1 = _mm256_maddubs_epi16(w[4], bcast4(q + 16));
        for (int r = 1; r < 4; ++r) {
          t0 = _mm256_add_epi16(t0, _mm256_maddubs_epi16(w[r], bcast4(q + 4 * r)));
          t1 = _mm256_add_epi16(t1, _mm256_maddubs_epi16(w[r + 4], bcast4(q + 16 + 4 * r)));
        }
        isum[c] = _mm256_add_epi32(
            isum[c], _mm256_add_epi32(_mm256_madd_epi16(t0, sc2), _mm256_madd_epi16(t1, sc2)));
      }
    }
  }
  __m256i msum[C];
  for (int c = 0; c < C; ++c) msum[c] = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) {
    // [min 2i, min 2i+1] of each row as i16 pairs; [bsum of group 2i, of 2i+1].
    const __m256i mp = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ4KxMins + 32 * i + 16 * h)));
    for (int c = 0; c < C; ++c) {
      const int16_t* bs = xb[c]->bsums + 4 * i;
      const int32_t lo = bs[0] + bs[1], hi = bs[2] + bs[3];
      const __m256i bp = _mm256_set1_epi32(
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                               static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
      if constexpr (D::kVnni) {
        msum[c] = D::dpwssd(msum[c], mp, bp);
      } else {
        msum[c] = _mm256_add_epi32(msum[c], _mm256_madd_epi16(mp, bp));
      }
    }
  }
  const __m256 d = half8(s + quant::kQ4KxD + 16 * h), dmin = half8(s + quant::kQ4KxDmin + 16 * h);
  for (int c = 0; c < C; ++c) {
    const __m256 vdx = _mm256_set1_ps(xb[c]->d);
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(d, vdx), acc[c]);
    acc[c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[c]), _mm256_mul_ps(dmin, vdx), acc[c]);
  }
}

// The 6-bit codes (0..63) of half h of group g of a Q6_K_X16 super-block.
FOLIO_INLINE_AVX2 void q6_codes(const uint8_t* s, int g, int h, __m256i (&w)[8]) {
  const __m256i m30 = _mm256_set1_epi8(0x30);
  const uint8_t* gd = s + quant::kQ6KxCodes + quant::kQ6KxGroupBytes * g;
  nibble_rows(gd, h, w);
  const __m256i h0 = load256(gd + 256 + 32 * h), h1 = load256(gd + 320 + 32 * h);
  // Plane byte i bits 2f, 2f+1 -> bits 4, 5 of VNNI row 2f + (i >= 64).
  w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(h0, 4), m30));
  w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(h1, 4), m30));
  w[2] = _mm256_or_si256(w[2], _mm256_and_si256(_mm256_slli_epi16(h0, 2), m30));
  w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_slli_epi16(h1, 2), m30));
  w[4] = _mm256_or_si256(w[4], _mm256_and_si256(h0, m30));
  w[5] = _mm256_or_si256(w[5], _mm256_and_si256(h1, m30));
  w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(h0, 2), m30));
  w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(h1, 2), m30));
}

// One Q6_K_X16 super-block `s` of half h x C activation rows.
template <typename D, int C>
FOLIO_INLINE_AVX2 void q6_superblock(const uint8_t* s, int h, const BlockQ8_K* const (&xb)[C],
                                     __m256 (&acc)[C], const uint8_t* pf) {
  __m256i isum[C], bias[C];
  for (int c = 0; c < C; ++c) isum[c] = bias[c] = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    prefetch_eighth<DType::Q6_K_X16>(pf, g);
    __m256i w[8];
    q6_codes(s, g, h, w);
    // Signed scales of sub-blocks 2g and 2g + 1, one per row.
    const __m128i sa = _mm_cvtepi8_epi16(load8(s + quant::kQ6KxScales + 32 * g + 8 * h));
    const __m128i sb = _mm_cvtepi8_epi16(load8(s + quant::kQ6KxScales + 32 * g + 16 + 8 * h));
    const __m256i sc0 = pairs16(sa, sa), sc1 = pairs16(sb, sb), scp = pairs16(sa, sb);
    if constexpr (D::kVnni) {
      const __m256i s32a = _mm256_cvtepi16_epi32(sa), s32b = _mm256_cvtepi16_epi32(sb);
      for (int c = 0; c < C; ++c) {
        const int8_t* q = xb[c]->qs + 32 * g;
        const int16_t* bs = xb[c]->bsums + 2 * g;
        const __m256i z = _mm256_setzero_si256();
        __m256i t0 = D::dpbusd(z, w[0], bcast4(q)), t1 = D::dpbusd(z, w[4], bcast4(q + 16));
        for (int r = 1; r < 4; ++r) {
          t0 = D::dpbusd(t0, w[r], bcast4(q + 4 * r));
          t1 = D::dpbusd(t1, w[r + 4], bcast4(q + 16 + 4 * r));
        }
        t0 = _mm256_sub_epi32(t0, _mm256_set1_epi32(32 * bs[0]));
        t1 = _mm256_sub_epi32(t1, _mm256_set1_epi32(32 * bs[1]));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_mullo_epi32(t0, s32a),
                                                             _mm256_mullo_epi32(t1, s32b)));
      }
      continue;
    }
    for (int c = 0; c < C; ++c) {
      const int8_t* q = xb[c]->qs + 32 * g;
      const __m256i t00 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast4(q)),
                                           _mm256_maddubs_epi16(w[1], bcast4(q + 4)));
      const __m256i t01 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast4(q + 8)),
                                           _mm256_maddubs_epi16(w[3], bcast4(q + 12)));
      const __m256i t10 = _mm256_add_epi16(_mm256_maddubs_epi16(w[4], bcast4(q + 16)),
                                           _mm256_maddubs_epi16(w[5], bcast4(q + 20)));
      const __m256i t11 = _mm256_add_epi16(_mm256_maddubs_epi16(w[6], bcast4(q + 24)),
                                           _mm256_maddubs_epi16(w[7], bcast4(q + 28)));
      const __m256i s0 = _mm256_add_epi32(_mm256_madd_epi16(t00, sc0), _mm256_madd_epi16(t01, sc0));
      const __m256i s1 = _mm256_add_epi32(_mm256_madd_epi16(t10, sc1), _mm256_madd_epi16(t11, sc1));
      isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(s0, s1));
      const int16_t* bs = xb[c]->bsums + 2 * g;
      const __m256i bp = _mm256_set1_epi32(
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(bs[0])) |
                               static_cast<uint32_t>(static_cast<uint16_t>(bs[1])) << 16));
      bias[c] = _mm256_add_epi32(bias[c], _mm256_madd_epi16(scp, bp));
    }
  }
  const __m256 d = half8(s + quant::kQ6KxD + 16 * h);
  for (int c = 0; c < C; ++c) {
    const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(bias[c], 5));
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(xb[c]->d)),
                             acc[c]);
  }
}

// One IQ4_XS_X16 super-block `s` of half h x C activation rows.
template <typename D, int C>
FOLIO_INLINE_AVX2 void iq4xs_superblock(const uint8_t* s, int h, const BlockQ8_K* const (&xb)[C],
                                        __m256 (&acc)[C], const uint8_t* pf) {
  __m256i table = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
  if constexpr (D::kVnni) table = _mm256_add_epi8(table, _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i isum[C];
  for (int c = 0; c < C; ++c) isum[c] = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    prefetch_eighth<DType::IQ4_XS_X16>(pf, g);
    __m256i w[8];
    nibble_rows(s + quant::kIQ4XSxCodes + 256 * g, h, w);
    for (int r = 0; r < 8; ++r) w[r] = _mm256_shuffle_epi8(table, w[r]);
    const __m256i sc = _mm256_cvtepi8_epi32(load8(s + quant::kIQ4XSxScales + 16 * g + 8 * h));
    for (int c = 0; c < C; ++c) {
      const int8_t* q = xb[c]->qs + 32 * g;
      __m256i t;
      if constexpr (D::kVnni) {
        const __m256i z = _mm256_setzero_si256();
        __m256i t0 = D::dpbusd(z, w[0], bcast4(q)), t1 = D::dpbusd(z, w[1], bcast4(q + 4));
        for (int r = 2; r < 8; r += 2) {
          t0 = D::dpbusd(t0, w[r], bcast4(q + 4 * r));
          t1 = D::dpbusd(t1, w[r + 1], bcast4(q + 4 * r + 4));
        }
        const int16_t* bs = xb[c]->bsums + 2 * g;
        t = _mm256_sub_epi32(_mm256_add_epi32(t0, t1), _mm256_set1_epi32(128 * (bs[0] + bs[1])));
      } else {
        t = _mm256_setzero_si256();
        for (int r = 0; r < 8; ++r) {
          const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w[r], w[r]),
                                                     _mm256_sign_epi8(bcast4(q + 4 * r), w[r]));
          t = _mm256_add_epi32(t, _mm256_madd_epi16(pairs, ones));
        }
      }
      isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(t, sc));
    }
  }
  const __m256 d = half8(s + quant::kIQ4XSxD + 16 * h);
  for (int c = 0; c < C; ++c) {
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]),
                             _mm256_mul_ps(d, _mm256_set1_ps(xb[c]->d)), acc[c]);
  }
}

template <DType P, typename D, int C>
FOLIO_INLINE_AVX2 void superblock(const uint8_t* s, int h, const BlockQ8_K* const (&xb)[C],
                                  __m256 (&acc)[C], const uint8_t* pf = nullptr) {
  if constexpr (P == DType::Q6_K_X16) {
    q6_superblock<D, C>(s, h, xb, acc, pf);
  } else if constexpr (P == DType::IQ4_XS_X16) {
    iq4xs_superblock<D, C>(s, h, xb, acc, pf);
  } else {
    k4_superblock<P, D, C>(s, h, xb, acc, pf);
  }
}

// The family (packed_panel.h): prefill tiles of up to 4 activation rows x
// half a panel, and decode of one or two rows x a whole panel, each
// super-block read ahead two in the panel's stream (an eighth per group
// step; past the panel's end this reads the next panel).
template <DType P, typename D>
struct KQuant {
  static constexpr int kCols = 4;
  static constexpr int64_t kStepElems = kQKK;
  static constexpr size_t kStepBytes = kSuperBytes<P>;
  using XRow = const BlockQ8_K*;
  static const BlockQ8_K* x_row(const uint8_t* x, int64_t) {
    return reinterpret_cast<const BlockQ8_K*>(x);
  }

  template <int C, bool kAhead>
  FOLIO_INLINE_AVX2 void step(const uint8_t* s, int h, const BlockQ8_K* const (&xr)[C],
                              int64_t sb, __m256 (&acc)[C]) {
    const BlockQ8_K* xb[C];
    for (int c = 0; c < C; ++c) xb[c] = xr[c] + sb;
    superblock<P, D, C>(s, h, xb, acc, kAhead ? s + 2 * kStepBytes : nullptr);
  }
};

using KQuantFamily =
    avx2::PanelFamily<KQuant, DType::Q4_K_X16, DType::Q5_K_X16, DType::Q6_K_X16, DType::IQ4_XS_X16>;

}  // namespace

PanelFn kquant_panel_avx2(DType packed, Avx2Dot dot) {
  return KQuantFamily::panel(packed, dot);
}

MultiPanelFn kquant_decode_avx2(DType packed, Avx2Dot dot) {
  return KQuantFamily::decode(packed, dot);
}

}  // namespace folio::cpu
