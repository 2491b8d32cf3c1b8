// The driver shared by the mul_mat / mul_mat_id kernels on packed weights
// (quant/repack.h): the ISA files only provide a *panel* function that
// multiplies one panel of 16 weight rows with a run of activation rows.
//
//   W   src0 [K, N, B2w, B3w]  packed (is_packed_view): panels of 16 rows
//   X   src1 [K, M, B2, B3]    F32 activations
//   Y   dst  [N, M, B2, B3]    Y[n, m] = dot(W row n, X row m)
//
// 1. Activations are quantized once per op, row by row, into the format the
//    panels read (ActFormat of mul_mat_tiled.h: Q8Row32 for the 32-element
//    layouts, Q8_K for the K-quant layouts), with the reference quantizer's
//    bytes (a tier may pass its SIMD quantizer with the same output).
// 2. Work items are (batch, panel) pairs, split into contiguous chunks by
//    the thread pool. Within a chunk, activation rows are visited in blocks
//    that stay in L2 and every panel of the chunk streams past each block.
//    Decode (one or two activation rows: one or two sequences; up to the
//    spec's decode_rows) goes through the spec's `decode` function where it
//    has one: 4 consecutive panels per call, i.e. 4 weight streams
//    per thread (one stream left the memory system idle: Q4_0 weights read
//    at ~20 GB/s where four streams read ~26 GB/s on the development VM).
//    A spec may send panel calls by their rows to two panels (small_panel,
//    min_panel_rows): the AMX tier's tiles take calls from amx_min_rows on,
//    the tier below's panel and decode functions the smaller ones.
//
// Determinism: every output is computed by exactly one panel call, and the
// panel functions' arithmetic for one output depends only on K (integer
// block dots are exact; the float steps per block run in K order), never on
// how many rows a call gets or where they start: results are bit-identical
// for any thread count and any batch composition.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/kernel.h"

namespace folio::cpu {

// out(c, r) = dot(panel row r, X row c) for r < nr (the panel's real rows,
// <= 16), c < nc; X row c at x + c * x_stride (converted), out(c, r) at
// (char*)out + c * out_stride + 4 * r. k is a multiple of the block size.
using PanelFn = void (*)(int64_t k, const void* panel, const void* x, size_t x_stride, int nc,
                         int nr, float* out, size_t out_stride);

// Decode (PackedSpec::decode_rows activation rows at most, by default
// kMaxDecodeRows): `np` consecutive panels at once (np <= 4; the last may
// have nr_last < 16 rows); X row c at x + c * x_stride, out(c, r) of panel i
// at (char*)out + c * out_stride + 4 * (16 * i + r).
inline constexpr int kMaxDecodeRows = 2;
using MultiPanelFn = void (*)(int64_t k, const void* panels, size_t panel_bytes, int np,
                              int nr_last, const void* x, size_t x_stride, int nc, float* out,
                              size_t out_stride);

struct PackedSpec {
  ActFormat act = ActFormat::kQ8_0;
  PanelFn panel = nullptr;
  MultiPanelFn decode = nullptr;
  ConvertRowFn convert = nullptr;  // nullptr: convert_act_row (the reference)
  // Where small_panel is set (the AMX tier: the panel of the tier below),
  // panel calls of fewer than min_panel_rows activation rows go to it, and
  // only those of at most decode_rows rows to `decode`; `panel` takes the
  // others, decode's rows too where min_panel_rows <= decode_rows.
  PanelFn small_panel = nullptr;
  int min_panel_rows = 0;
  // Activation rows up to which `decode` takes a call (it is given
  // decode_panels() consecutive panels at once); more than kMaxDecodeRows
  // only for a spec whose decode function reads that many rows (F16_X16:
  // its tiles, several panels per call).
  int decode_rows = kMaxDecodeRows;
  // Activation bytes kept hot while a chunk's panels stream past them (the
  // M blocking; 0: the driver's default). A layout whose panel work per
  // call does not shrink with the rows (F16_X16: the weights split per
  // call) takes larger blocks.
  size_t act_block_bytes = 0;
};

// Run a validated kMulMat / kMulMatId op whose src0 is a packed view.
// Allocation failure of the scratch is kResourceExhausted; for mul_mat_id,
// expert ids outside [0, E) are kOutOfRange before anything is written.
Status packed_mul_mat(const Op& op, const KernelContext& ctx, const PackedSpec& spec);
Status packed_mul_mat_id(const Op& op, const KernelContext& ctx, const PackedSpec& spec);

// Scratch of the calling thread for panel functions (slot 0..3; the driver
// uses slots 0 and 1), grown on demand; nullptr when allocation fails.
void* packed_thread_scratch(int slot, size_t bytes);

}  // namespace folio::cpu
