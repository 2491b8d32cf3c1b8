// The AVX-512-only recurrent kernel: the decode depthwise conv (plain T = 1
// and fused update, bit-identical to the references). The others are
// written once for every tier: simd/recurrent_kernels.h.
// Entry points are plain functions; register_avx512.cc takes their addresses.
#pragma once

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// ssm_conv.cc: kSsmConv with one token (T = 1) and kSsmConvUpdate; K <= 8,
// weight records, bias and state records contiguous.
bool supports_ssm_conv_avx512(const Op& op);
bool supports_ssm_conv_update_avx512(const Op& op);
Status ssm_conv_avx512(const Op& op, const KernelContext& ctx);
Status ssm_conv_update_avx512(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
