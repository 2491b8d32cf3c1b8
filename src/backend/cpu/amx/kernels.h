// AMX kernel entry points on plain (unpacked) weights; the packed layouts'
// AMX panels are declared in packed/packed_kernels.h. Entry points are plain
// functions: register_amx.cc (baseline flags) only takes their addresses.
#pragma once

#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/kernel.h"

namespace folio::cpu {

// amx/mul_mat_bf16_amx.cc: BF16 weights x F32 activations rounded to BF16,
// TDPBF16PS tiles; each output is amx/bf16_tile_model.h's dot_model.
Status mul_mat_bf16_amx(const Op& op, const KernelContext& ctx);
Status mul_mat_id_bf16_amx(const Op& op, const KernelContext& ctx);

// The same file: F16 weights split into BF16 parts, three TDPBF16PS
// products per step; each output is amx/f16_tile_model.h's dot_model.
Status mul_mat_f16_amx(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16_amx(const Op& op, const KernelContext& ctx);

// F16 at any batch size with the tiles' bits: batches of fewer than
// kF16AmxMinRows activation rows (mul_mat_id: an expert's tile of fewer
// tokens) on the AVX-512 rows kernel below, larger ones on the tiles above;
// both give dot_model's bits, so the threshold changes no result. Not
// registered: F16 weights on the amx tier are held as F16_X16, whose
// kernels (amx/mul_mat_f16_x16.cc) split calls the same way (their rows
// kernel, reading the interleaved layout, takes two rows too).
inline constexpr int64_t kF16AmxMinRows = 2;
Status mul_mat_f16_amx_combined(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16_amx_combined(const Op& op, const KernelContext& ctx);

// amx/mul_mat_f16_rows.cc: F16 weights in AVX-512 registers, lanes the
// weight rows, each output exactly amx/f16_tile_model.h's dot_model (the
// tile kernel's bits) at any batch size; for the batches too small for the
// tiles. The panel and tile functions follow mul_mat_tiled.h's DotPanelFn
// and DotTileFn.
void f16_rows_panel(int64_t k, const void* w, size_t w_stride, int64_t nr, const void* x,
                    size_t x_stride, int64_t nc, float* out, size_t out_stride);
void f16_rows_tile(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                   size_t x_stride, int nc, float* out, size_t out_stride);
Status mul_mat_f16_rows(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16_rows(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
