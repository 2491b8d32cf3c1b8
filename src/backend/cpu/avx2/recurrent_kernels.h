// The AVX2-only recurrent kernel: the chunked gated DeltaNet for long
// prefills (not bit-identical). The token-by-token gated DeltaNet, the
// Mamba-2 scan and the depthwise conv are written once for every tier:
// simd/recurrent_kernels.h.
// Entry points are plain functions; register_avx2.cc takes their addresses.
#pragma once

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// gdn_chunked.cc: kGatedDeltaNet in chunked form (not bit-identical; see
// drivers/gdn_chunked.h) for T >= 256 with params.allow_chunked, S_k and
// S_v multiples of 8.
bool supports_gated_delta_net_chunked_avx2(const Op& op);
Status gated_delta_net_chunked_avx2(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
