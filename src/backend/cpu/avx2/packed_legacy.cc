// AVX2 panels for the packed 32-element layouts Q4_0_X16, Q4_1_X16,
// Q5_0_X16, Q5_1_X16, Q8_0_X16, IQ4_NL_X16 and MXFP4_X16 (quant/repack.h) x
// Q8Row32 activation rows: the layouts the AVX-512 VNNI and AMX kernels read, so one
// packed copy serves every tier (Q4_1_X16 has AVX2 panels only; AVX-512
// machines run them).
//
// A ymm holds 8 lanes, so a 16-row panel is read as two halves: half h of
// VNNI row r (32 bytes) has, in i32 lane n, the 4 codes of panel row 8h + n
// for elements 4r .. 4r + 3. The byte dot steps come in two forms
// (avx2/int_dot.h):
//   Vnni (avx2_vnni tier): vpdpbusd with the activation's 4 quants of those
//        elements broadcast to every lane adds the lane's 4 products to an
//        i32, exact, for every layout, on the unsigned codes as stored
//        (Q8_0_X16's are q + 128; IQ4_NL's and MXFP4's levels + 128, by
//        vpshufb).
//   Maddubs (avx2 tier): vpmaddubsw with the same broadcast gives two i16
//        pair sums per lane, and vpmaddwd with ones the lane's i32:
//        Q4_0, Q4_1 (codes <= 15): the 8 VNNI rows' pair sums add up in i16
//        (|sum| <= 8 * 2 * 15 * 127 < 2^15), one vpmaddwd per block;
//        Q5_0, Q5_1 (codes <= 31): two sums of 4 VNNI rows
//        (<= 4 * 2 * 31 * 127), two vpmaddwd;
//        Q8_0, IQ4_NL, MXFP4: the codes (q + 128) do not fit vpmaddubsw's
//        unsigned operand with a non-saturating product, so the signed quant
//        q (IQ4_NL, MXFP4: the level) multiplies as |q| x (x carrying q's sign)
//        (|pair| <= 2 * 128 * 127 < 2^15), one vpmaddwd per VNNI row.
// The codes' offset (8, 16; Q8_0, IQ4_NL, MXFP4: 128 on the codes, none on
// q) comes off as
// offset * (the block's activation quant sum), so each block gives the 16
// rows' exact integer dots, then per block
//   acc += float(isum) * (d_w * d_x)   (MXFP4: d_w from kE8M0Half, a gather)
// with the same integers and the same float steps as the AVX-512 and AMX
// panels: all tiers give the same bits. Q4_1's and Q5_1's minimum adds
//   acc += m_w * (d_x * sum of the block's activation quants)
// (the exact integer sum, as the plain kernel). Prefill tile: 8 rows (half a
// panel) x up to 4 activation rows in registers; decode (one or two
// activation rows) takes a panel at a time (packed_panel.h), prefetching
// about 3 KB ahead in its stream.
#include <cstring>

#include "backend/cpu/avx2/int_dot.h"
#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/mul_mat_quant.h"
#include "backend/cpu/avx2/packed_panel.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/cpu_features.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using avx2::bcast4;
using avx2::store_rows;

template <DType P, typename D>
constexpr int32_t kLegacyOffset = P == DType::Q4_0_X16   ? 8
                                  : P == DType::Q5_0_X16 ? 16
                                  : P == DType::Q8_0_X16 || P == DType::IQ4_NL_X16 ||
                                          P == DType::MXFP4_X16
                                      ? (D::kVnni ? 128 : 0)
                                      : 0;
template <DType P>
constexpr bool kHasMin = quant::x16_has_min(P);
// Codes vpmaddubsw takes as signed quants (|q| x x with q's sign).
template <DType P>
constexpr bool kSignedMaddubs =
    P == DType::Q8_0_X16 || P == DType::IQ4_NL_X16 || P == DType::MXFP4_X16;

