// The recurrent kernels written once over the traits type (f32x16.h):
// gated DeltaNet (simd/gated_delta_net.h), the Mamba-2 scan
// (simd/ssm_scan.h) and the depthwise conv (simd/ssm_conv.h), bit-identical
// to the tier-kRef references on every tier. Their entry points, the registration a tier's
// register_*.cc calls (after its chunked gated DeltaNet, which must come
// first) and the explicit instantiation in the tier's simd_kernels.cc. The
// headers the bodies need come in through this one, before the tier's
// target region.
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
// ARM has no SIMD chunked kernel: the long sequences that the portable
// chunked form takes (T >= 64 with allow_chunked; drivers/gdn_chunked.h,
// the faster form there) stay with it.
template <class S>
bool supports_gated_delta_net(const Op& op) {
  const bool lanes = op.src[0].ne[0] % S::kLanes == 0 && op.src[2].ne[0] % S::kLanes == 0;
  if (S::kTier == KernelTier::kNeon && op.kind == OpKind::kGatedDeltaNet) {
    return lanes && !supports_gated_delta_net_chunked(op);
  }
  return lanes;
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
  t.add({OpKind::kGatedDeltaNet, S::kTier, kernel_name("gated_delta_net", S::kName),
         supports_gated_delta_net<S>, gated_delta_net<S>});
  t.add({OpKind::kGatedDeltaNetUpdate, S::kTier, kernel_name("gated_delta_net_update", S::kName),
         supports_gated_delta_net<S>, gated_delta_net<S>});
  t.add({OpKind::kSsmScan, S::kTier, kernel_name("ssm_scan", S::kName), supports_ssm_scan<S>,
         ssm_scan<S>});
  t.add({OpKind::kSsmScanUpdate, S::kTier, kernel_name("ssm_scan_update", S::kName),
         supports_ssm_scan<S>, ssm_scan_update<S>});
  // AVX-512 keeps its own decode conv (avx512/ssm_conv.cc: T = 1 and the
  // fused update, records split by permutes instead of a scalar gather) and
  // runs the rest on the AVX2 instance below it.
  if (S::kTier != KernelTier::kAvx512) {
    t.add({OpKind::kSsmConv, S::kTier, kernel_name("ssm_conv", S::kName), supports_ssm_conv_blocked,
           ssm_conv<S>});
    t.add({OpKind::kSsmConvUpdate, S::kTier, kernel_name("ssm_conv_update", S::kName),
           supports_ssm_conv_update_blocked, ssm_conv_update<S>});
  }
}

}  // namespace folio::cpu::simd

// In a tier's simd_kernels.cc, after the recurrent bodies.
#define FOLIO_SIMD_INSTANTIATE_RECURRENT(S)                                   \
  namespace folio::cpu::simd {                                                \
  template Status gated_delta_net<S>(const Op& op, const KernelContext& ctx); \
  template Status ssm_scan<S>(const Op& op, const KernelContext& ctx);        \
  template Status ssm_scan_update<S>(const Op& op, const KernelContext& ctx); \
  template Status ssm_conv<S>(const Op& op, const KernelContext& ctx);        \
  template Status ssm_conv_update<S>(const Op& op, const KernelContext& ctx); \
  }
