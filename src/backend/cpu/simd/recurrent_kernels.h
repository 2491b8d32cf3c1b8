// The recurrent kernels written once over the traits type (f32x16.h):
// gated DeltaNet token by token (simd/gated_delta_net.h) and in chunked form
// for long prefills (simd/gdn_chunked.h), the Mamba-2 scan (simd/ssm_scan.h)
// and the depthwise conv (simd/ssm_conv.h); all but the chunked form are
// bit-identical to the tier-kRef references on every tier. Their entry
// points, the registration a tier's register_*.cc calls and the explicit
// instantiation in the tier's simd_kernels.cc. The headers the bodies need
// come in through this one, before the tier's target region.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/gdn_blocked.h"
#include "backend/cpu/drivers/gdn_chunked.h"
#include "backend/cpu/drivers/ssm_conv_channel.h"
#include "backend/cpu/drivers/ssm_conv_driver.h"
#include "backend/cpu/drivers/ssm_scan_driver.h"
#include "backend/cpu/simd/f32x16_transpose.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// gated_delta_net.h: kGatedDeltaNet and kGatedDeltaNetUpdate.
template <class S>
Status gated_delta_net(const Op& op, const KernelContext& ctx);

// S_k and S_v multiples of 16 (lanes = state rows, 16 x 16 tiles over i).
template <class S>
bool supports_gated_delta_net(const Op& op) {
  return op.src[0].ne[0] % S::kLanes == 0 && op.src[2].ne[0] % S::kLanes == 0;
}

// gdn_chunked.h: kGatedDeltaNet in chunked form (not bit-identical; see
// drivers/gdn_chunked.h), the same bytes on every tier.
template <class S>
Status gated_delta_net_chunked(const Op& op, const KernelContext& ctx);

// Tokens per sequence from which a tier takes the chunked form. AVX2, with
// half AVX-512's multiply-add width, overtakes its token-by-token kernel
// later: measured (16 heads of 128, one thread) 25% slower at 64 tokens,
// even at 256, 1.9x faster at 2048.
template <class S>
constexpr int64_t gdn_chunk_min_tokens() {
  return S::kTier == KernelTier::kAvx2 ? 256 : kGdnChunkMinTokens;
}

// T >= gdn_chunk_min_tokens<S>() with allow_chunked
// (supports_gated_delta_net_chunked), S_k and S_v multiples of 8.
template <class S>
bool supports_gated_delta_net_chunked_simd(const Op& op) {
  return supports_gated_delta_net_chunked(op) && op.src[0].ne[2] >= gdn_chunk_min_tokens<S>() &&
         op.src[0].ne[0] % 8 == 0 && op.src[2].ne[0] % 8 == 0;
}

// ssm_scan.h: kSsmScan (Mamba-2) and kSsmScanUpdate with P (rows per head)
// a multiple of 16.
template <class S>
Status ssm_scan(const Op& op, const KernelContext& ctx);
template <class S>
Status ssm_scan_update(const Op& op, const KernelContext& ctx);

template <class S>
bool supports_ssm_scan(const Op& op) {
  return op.src[0].ne[0] % S::kLanes == 0;
}

// ssm_conv.h: kSsmConv (any T) and kSsmConvUpdate, the ops
// drivers/ssm_conv_driver.h takes (K <= 8, weights and bias contiguous,
// channels innermost).
template <class S>
Status ssm_conv(const Op& op, const KernelContext& ctx);
template <class S>
Status ssm_conv_update(const Op& op, const KernelContext& ctx);

template <class S>
void register_simd_recurrent_kernels(KernelTable& t) {
  // Chunked form first: it takes the long sequences; the bit-identical
  // token-by-token kernel takes the rest.
  t.add({OpKind::kGatedDeltaNet, S::kTier, kernel_name("gated_delta_net.chunked", S::kName),
         supports_gated_delta_net_chunked_simd<S>, gated_delta_net_chunked<S>});
  t.add({OpKind::kGatedDeltaNet, S::kTier, kernel_name("gated_delta_net", S::kName),
         supports_gated_delta_net<S>, gated_delta_net<S>});
  t.add({OpKind::kGatedDeltaNetUpdate, S::kTier, kernel_name("gated_delta_net_update", S::kName),
         supports_gated_delta_net<S>, gated_delta_net<S>});
  t.add({OpKind::kSsmScan, S::kTier, kernel_name("ssm_scan", S::kName), supports_ssm_scan<S>,
         ssm_scan<S>});
  t.add({OpKind::kSsmScanUpdate, S::kTier, kernel_name("ssm_scan_update", S::kName),
         supports_ssm_scan<S>, ssm_scan_update<S>});
  // AVX-512 keeps its own decode conv (avx512/ssm_conv.cc: T = 1 and the
  // fused update, records split by permutes instead of a scalar gather,
  // registered before this), so this instance runs its longer convs.
  t.add({OpKind::kSsmConv, S::kTier, kernel_name("ssm_conv", S::kName), supports_ssm_conv_blocked,
         ssm_conv<S>});
  if (S::kTier != KernelTier::kAvx512) {
    t.add({OpKind::kSsmConvUpdate, S::kTier, kernel_name("ssm_conv_update", S::kName),
           supports_ssm_conv_update_blocked, ssm_conv_update<S>});
  }
}

}  // namespace folio::cpu::simd

// In a tier's simd_kernels.cc, after the recurrent bodies.
#define FOLIO_SIMD_INSTANTIATE_RECURRENT(S)                                           \
  namespace folio::cpu::simd {                                                        \
  template Status gated_delta_net<S>(const Op& op, const KernelContext& ctx);         \
  template Status gated_delta_net_chunked<S>(const Op& op, const KernelContext& ctx); \
  template Status ssm_scan<S>(const Op& op, const KernelContext& ctx);                \
  template Status ssm_scan_update<S>(const Op& op, const KernelContext& ctx);         \
  template Status ssm_conv<S>(const Op& op, const KernelContext& ctx);                \
  template Status ssm_conv_update<S>(const Op& op, const KernelContext& ctx);         \
  }