// The 8 VNNI rows of half h of panel block `blk`: unsigned codes, or for
// Q8_0, IQ4_NL and MXFP4 under Maddubs the signed quants.
template <DType P, typename D>
FOLIO_INLINE_AVX2 void unpack_half(const uint8_t* blk, int h, __m256i (&w)[8]) {
  const uint8_t* base = blk + 32 * h;
  if constexpr (P == DType::Q8_0_X16 && D::kVnni) {
    for (int r = 0; r < 8; ++r)
      w[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 64 * r));
  } else if constexpr (P == DType::Q8_0_X16) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int r = 0; r < 8; ++r) {
      w[r] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 64 * r)),
                              flip);
    }
  } else {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int r = 0; r < 4; ++r) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 64 * r));
      w[r] = _mm256_and_si256(v, m4);
      w[r + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    if constexpr (quant::x16_has_levels(P)) {
      __m256i table = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::x16_levels(P))));
      if constexpr (D::kVnni)
        table = _mm256_add_epi8(table, _mm256_set1_epi8(static_cast<char>(0x80)));
      for (int r = 0; r < 8; ++r) w[r] = _mm256_shuffle_epi8(table, w[r]);
    }
    if constexpr (P == DType::Q5_0_X16 || P == DType::Q5_1_X16) {
      for (int r = 0; r < 8; ++r) {
        uint32_t bits;
        std::memcpy(&bits, blk + 256 + 8 * r + 4 * h, 4);
        w[r] = _mm256_or_si256(w[r], avx2::bit_bytes(bits, 0x10));
      }
    }
  }
}

// acc += float(the 8 rows' exact block dots with activation row x) *
// (d_w * d_x) [Q4_1, Q5_1: then acc += m_w * (d_x * sum of x's block quants)],
// for the unpacked half block w and activation block b.
template <DType P, typename D>
FOLIO_INLINE_AVX2 __m256 block_step(__m256 acc, const __m256i (&w)[8], __m256 dw, __m256 mw,
                                    const Q8Row32& x, int64_t b) {
  const int8_t* q = x.qs + b * quant::kQK;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i isum;
  if constexpr (D::kVnni) {
    // Two chains of 4 VNNI rows, so consecutive vpdpbusd do not wait on each other.
    __m256i s0 = D::dpbusd(_mm256_setzero_si256(), w[0], bcast4(q));
    __m256i s1 = D::dpbusd(_mm256_setzero_si256(), w[1], bcast4(q + 4));
    for (int r = 2; r < 8; r += 2) {
      s0 = D::dpbusd(s0, w[r], bcast4(q + 4 * r));
      s1 = D::dpbusd(s1, w[r + 1], bcast4(q + 4 * r + 4));
    }
    isum = _mm256_add_epi32(s0, s1);
  } else if constexpr (kSignedMaddubs<P>) {
    isum = _mm256_setzero_si256();
    for (int r = 0; r < 8; ++r) {
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w[r], w[r]),
                                                 _mm256_sign_epi8(bcast4(q + 4 * r), w[r]));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, ones));
    }
  } else if constexpr (P == DType::Q4_0_X16 || P == DType::Q4_1_X16) {
    __m256i s = _mm256_maddubs_epi16(w[0], bcast4(q));
    for (int r = 1; r < 8; ++r)
      s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[r], bcast4(q + 4 * r)));
    isum = _mm256_madd_epi16(s, ones);
  } else {
    __m256i s0 = _mm256_maddubs_epi16(w[0], bcast4(q));
    __m256i s1 = _mm256_maddubs_epi16(w[4], bcast4(q + 16));
    for (int r = 1; r < 4; ++r) {
      s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(w[r], bcast4(q + 4 * r)));
      s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(w[r + 4], bcast4(q + 16 + 4 * r)));
    }
    isum = _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
  }
  if constexpr (kLegacyOffset<P, D> != 0) {
    isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(kLegacyOffset<P, D> * x.sum[b]));
  }
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b])), acc);
  if constexpr (kHasMin<P>) {
    acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(x.ds[b]), acc);
  }
  return acc;
}

// The 8 f16 row scales of half h of panel block `blk`, widened.
template <DType P>
FOLIO_INLINE_AVX2 __m256 half_scales(const uint8_t* blk, int h) {
  if constexpr (P == DType::MXFP4_X16) {  // E8M0 bytes through kE8M0Half
    return _mm256_i32gather_ps(
        quant::kE8M0Half.data(),
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(
            reinterpret_cast<const __m128i*>(blk + quant::x16_code_bytes(P) + 8 * h))),
        4);
  }
  return _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + quant::x16_code_bytes(P) + 16 * h)));
}

