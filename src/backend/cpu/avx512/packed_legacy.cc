// AVX-512 + VNNI panels for the packed 32-element layouts Q4_0_X16,
// Q5_0_X16, Q5_1_X16, Q8_0_X16, IQ4_NL_X16 and MXFP4_X16 (quant/repack.h) x
// Q8Row32 activation rows.
//
// A panel block holds the unsigned codes of 16 rows in VNNI order: VNNI row
// r (one zmm) has, in i32 lane n, the 4 codes of row n for elements 4r..4r+3.
// vpdpbusd with the activation's 4 quants of those elements broadcast to
// every lane adds their 4 products to lane n: 8 vpdpbusd give the 16 rows'
// exact integer block dots at once, with no horizontal sums and no
// per-row scale shuffles (the plain layout's costs). Codes are unpacked
// with one and / shift per 64 (nibbles: VNNI rows 0-3 low, 4-7 high; Q5_0's
// and Q5_1's bit 4 by a byte-masked add from its bit plane; Q8_0 codes are
// stored as q + 128; IQ4_NL's and MXFP4's nibbles become kIQ4NLValues /
// kFP4Values + 128 by vpshufb).
// The offset (8, 16, 128; Q5_1: none) comes off as offset * (the block's
// activation quant sum): exact integers, then per block
//   acc += float(isum) * (d_w * d_x)   (16 rows: f16 scales, one vcvtph2ps;
//                                       MXFP4: E8M0 half-scales, a gather
//                                       from kE8M0Half)
// [Q5_1: then acc += m_w * (d_x * sum of the block's activation quants), as
// the AVX2 panels' Q4_1 / Q5_1 step]
// so each output's float steps depend only on K: the AMX panels
// (amx/mul_mat_amx.cc) run the same steps on the same integers and give the
// same bits. Tile: 16 rows x up to 4 activation rows in registers; each
// block step prefetches the block about 3 KB ahead in the panel stream.
// Decode (one or two activation rows) reads 4 panels at once
// (packed_mul_mat.h).
#include <cstring>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/packed_panel.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/dtype_switch.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

template <DType P>
constexpr int32_t kLegacyOffset = P == DType::Q4_0_X16   ? 8
                                  : P == DType::Q5_0_X16 ? 16
                                  : P == DType::Q5_1_X16 ? 0
                                                         : 128;

// The 8 VNNI rows of unsigned codes of one panel block.
template <DType P>
FOLIO_INLINE_AVX512 void unpack_codes(const uint8_t* blk, __m512i (&w)[8]) {
  if constexpr (P == DType::Q8_0_X16) {
    for (int r = 0; r < 8; ++r) w[r] = _mm512_loadu_si512(blk + 64 * r);
  } else {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int r = 0; r < 4; ++r) {
      const __m512i v = _mm512_loadu_si512(blk + 64 * r);
      w[r] = _mm512_and_si512(v, m4);
      w[r + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
    if constexpr (quant::x16_has_levels(P)) {
      const __m512i table = _mm512_add_epi8(
          _mm512_broadcast_i32x4(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::x16_levels(P)))),
          _mm512_set1_epi8(static_cast<char>(0x80)));
      for (int r = 0; r < 8; ++r) w[r] = _mm512_shuffle_epi8(table, w[r]);
    }
    if constexpr (P == DType::Q5_0_X16 || P == DType::Q5_1_X16) {
      const __m512i sixteen = _mm512_set1_epi8(16);
      for (int r = 0; r < 8; ++r) {
        uint64_t bits;
        std::memcpy(&bits, blk + 256 + 8 * r, 8);
        w[r] = _mm512_mask_add_epi8(w[r], static_cast<__mmask64>(bits), w[r], sixteen);
      }
    }
  }
}

// Prefetches the lines of [p, p + N) into L1. A decode step streams every
// weight once; the panel reads ahead in its own stream (panels of a matrix
// are consecutive, so reading past a panel's end prefetches the next one).
template <size_t N>
FOLIO_INLINE_AVX512 void prefetch_lines(const uint8_t* p) {
  for (size_t off = 0; off < N; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
}

// Blocks to read ahead: about 1.5 KB (farther decoded slower, BENCHMARKS.md).
template <DType P>
constexpr int64_t kPrefetchBlocks = 1536 / quant::x16_block_bytes(P);

FOLIO_INLINE_AVX512 __m512i bcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm512_set1_epi32(v);
}

// acc += float(the 16 rows' exact block dots with activation row x) *
// (d_w * d_x) [Q5_1: then acc += m_w * (d_x * sum of x's block quants)],
// for panel block `blk` and activation block b.
template <DType P>
FOLIO_INLINE_AVX512 __m512 block_step(__m512 acc, const __m512i (&w)[8], __m512 dw, __m512 mw,
                                      const Q8Row32& x, int64_t b) {
  const int8_t* q = x.qs + b * quant::kQK;
  __m512i s0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[0], bcast4(q));
  __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w[1], bcast4(q + 4));
  s0 = _mm512_dpbusd_epi32(s0, w[2], bcast4(q + 8));
  s1 = _mm512_dpbusd_epi32(s1, w[3], bcast4(q + 12));
  s0 = _mm512_dpbusd_epi32(s0, w[4], bcast4(q + 16));
  s1 = _mm512_dpbusd_epi32(s1, w[5], bcast4(q + 20));
  s0 = _mm512_dpbusd_epi32(s0, w[6], bcast4(q + 24));
  s1 = _mm512_dpbusd_epi32(s1, w[7], bcast4(q + 28));
  __m512i isum = _mm512_add_epi32(s0, s1);
  if constexpr (kLegacyOffset<P> != 0) {
    isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(kLegacyOffset<P> * x.sum[b]));
  }
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(x.d[b])), acc);
  if constexpr (quant::x16_has_min(P)) {
    acc = _mm512_fmadd_ps(mw, _mm512_set1_ps(x.ds[b]), acc);
  }
  return acc;
}

