// AMX panels for the packed K-quant layouts Q4_K_X16, Q5_K_X16 and Q6_K_X16,
// and for IQ4_XS_X16 (quant/repack.h) x Q8_K activation rows.
//
// A panel call first turns the panel's codes into tile-ready signed bytes
// (scratch of 16 x K bytes shared by all its activation rows): Q4_K's
// nibbles, Q5_K's nibbles + bit 4 (0..31), Q6_K's 6-bit codes minus 32
// (-32..31), IQ4_XS's kIQ4NLValues levels (-127..113), each 32-element
// group as 8 VNNI rows of 64 bytes, as the AVX-512 panels unpack them
// (avx512/kquant_x16.h). A call of at most 16 rows (a single pass)
// unpacks each super-block one super-block ahead of its first tile
// product instead, into a 2-super-block ring that stays in L1. A "unit" is the span of K that one sub-block scale
// covers: 32 elements for Q4_K / Q5_K / IQ4_XS, 16 for Q6_K. Per unit, one
// B tile (unit / 4 VNNI rows) meets up to 2 groups of 16 activation rows
// (A: 16 rows x unit bytes of their quants, read in place with the
// activation row stride):
//   C_g = A_g (s8) . B (s8)                      TDPBSSD, one per group
// C_g holds, for each (activation row, panel row), the exact integer dot of
// the unit: Q4_K / Q5_K the group dot, Q6_K the sub-block dot of
// (code - 32), i.e. dot(code) - 32 * bsum, IQ4_XS the group dot of the
// levels (the AVX-512 panel's dot of level + 128 less 128 * bsum). The
// vector side then adds
//   isum += C row * scale_unit                   (i32 lanes, exact)
// and, after the super-block's last unit, takes the AVX-512 panels' float
// step once per super-block (avx512/kquant_x16.h: Q4_K / Q5_K also with
// msum = sum of min_j * the activation's group sums):
//   acc += float(isum) * (d * dx) [- float(msum) * (dmin * dx)]
// The integer sums are the AVX-512 panels' (exact, |isum| < 2^27, in any
// order) and the float steps are the same code, so results are
// bit-identical to avx512/packed_kquant.cc.
//
// Rows, tiles and pipeline: amx/panel_driver.h (a step is a unit, an
// unpacked chunk a super-block; the one-pass ring holds 2 super-blocks).
// Calls of fewer than amx_min_rows(P) rows (packed_kernels.h; packed_mul_mat's
// PackedSpec::small_panel), mul_mat ops of fewer (the kernel's `supports`)
// and decode (one or two rows) run on avx512/packed_kquant.cc.
#include <cstddef>
#include <cstring>

#include "backend/cpu/amx/panel_driver.h"
#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/avx512/kquant_x16.h"
#include "backend/cpu/drivers/dtype_switch.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/target.h"
#include "quant/blocks.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

using amx::kGroup;
using quant::BlockQ8_K;
using quant::kQKK;

#define FOLIO_INLINE_AMX FOLIO_TARGET_AMX __attribute__((always_inline)) static inline

// The facts of a layout the AMX K-quant panel needs.
template <DType P>
struct KAmxFormat {
  static constexpr bool kQ6 = P == DType::Q6_K_X16;
  static constexpr bool kIQ4 = P == DType::IQ4_XS_X16;
  static constexpr int kUnit = kQ6 ? 16 : 32;  // elements per sub-block scale
  static constexpr int kUnits = kQKK / kUnit;  // per super-block
  static constexpr size_t kBytes = P == DType::Q4_K_X16   ? quant::kQ4KxBytes
                                   : P == DType::Q5_K_X16 ? quant::kQ5KxBytes
                                   : kIQ4                 ? quant::kIQ4XSxBytes
                                                          : quant::kQ6KxBytes;
  // The scale of unit u of the 16 rows, as i32 lanes (Q4_K / Q5_K: 6-bit
  // unsigned; Q6_K, IQ4_XS: signed bytes).
  FOLIO_INLINE_AMX __m512i scales(const uint8_t* s, int u) {
    if constexpr (kIQ4) {
      return avx512::iq4xs_scales(s, u);
    } else if constexpr (kQ6) {
      return _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ6KxScales + 16 * u)));
    } else {
      return _mm512_cvtepu8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + quant::kQ4KxScales + 16 * u)));
    }
  }
};

// Tile-ready signed codes (16 x 256 bytes per super-block) of a panel.
template <DType P>
FOLIO_TARGET_AMX void unpack_kquant_panel(const uint8_t* panel, int64_t nsb, uint8_t* dst) {
  constexpr size_t kBytes = KAmxFormat<P>::kBytes;
  const __m512i m32 = _mm512_set1_epi8(32);
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* s = panel + sb * kBytes;
    for (int j = 0; j < 8; ++j) {
      __m512i w[8];
      if constexpr (P == DType::Q6_K_X16) {
        avx512::q6_codes(s, j, w);
        for (int r = 0; r < 8; ++r) w[r] = _mm512_sub_epi8(w[r], m32);
      } else if constexpr (P == DType::IQ4_XS_X16) {
        avx512::iq4xs_levels(s, j, 0, w);
      } else {
        avx512::k4_codes<P>(s, j, w);
      }
      uint8_t* o = dst + sb * 4096 + j * 512;
      for (int r = 0; r < 8; ++r) _mm512_store_si512(o + 64 * r, w[r]);
    }
  }
}

