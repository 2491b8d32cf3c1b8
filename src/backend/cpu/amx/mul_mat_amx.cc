// AMX mul_mat / mul_mat_id on the packed layouts (quant/repack.h): here the
// 32-element ones, Q4_0_X16, Q4_1_X16, Q5_0_X16, Q5_1_X16, Q8_0_X16,
// IQ4_NL_X16 and MXFP4_X16 x Q8Row32 activation rows; the K-quant layouts' panels (and
// IQ4_XS_X16's) are in packed_kquant_amx.cc.
//
// One panel block (16 weight rows x 32 elements) in VNNI order is the B
// operand of an int8 tile dot product (8 rows of 64 bytes: 4 values of each
// of 16 columns), and 16 activation rows' quants of the block are the A
// operand (16 rows of 32 bytes, read in place with the activation row
// stride). Q8_0's blocks are B tiles as stored (q + 128, unsigned: TDPBSUD,
// C - 128 * the activation block's quant sum is then the signed dot): a call
// of at most 16 rows reads them in place, a larger one copies them into its
// scratch. For the other layouts a panel call first turns the panel's codes
// into signed values (code - offset: nibbles unpacked; Q4_1's and
// Q5_1's codes as they are; IQ4_NL's and MXFP4's nibbles through
// kIQ4NLValues / kFP4Values by vpshufb, the signed levels) in a tile-ready scratch shared by all
// its activation rows (a call of at most 16 rows, a single pass, unpacks
// each block three blocks ahead of its tile products instead, into a
// 4-block ring that stays in L1); then, per block, one B tile meets up to 2 groups of 16 activation rows
// (a full group, or a single pass of 8 to 16 rows, alone with its
// accumulators in registers: Rows):
//   C_g = A_g (s8) . B (s8)                      TDPBSSD, one per group
// C_g holds exactly the integer block dots of the AVX-512 panels
// (avx512/packed_legacy.cc); it goes to memory and each of its rows takes
// the same float step as there, acc += float(C row) * (d_w * d_x) (Q4_1,
// Q5_1: then acc += m_w * (d_x * the activation block's quant sum), as the
// AVX2 panels that serve Q4_1_X16 below this tier and the AVX-512 ones
// Q5_1_X16; MXFP4: d_w from kE8M0Half, a gather), so the results are
// bit-identical to the AVX-512 panels (Q4_1: the avx2_vnni ones).
//
// Rows, tiles and pipeline: amx/panel_driver.h (a step and an unpacked
// chunk are one block; the one-pass ring holds 4 blocks). packed_mul_mat
// sends calls of fewer than amx_min_rows(P) rows (packed_kernels.h) to the
// panel of the tier below (PackedSpec::small_panel), as the kernel's `supports`
// does with mul_mat ops of fewer rows; decode (one or two rows) runs on the
// tier below's decode function, which streams 4 panels at once.
#include <cstring>

#include "backend/cpu/amx/panel_driver.h"
#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/drivers/dtype_switch.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/cpu_features.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using amx::kGroup;

#define FOLIO_INLINE_AMX FOLIO_TARGET_AMX __attribute__((always_inline)) static inline

template <DType P>
constexpr int32_t kOffset = P == DType::Q4_0_X16   ? 8
                            : P == DType::Q5_0_X16 ? 16
                            : P == DType::Q8_0_X16 ? 128
                                                   : 0;
template <DType P>
constexpr bool kHasMin = quant::x16_has_min(P);

// Tile-ready signed values (code - offset, 8 x 64 bytes per block) of a panel.
template <DType P>
FOLIO_TARGET_AMX void unpack_panel(const uint8_t* panel, int64_t nb, uint8_t* dst) {
  constexpr size_t kBlk = quant::x16_block_bytes(P);
  const __m512i off = _mm512_set1_epi8(static_cast<char>(kOffset<P>));
  if constexpr (P == DType::Q8_0_X16) {
    for (int64_t b = 0; b < nb; ++b) {
      for (int r = 0; r < 8; ++r) {
        const __m512i v = _mm512_loadu_si512(panel + b * kBlk + 64 * r);
        _mm512_store_si512(dst + b * 512 + 64 * r, _mm512_xor_si512(v, off));  // q + 128 -> q
      }
    }
    return;
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = panel + b * kBlk;
    uint8_t* o = dst + b * 512;
    for (int r = 0; r < 4; ++r) {
      const __m512i v = _mm512_loadu_si512(blk + 64 * r);
      __m512i lo = _mm512_and_si512(v, m4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (quant::x16_has_levels(P)) {  // the signed levels (offset 0)
        const __m512i table = _mm512_broadcast_i32x4(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::x16_levels(P))));
        lo = _mm512_shuffle_epi8(table, lo);
        hi = _mm512_shuffle_epi8(table, hi);
      }
      if constexpr (P == DType::Q5_0_X16 || P == DType::Q5_1_X16) {
        uint64_t bl, bh;
        std::memcpy(&bl, blk + 256 + 8 * r, 8);
        std::memcpy(&bh, blk + 256 + 8 * (r + 4), 8);
        lo = _mm512_mask_add_epi8(lo, static_cast<__mmask64>(bl), lo, sixteen);
        hi = _mm512_mask_add_epi8(hi, static_cast<__mmask64>(bh), hi, sixteen);
      }
      _mm512_store_si512(o + 64 * r, _mm512_sub_epi8(lo, off));
      _mm512_store_si512(o + 64 * (r + 4), _mm512_sub_epi8(hi, off));
    }
  }
}

