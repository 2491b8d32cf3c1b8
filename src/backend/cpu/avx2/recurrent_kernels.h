// AVX2 kernels of the recurrent ops (gated DeltaNet, depthwise conv, Mamba-2
// scan), plain and fused decode forms, all bit-identical to their tier-kRef
// references (see each file's comment) except the chunked gated DeltaNet for
// long prefills.
// Entry points are plain functions; register_avx2.cc takes their addresses.
#pragma once

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// gdn_chunked.cc: kGatedDeltaNet in chunked form (not bit-identical; see
// scalar/gdn_chunked.h) for T >= 256 with params.allow_chunked, S_k and
// S_v multiples of 8.
bool supports_gated_delta_net_chunked_avx2(const Op& op);
Status gated_delta_net_chunked_avx2(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
