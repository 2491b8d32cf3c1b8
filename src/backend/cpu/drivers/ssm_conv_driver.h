// The driver of the lane-blocked SIMD depthwise causal convolutions
// (kSsmConv for any T, and the fused conv update kSsmConvUpdate, backend/op.h),
// of the body simd/ssm_conv.h (the AVX2 and NEON tiers; AVX-512's convs of
// more than one token): the weights, bias and activation of the
// op, which ops the blocked kernels take, the split of channel blocks
// across the thread pool and the remainder channels (channels % lanes), run
// the reference's scalar way (drivers/ssm_conv_channel.h), are written once
// here; each tier supplies the loops over its blocks of `lanes` channels.
// Every output keeps the reference's order:
//   ((0 + win[0] w[0]) + win[1] w[1]) ... + bias
// one mul and one add per tap, +0.0f without a bias, SiLU the reference's
// expression with libm's exp bits: every tier gives the reference's bits.
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/state_slots.h"

namespace folio::cpu {

inline constexpr int kSsmConvMaxK = 8;  // conv widths the blocked kernels take

struct SsmConvWeights {
  const float* w;     // [K, channels], records of K contiguous
  const float* bias;  // [channels] contiguous, or nullptr
  bool act;           // SiLU
  int k;
};

// K in [2, kSsmConvMaxK], weights and bias contiguous, rows of x, dst (and
// the pool) contiguous.
bool supports_ssm_conv_blocked(const Op& op);
bool supports_ssm_conv_update_blocked(const Op& op);

// Channel blocks [b0, b1) of `lanes` channels (block b: channels b * lanes ..).
//   plain:  x [K-1+T, channels, n_seq] (time innermost), dst [channels, T, n_seq];
//   update: x [channels, n_seq], the sequences' slots, dst [channels, n_seq].
using SsmConvPlainBlocks = void (*)(const SsmConvWeights& cv, const TensorView& x,
                                    const TensorView& dst, int64_t b0, int64_t b1);
using SsmConvUpdateBlocks = void (*)(const SsmConvWeights& cv, const TensorView& x,
                                     const StateSlots& slots, const TensorView& dst, int64_t b0,
                                     int64_t b1);

Status ssm_conv_blocked(const Op& op, const KernelContext& ctx, int lanes, SsmConvPlainBlocks fn);
Status ssm_conv_update_blocked(const Op& op, const KernelContext& ctx, int lanes,
                               SsmConvUpdateBlocks fn);

}  // namespace folio::cpu