// acc(i) += float(C row i) * (d_w * d_x(i)) for the `rows` rows of one group
// [Q4_1, Q5_1: then acc(i) += m_w * (d_x(i) * sum of x(i)'s block quants)].
// kInPlace (Q8_0's B tiles as stored): C row i is x(i) . (q + 128), so
// 128 * x(i)'s block quant sum comes off first.
template <DType P, bool kInPlace>
FOLIO_INLINE_AMX void accumulate(const int32_t* c_rows, __m512 dw, __m512 mw,
                                 const Q8Row32 (&xr)[kGroup], int rows, int64_t b, float* acc) {
  for (int i = 0; i < rows; ++i) {
    __m512i isum = _mm512_load_si512(c_rows + 16 * i);
    if constexpr (kInPlace) {
      isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(128 * xr[i].sum[b]));
    }
    __m512 a = _mm512_load_ps(acc + 16 * i);
    a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(xr[i].d[b])), a);
    if constexpr (kHasMin<P>) {
      a = _mm512_fmadd_ps(mw, _mm512_set1_ps(xr[i].ds[b]), a);
    }
    _mm512_store_ps(acc + 16 * i, a);
  }
}

// The avx2_vnni tier's byte dot: VEX where the CPU has AVX-VNNI, else EVEX.
Avx2Dot amx_vnni_dot() {
  return cpu_features().avxvnni ? Avx2Dot::kVnniVex : Avx2Dot::kVnniEvex;
}

// The panel that serves a 32-element layout below the AMX tier: the
// AVX-512 one, or for Q4_1_X16 (no AVX-512 panel) the avx2_vnni one.
PanelFn legacy_panel_below_amx(DType packed) {
  return packed == DType::Q4_1_X16 ? legacy_panel_avx2(packed, amx_vnni_dot())
                                   : legacy_panel_avx512(packed);
}

// The 32-element layout P for amx/panel_driver.h: a step and a chunk are
// one block; the scales follow the codes in each block.
template <DType P>
struct LegacyAmxLayout {
  static constexpr int kStepK = quant::kQK;
  static constexpr int kChunkK = quant::kQK;
  static constexpr int kRingChunks = 4;
  static constexpr size_t kChunkBytes = quant::x16_block_bytes(P);
  static constexpr bool kInPlaceB = P == DType::Q8_0_X16;

  FOLIO_TARGET_AMX __attribute__((always_inline)) static void unpack(const uint8_t* panel,
                                                                     int64_t nb, uint8_t* dst) {
    unpack_panel<P>(panel, nb, dst);
  }
  // Block t's quants in a Q8Row32 row (quants first).
  static const uint8_t* a_tile(const uint8_t* x, int64_t t) { return x + t * quant::kQK; }
  static PanelFn below() { return legacy_panel_below_amx(P); }