// The unpacked codes, the f16 row scales and (Q5_1; else zero) the f16 row
// minimums of panel block `blk`; prefetches the block about 1.5 KB ahead in
// the same stream.
template <DType P>
FOLIO_INLINE_AVX512 __m512 load_block(const uint8_t* blk, __m512i (&w)[8], __m512* mw) {
  constexpr size_t kBlk = quant::x16_block_bytes(P);
  prefetch_lines<kBlk>(blk + kPrefetchBlocks<P> * kBlk);
  unpack_codes<P>(blk, w);
  const uint8_t* sp = blk + quant::x16_code_bytes(P);
  *mw = quant::x16_has_min(P)
            ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 32)))
            : _mm512_setzero_ps();
  if constexpr (P == DType::MXFP4_X16) {
    return _mm512_i32gather_ps(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp))),
        quant::kE8M0Half.data(), 4);
  }
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp)));
}

// The prefill family (packed_panel.h): 16 rows x up to 4 activation rows.
template <DType P>
struct LegacyTiles {
  static constexpr int kCols = 4;
  static constexpr int64_t kStepElems = quant::kQK;
  static constexpr size_t kStepBytes = quant::x16_block_bytes(P);
  using XRow = Q8Row32;
  static Q8Row32 x_row(const uint8_t* x, int64_t k) { return q8row32(x, k); }

  template <int C>
  FOLIO_INLINE_AVX512 void step(const uint8_t* blk, const Q8Row32 (&xr)[C], int64_t b,
                                __m512 (&acc)[C]) {
    __m512i w[8];
    __m512 mw;
    const __m512 dw = load_block<P>(blk, w, &mw);
    for (int c = 0; c < C; ++c) acc[c] = block_step<P>(acc[c], w, dw, mw, xr[c], b);
  }
};

// Decode: C (<= 2) activation rows x NP consecutive panels, NP weight
// streams at once (decode_streams(), core/cpu_features.h: on the AMX Xeon
// a single stream per thread left the memory system idle; on Zen 4 one
// stream is faster), each output with the steps of the prefill tiles.
template <DType P>
struct LegacyMulti {
  template <int NP, int C>
  FOLIO_TARGET_AVX512 static void run(int64_t k, const uint8_t* panels, size_t pb, const uint8_t* x,
                                      size_t xs, float* out, size_t os, __mmask16 last_mask) {
    constexpr size_t kBlk = quant::x16_block_bytes(P);
    const int64_t nb = k / quant::kQK;
    Q8Row32 xr[C];
    __m512 acc[NP][C];
    for (int c = 0; c < C; ++c) {
      xr[c] = q8row32(x + c * xs, k);
      for (int i = 0; i < NP; ++i) acc[i][c] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; ++b) {
      for (int i = 0; i < NP; ++i) {
        __m512i w[8];
        __m512 mw;
        const __m512 dw = load_block<P>(panels + i * pb + b * kBlk, w, &mw);
        for (int c = 0; c < C; ++c) acc[i][c] = block_step<P>(acc[i][c], w, dw, mw, xr[c], b);
      }
    }
    avx512::store_panels<NP, C>(acc, out, os, last_mask);
  }
};

}  // namespace

PanelFn legacy_panel_avx512(DType packed) {
  return dtype_switch<DType::Q4_0_X16, DType::Q5_0_X16, DType::Q5_1_X16, DType::Q8_0_X16,
                      DType::IQ4_NL_X16, DType::MXFP4_X16>(packed, [](auto p) -> PanelFn {
    return &avx512::panel_cols<LegacyTiles<decltype(p)::value>>;
  });
}

MultiPanelFn legacy_decode_avx512(DType packed) {
  return dtype_switch<DType::Q4_0_X16, DType::Q5_0_X16, DType::Q5_1_X16, DType::Q8_0_X16,
                      DType::IQ4_NL_X16, DType::MXFP4_X16>(packed, [](auto p) -> MultiPanelFn {
    return &avx512::decode_panels<LegacyMulti<decltype(p)::value>>;
  });
}

namespace {

PackedSpec spec_for(DType packed) {
  if (PanelFn f = legacy_panel_avx512(packed)) {
    return {ActFormat::kQ8_0, f, legacy_decode_avx512(packed), &quantize_act_q8_0_avx512};
  }
  return {ActFormat::kQ8_K, kquant_panel_avx512(packed), kquant_decode_avx512(packed),
          &quantize_act_q8_k_avx512};
}

}  // namespace

Status mul_mat_packed_avx512(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat(op, ctx, spec_for(op.src[0].dtype));
}

Status mul_mat_id_packed_avx512(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat_id(op, ctx, spec_for(op.src[0].dtype));
}

}  // namespace folio::cpu
