// AVX2 kernels of the recurrent ops, plain and fused decode forms, all
// bit-identical to their tier-kRef references (see each file's comment).
// Entry points are plain functions; register_avx2.cc takes their addresses.
#pragma once

#include "backend/cpu/kernel.h"

namespace folio::cpu {

// gated_delta_net.cc: kGatedDeltaNet and kGatedDeltaNetUpdate with S_k and
// S_v multiples of 8.
bool supports_gated_delta_net_avx2(const Op& op);
Status gated_delta_net_avx2(const Op& op, const KernelContext& ctx);
Status gated_delta_net_update_avx2(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