// Q4_1_X16, Q5_1_X16: the 8 f16 row minimums of half h, widened (zero for
// the others).
template <DType P>
FOLIO_INLINE_AVX2 __m256 half_mins(const uint8_t* blk, int h) {
  if constexpr (kHasMin<P>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(
        reinterpret_cast<const __m128i*>(blk + quant::x16_code_bytes(P) + 32 + 16 * h)));
  } else {
    return _mm256_setzero_ps();
  }
}

// Blocks to read ahead in a stream: about 3 KB.
template <DType P>
constexpr int64_t kPrefetchBlocks = 3072 / quant::x16_block_bytes(P);

// The family (packed_panel.h): prefill tiles of up to 4 activation rows x
// half a panel, and decode of one or two rows x a whole panel, both halves
// per block, each block reading about 3 KB ahead in the panel's stream.
template <DType P, typename D>
struct Legacy {
  static constexpr int kCols = 4;
  static constexpr int64_t kStepElems = quant::kQK;
  static constexpr size_t kStepBytes = quant::x16_block_bytes(P);
  using XRow = Q8Row32;
  static Q8Row32 x_row(const uint8_t* x, int64_t k) { return q8row32(x, k); }

  template <int C, bool kAhead>
  FOLIO_INLINE_AVX2 void step(const uint8_t* blk, int h, const Q8Row32 (&xr)[C], int64_t b,
                              __m256 (&acc)[C]) {
    if constexpr (kAhead) prefetch_span<kStepBytes>(blk + kPrefetchBlocks<P> * kStepBytes);
    __m256i w[8];
    unpack_half<P, D>(blk, h, w);
    const __m256 dw = half_scales<P>(blk, h), mw = half_mins<P>(blk, h);
    for (int c = 0; c < C; ++c) acc[c] = block_step<P, D>(acc[c], w, dw, mw, xr[c], b);
  }
};

using LegacyFamily =
    avx2::PanelFamily<Legacy, DType::Q4_0_X16, DType::Q4_1_X16, DType::Q5_0_X16, DType::Q5_1_X16,
                      DType::Q8_0_X16, DType::IQ4_NL_X16, DType::MXFP4_X16>;

}  // namespace

PanelFn legacy_panel_avx2(DType packed, Avx2Dot dot) {
  return LegacyFamily::panel(packed, dot);
}

MultiPanelFn legacy_decode_avx2(DType packed, Avx2Dot dot) {
  return LegacyFamily::decode(packed, dot);
}

namespace {

PackedSpec spec_for(DType packed, Avx2Dot dot) {
  if (PanelFn f = legacy_panel_avx2(packed, dot)) {
    return {ActFormat::kQ8_0, f, legacy_decode_avx2(packed, dot), &quantize_act_q8_0_avx2};
  }
  return {ActFormat::kQ8_K, kquant_panel_avx2(packed, dot), kquant_decode_avx2(packed, dot),
          &quantize_act_q8_k_avx2};
}

// The avx2_vnni tier's encoding: VEX where the CPU has AVX-VNNI, else EVEX
// (its kernels are registered for CPUs with either, CpuFeatures::vnni256).
Avx2Dot vnni_dot() {
  return cpu_features().avxvnni ? Avx2Dot::kVnniVex : Avx2Dot::kVnniEvex;
}

}  // namespace

Status mul_mat_packed_avx2(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat(op, ctx, spec_for(op.src[0].dtype, Avx2Dot::kMaddubs));
}

Status mul_mat_id_packed_avx2(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat_id(op, ctx, spec_for(op.src[0].dtype, Avx2Dot::kMaddubs));
}

Status mul_mat_packed_avx2_vnni(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat(op, ctx, spec_for(op.src[0].dtype, vnni_dot()));
}

Status mul_mat_id_packed_avx2_vnni(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat_id(op, ctx, spec_for(op.src[0].dtype, vnni_dot()));
}

}  // namespace folio::cpu