  // Block b's 16 weight scales d_w and (kHasMin) mins m_w, widened.
  FOLIO_TARGET_AMX __attribute__((always_inline)) static __m512 weight_scale(const uint8_t* panel,
                                                                             int64_t b) {
    const uint8_t* sp = panel + quant::x16_code_bytes(P) + b * kChunkBytes;
    if constexpr (P == DType::MXFP4_X16) {
      return _mm512_i32gather_ps(
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp))),
          quant::kE8M0Half.data(), 4);
    } else {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp)));
    }
  }
  FOLIO_TARGET_AMX __attribute__((always_inline)) static __m512 weight_min(const uint8_t* panel,
                                                                           int64_t b) {
    const uint8_t* sp = panel + quant::x16_code_bytes(P) + b * kChunkBytes;
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sp + 32)));
  }

  template <int G, bool kInPlace = false>
  struct Acc {
    alignas(64) float acc[G][kGroup * 16];
    Q8Row32 xr[G][kGroup];
    int rows;

    FOLIO_TARGET_AMX __attribute__((always_inline))
    Acc(const uint8_t* x, size_t xs, int n_rows, int64_t k)
        : rows(n_rows) {
      for (int g = 0; g < G; ++g) {
        for (int i = 0; i < rows; ++i) {
          xr[g][i] = q8row32(x + (g * kGroup + i) * xs, k);
          _mm512_store_ps(acc[g] + 16 * i, _mm512_setzero_ps());
        }
      }
    }

    // Block b's float step from its C tiles c[g].
    FOLIO_TARGET_AMX __attribute__((always_inline)) void step(const uint8_t* panel, int64_t b,
                                                              int32_t (*c)[kGroup * 16],
                                                              const uint8_t*, size_t) {
      const __m512 dw = weight_scale(panel, b);
      __m512 mw = _mm512_setzero_ps();
      if constexpr (kHasMin<P>) mw = weight_min(panel, b);
      for (int g = 0; g < G; ++g) accumulate<P, kInPlace>(c[g], dw, mw, xr[g], rows, b, acc[g]);
    }
  };

  // amx/panel_driver.h's register form of Acc<1, kInPlace> for R rows:
  // accumulate's operations, r[i] in place of acc + 16 i.
  template <bool kInPlace, int R>
  struct Rows {
    const uint8_t* d0;  // row 0's block scales d
    size_t xs;
    ptrdiff_t sum_at, ds_at;  // its sums and ds, in bytes from d0 (every row alike)

    FOLIO_TARGET_AMX __attribute__((always_inline))
    Rows(const uint8_t* x, size_t row_stride, int64_t k)
        : Rows(q8row32(x, k), row_stride) {}
    FOLIO_TARGET_AMX __attribute__((always_inline)) Rows(const Q8Row32& row0, size_t row_stride)
        : d0(reinterpret_cast<const uint8_t*>(row0.d)),
          xs(row_stride),
          sum_at(reinterpret_cast<const uint8_t*>(row0.sum) - d0),
          ds_at(reinterpret_cast<const uint8_t*>(row0.ds) - d0) {}

    FOLIO_TARGET_AMX __attribute__((always_inline)) void step(const uint8_t* panel, int64_t b,
                                                              const int32_t* c,
                                                              __m512 (&r)[R]) const {
      const __m512 dw = weight_scale(panel, b);
      __m512 mw = _mm512_setzero_ps();
      if constexpr (kHasMin<P>) mw = weight_min(panel, b);
      // Row i's scales at d0 + i * xs: the stride is hidden from the
      // compiler so that it forms these addresses per step instead of
      // keeping R row pointers live (more than the registers it has).
      size_t stride = xs;
      __asm__("" : "+r"(stride));
      const uint8_t* db = d0 + 4 * b;
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) {
        const uint8_t* di = db + i * stride;
        float dx, ds;
        int32_t sum;
        std::memcpy(&dx, di, 4);
        std::memcpy(&sum, di + sum_at, 4);
        std::memcpy(&ds, di + ds_at, 4);
        __m512i isum = _mm512_load_si512(c + 16 * i);
        if constexpr (kInPlace) isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(128 * sum));
        r[i] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), r[i]);
        if constexpr (kHasMin<P>) r[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ds), r[i]);
      }
    }
  };
};

// Panel calls of fewer than min_rows activation rows: the panel below.
PackedSpec amx_spec(DType packed, int min_rows) {
  if (PanelFn f = kquant_panel_amx(packed)) {
    return {ActFormat::kQ8_K,
            f,
            kquant_decode_avx512(packed),
            &quantize_act_q8_k_avx512,
            kquant_panel_avx512(packed),
            min_rows};
  }
  const PanelFn f = dtype_switch<DType::Q4_0_X16, DType::Q4_1_X16, DType::Q5_0_X16, DType::Q5_1_X16,
                                 DType::Q8_0_X16, DType::IQ4_NL_X16, DType::MXFP4_X16>(
      packed,
      [](auto p) -> PanelFn { return &amx::packed_panel<LegacyAmxLayout<decltype(p)::value>>; });
  const MultiPanelFn decode = packed == DType::Q4_1_X16 ? legacy_decode_avx2(packed, amx_vnni_dot())
                                                        : legacy_decode_avx512(packed);
  return {ActFormat::kQ8_0, f, decode, &quantize_act_q8_0_avx512, legacy_panel_below_amx(packed),
          min_rows};
}

}  // namespace

Status mul_mat_packed_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_packed_amx_min_rows(op, ctx, amx_min_rows(op.src[0].dtype));
}

Status mul_mat_id_packed_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_packed_amx_min_rows(op, ctx, amx_min_rows(op.src[0].dtype));
}

Status mul_mat_packed_amx_min_rows(const Op& op, const KernelContext& ctx, int min_rows) {
  return packed_mul_mat(op, ctx, amx_spec(op.src[0].dtype, min_rows));
}

Status mul_mat_id_packed_amx_min_rows(const Op& op, const KernelContext& ctx, int min_rows) {
  return packed_mul_mat_id(op, ctx, amx_spec(op.src[0].dtype, min_rows));
}

}  // namespace folio::cpu
