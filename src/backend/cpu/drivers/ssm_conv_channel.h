// One channel of the depthwise causal convolution the reference's way
// (ref/ssm_conv.cc): ((0 + win[0] w[0]) + win[1] w[1]) ... + bias, SiLU
// (x / (1 + exp(-x))) when `act`. The SIMD kernels run their remainder
// channels (and their per-lane SiLU) through these, so every tier gives the
// reference's bits.
#pragma once

#include <cstdint>

namespace folio::cpu {

// Whether `outputs` outputs of a width-k conv are worth splitting across the
// thread pool: an output with SiLU costs about as much as 16 taps (its exp).
bool ssm_conv_parallel(int64_t outputs, int k, bool act);

// The reference's exp (libm's expf), and SiLU with it.
float ssm_conv_exp(float x);
float ssm_conv_silu(float x);

// win[0..k), w[0..k): the window and the channel's weights.
float ssm_conv_channel(const float* win, const float* w, int k, float bias, bool act);

// The fused update of one channel: the window is the k - 1 taps at `from`
// then x; returns the output and writes the shifted taps (window 1..k-1) to
// `to` (which may be `from`: the window is read first).
float ssm_conv_update_channel(const float* from, float x, const float* w, int k, float bias,
                              bool act, float* to);

}  // namespace folio::cpu
