// Kernels on packed weight layouts (quant/repack.h), all tiers. Entry points
// are plain functions; register_packed.cc (baseline flags) only takes their
// addresses. Every kernel here is registered with reads_packed = true.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/packed/packed_mul_mat.h"

namespace folio::cpu {

// packed/ref_packed.cc: the reference (unpack each row, dequantize, double
// dot); accepts every packed view.
bool supports_packed_ref(const Op& op);
Status mul_mat_packed_ref(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_ref(const Op& op, const KernelContext& ctx);

// avx512/packed_legacy.cc (Q4_0_X16, Q5_0_X16, Q5_1_X16, Q8_0_X16, IQ4_NL_X16,
// MXFP4_X16 x Q8Row32) and avx512/packed_kquant.cc (Q4_K_X16, Q5_K_X16, Q6_K_X16,
// IQ4_XS_X16 x Q8_K): AVX-512 + VNNI panel
// functions for any number of activation rows (nullptr: no panel for the type).
PanelFn legacy_panel_avx512(DType packed);
PanelFn kquant_panel_avx512(DType packed);
// Their decode functions: one activation row, up to 4 panels at once.
MultiPanelFn legacy_decode_avx512(DType packed);
MultiPanelFn kquant_decode_avx512(DType packed);
// Both families, with the driver (packed_mul_mat.h).
Status mul_mat_packed_avx512(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_avx512(const Op& op, const KernelContext& ctx);

// avx2/packed_legacy.cc and avx2/packed_kquant.cc: AVX2 panel and decode
// functions for the same ten layouts and Q4_1_X16 (half panels of 8 rows per
// register), bit-identical to the AVX-512 ones, with the byte dot step
// `dot` (avx2/int_dot.h): vpmaddubsw on the avx2 tier, 256-bit vpdpbusd on
// the avx2_vnni tier (VEX on AVX-VNNI CPUs, EVEX on AVX-512 VNNI ones).
enum class Avx2Dot { kMaddubs, kVnniVex, kVnniEvex };
PanelFn legacy_panel_avx2(DType packed, Avx2Dot dot);
PanelFn kquant_panel_avx2(DType packed, Avx2Dot dot);
MultiPanelFn legacy_decode_avx2(DType packed, Avx2Dot dot);
MultiPanelFn kquant_decode_avx2(DType packed, Avx2Dot dot);
Status mul_mat_packed_avx2(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_avx2(const Op& op, const KernelContext& ctx);
// The avx2_vnni tier: for CPUs with CpuFeatures::vnni256().
Status mul_mat_packed_avx2_vnni(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_avx2_vnni(const Op& op, const KernelContext& ctx);

// amx/mul_mat_amx.cc (Q4_0_X16, Q4_1_X16, Q5_0_X16, Q5_1_X16, Q8_0_X16,
// IQ4_NL_X16, MXFP4_X16) and amx/packed_kquant_amx.cc (Q4_K_X16, Q5_K_X16, Q6_K_X16,
// IQ4_XS_X16): AMX tile panels:
// groups of 16 activation rows through TDPBSSD tiles, then one group of the
// 1..15 rows left on tiles of that many rows (every row of a call); calls
// of fewer than amx_min_rows rows through the panel of the tier below
// (AVX-512; Q4_1_X16: avx2_vnni), with bit-identical results (the same
// integer block / sub-block dots, the same float steps).
PanelFn kquant_panel_amx(DType packed);  // nullptr: not a K-quant / IQ4_XS layout
// The fewest activation rows that select the AMX panels, per layout: for a
// mul_mat op (the kernel's `supports`; fewer rows run on the tier below)
// and for a panel call (a mul_mat_id expert group, an activation block;
// fewer rows run on the panel of the tier below). Chosen with
// folio-test-ops perf (K = 2048 and 4096, 1 to 512 rows; BENCHMARKS.md)
// against the tier below, whose panels win on fewer rows: the tiles' vector
// work per block (unpacking, storing C, a float step per row) does not
// shrink with the rows as the panels' vpdpbusd do. At least 3: one or two
// rows are decode, which the tier below's decode function serves (4 panel
// streams at once).
constexpr int amx_min_rows(DType packed) {
  switch (packed) {
    case DType::Q4_0_X16:
    case DType::Q4_1_X16:
    case DType::Q5_0_X16:
    case DType::Q5_1_X16:
    case DType::Q8_0_X16:
    case DType::IQ4_NL_X16:
    case DType::MXFP4_X16:
      return 8;
    case DType::IQ4_XS_X16:
      return 12;
    case DType::Q6_K_X16:
      return 32;
    case DType::Q4_K_X16:
      return 128;
    default:  // Q5_K
      return 16;
  }
}

// amx/mul_mat_f16_x16.cc: F16_X16 (F16 weights) x F32 activations split
// into BF16 parts, every output amx/f16_tile_model.h's dot_model at every
// batch size: one or two activation rows on an AVX-512 rows kernel, from
// three on TDPBF16PS tiles. Needs AMX-BF16.
Status mul_mat_f16x16_amx(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16x16_amx(const Op& op, const KernelContext& ctx);

Status mul_mat_packed_amx(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_amx(const Op& op, const KernelContext& ctx);
// The same with panel calls of at least min_rows activation rows on the
// tiles (the kernels above: amx_min_rows of the layout; tests pass 1 to run
// the tiles at every batch size, one and two rows included).
Status mul_mat_packed_amx_min_rows(const Op& op, const KernelContext& ctx, int min_rows);
Status mul_mat_id_packed_amx_min_rows(const Op& op, const KernelContext& ctx, int min_rows);

}  // namespace folio::cpu
