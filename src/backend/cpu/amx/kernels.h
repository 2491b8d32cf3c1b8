// AMX kernel entry points on plain (unpacked) weights; the packed layouts'
// AMX panels are declared in packed/packed_kernels.h. Entry points are plain
// functions: register_amx.cc (baseline flags) only takes their addresses.
#pragma once

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

}  // namespace folio::cpu