// isum(i) += C row i * sc for the `rows` rows of one group.
FOLIO_INLINE_AMX void scale_add(const int32_t* c_rows, __m512i sc, int rows, int32_t* isum) {
  for (int i = 0; i < rows; ++i) {
    const __m512i c = _mm512_load_si512(c_rows + 16 * i);
    const __m512i a = _mm512_load_si512(isum + 16 * i);
    _mm512_store_si512(isum + 16 * i, _mm512_add_epi32(a, _mm512_mullo_epi32(c, sc)));
  }
}

// The float step of super-block sb (panel bytes at s) for the `rows` rows
// of one group (activation row i at x + i * xs), then isum = 0.
template <DType P>
FOLIO_INLINE_AMX void finish_superblock(const uint8_t* s, const uint8_t* x, size_t xs, int64_t sb,
                                        int rows, int32_t* isum, float* acc) {
  for (int i = 0; i < rows; ++i) {
    const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x + i * xs)[sb];
    const __m512i is = _mm512_load_si512(isum + 16 * i);
    __m512 a = _mm512_load_ps(acc + 16 * i);
    if constexpr (P == DType::IQ4_XS_X16) {
      a = avx512::iq4xs_accumulate(a, is, s, xb.d);
    } else if constexpr (P == DType::Q6_K_X16) {
      a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is),
                          _mm512_mul_ps(avx512::half16(s + quant::kQ6KxD), _mm512_set1_ps(xb.d)),
                          a);
    } else {
      __m512i msum = _mm512_setzero_si512();
      for (int m = 0; m < 4; ++m) {
        msum = _mm512_dpwssd_epi32(msum, avx512::k4_min_pairs(s, m), avx512::k4_bsum_pair(xb, m));
      }
      a = avx512::k4_accumulate(a, is, msum, s, xb.d);
    }
    _mm512_store_ps(acc + 16 * i, a);
    _mm512_store_si512(isum + 16 * i, _mm512_setzero_si512());
  }
}

// The layout P for amx/panel_driver.h: a step is a unit, a chunk a
// super-block; the one-pass ring holds 2 super-blocks.
template <DType P>
struct KQuantAmxLayout {
  using F = KAmxFormat<P>;
  static constexpr int kStepK = F::kUnit;
  static constexpr int kChunkK = kQKK;
  static constexpr int kRingChunks = 2;
  static constexpr size_t kChunkBytes = F::kBytes;

  FOLIO_TARGET_AMX __attribute__((always_inline)) static void unpack(const uint8_t* panel,
                                                                     int64_t nsb, uint8_t* dst) {
    unpack_kquant_panel<P>(panel, nsb, dst);
  }
  // Unit t's quants in a row of BlockQ8_K.
  static const uint8_t* a_tile(const uint8_t* x, int64_t t) {
    const int64_t sb = t / F::kUnits;
    const int u = static_cast<int>(t % F::kUnits);
    return x + sb * sizeof(BlockQ8_K) + offsetof(BlockQ8_K, qs) + u * F::kUnit;
  }
  static PanelFn below() { return kquant_panel_avx512(P); }

  template <int G>
  struct Acc {
    alignas(64) int32_t isum[G][kGroup * 16];
    alignas(64) float acc[G][kGroup * 16];
    int rows;

    FOLIO_TARGET_AMX __attribute__((always_inline)) Acc(const uint8_t*, size_t, int n_rows, int64_t)
        : rows(n_rows) {
      std::memset(isum, 0, sizeof(isum));
      std::memset(acc, 0, sizeof(acc));
    }

    // Unit t's scaled C tiles c[g] into isum; after a super-block's last
    // unit, its float step.
    FOLIO_TARGET_AMX __attribute__((always_inline)) void step(const uint8_t* panel, int64_t t,
                                                              int32_t (*c)[kGroup * 16],
                                                              const uint8_t* x, size_t xs) {
      const int64_t sb = t / F::kUnits;
      const int u = static_cast<int>(t % F::kUnits);
      const uint8_t* s = panel + sb * F::kBytes;
      const __m512i sc = F::scales(s, u);
      for (int g = 0; g < G; ++g) scale_add(c[g], sc, rows, isum[g]);
      if (u == F::kUnits - 1) {
        for (int g = 0; g < G; ++g) {
          finish_superblock<P>(s, x + g * kGroup * xs, xs, sb, rows, isum[g], acc[g]);
        }
      }
    }
  };
};

}  // namespace

PanelFn kquant_panel_amx(DType packed) {
  return dtype_switch<DType::Q4_K_X16, DType::Q5_K_X16, DType::Q6_K_X16, DType::IQ4_XS_X16>(
      packed,
      [](auto p) -> PanelFn { return &amx::packed_panel<KQuantAmxLayout<decltype(p)::value>>; });
}

}  // namespace folio::cpu
