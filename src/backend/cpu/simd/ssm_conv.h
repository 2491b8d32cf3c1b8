// Depthwise causal convolution over the traits type (f32x16.h): the plain op
// for any number of tokens (kSsmConv: prefill and T = 1) and the fused conv
// update on a state pool (kSsmConvUpdate), bit-identical to the references
// (ref/ssm_conv.cc, ref/ssm_conv_update.cc) on every tier.
//
// Lanes are 16 consecutive channels. Each output keeps the reference's
// order: ((0 + win[0] w[0]) + win[1] w[1]) ... + bias, one mul and one add
// per tap, no FMA (the tier's region compiles without contraction), +0.0f
// when there is no bias; SiLU is the reference's expression with libm's exp
// bits (ssm_conv_store).
//   plain: x holds time innermost per channel (K-1 taps, then T inputs) and
//     dst channels innermost, so a tile of 16 channels x 8 outputs loads
//     16 time steps of each channel row (8 outputs + up to 7 more taps;
//     masked at the row's end) and transposes them (f32x16_transpose.h):
//     vector v[i] = time t0 + i across the channels. The reference walks
//     time outermost and every channel row once per output (a cache miss
//     each); this is about 20x faster on a 6144-channel, 512-token prefill.
//   update: the K-1 taps of the 16 channels' records, the new input (one
//     vector, channels innermost), then the shifted taps written back; a
//     block is fully read before its destination records are written, so
//     identity slots update in place.
// Remainder tokens (T % 8) run the reference's scalar code; the thread
// split, remainder channels (channels % 16) and the ops taken (K <= 8,
// weights and bias contiguous, channels innermost in dst):
// drivers/ssm_conv_driver.h.
#pragma once

#include "backend/cpu/drivers/ssm_conv_channel.h"
#include "backend/cpu/drivers/ssm_conv_driver.h"
#include "backend/cpu/simd/f32x16_transpose.h"

namespace folio::cpu::simd {

inline constexpr int kSsmConvTile = 8;  // outputs per plain tile: 8 + kSsmConvMaxK - 1 <= 16

// Weight vectors of the 16 channels from c0 (wv[j] lane l = w[j] of channel
// c0 + l) and the bias vector.
template <class S>
void ssm_conv_load_weights(const SsmConvWeights& cv, int64_t c0, typename S::V (&wv)[kSsmConvMaxK],
                           typename S::V* bv) {
  constexpr int kL = S::kLanes;
  alignas(64) float col[kL];
  for (int j = 0; j < cv.k; ++j) {
    for (int l = 0; l < kL; ++l) col[l] = cv.w[(c0 + l) * cv.k + j];
    wv[j] = S::load(col);
  }
  *bv = cv.bias != nullptr ? S::load(cv.bias + c0) : S::zero();
}

// ((0 + win[0] w[0]) + win[1] w[1]) + ... + bias: the reference's order.
template <class S>
typename S::V ssm_conv_dot(const typename S::V* win, const typename S::V (&wv)[kSsmConvMaxK],
                           typename S::V bv, int k) {
  typename S::V sum = S::zero();
  for (int j = 0; j < k; ++j) sum = sum + win[j] * wv[j];
  return sum + bv;
}

// Stores 16 outputs, SiLU if asked: the reference's x / (1 + exp(-x)) with
// libm's exp bits, from S::expf_libm where the traits have it (AVX-512),
// else the reference's scalar expression per lane (AVX2's double-precision
// vectors were no faster than libm's expf; NEON has no vector path).
template <class S>
__attribute__((always_inline)) inline void ssm_conv_store(float* dst, typename S::V sum, bool act) {
  if constexpr (S::kHasExpfLibm) {
    if (act) sum = sum / (S::set1(1.0f) + S::expf_libm(S::zero() - sum, ssm_conv_exp));
    S::store(dst, sum);
  } else {
    S::store(dst, sum);
    if (act) {
      for (int l = 0; l < S::kLanes; ++l) dst[l] = ssm_conv_silu(dst[l]);
    }
  }
}

// Plain op over channel blocks [b0, b1) of every sequence.
template <class S>
void ssm_conv_plain_blocks(const SsmConvWeights& cv, const TensorView& x, const TensorView& dst,
                           int64_t b0, int64_t b1) {
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  const int64_t n_t = dst.ne[1], n_seq = dst.ne[2], row_len = x.ne[0];
  V wv[kSsmConvMaxK], bv;
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * kL;
      ssm_conv_load_weights<S>(cv, c0, wv, &bv);
      const float* xr[kL];
      for (int l = 0; l < kL; ++l) xr[l] = x.row<const float>(c0 + l, s);
      int64_t t0 = 0;
      for (; t0 + kSsmConvTile <= n_t; t0 += kSsmConvTile) {
        V v[kL];  // v[i]: time t0 + i of the 16 channels
        if (t0 + kL <= row_len) {
          for (int l = 0; l < kL; ++l) v[l] = S::load(xr[l] + t0);
        } else {  // the row ends at row_len
          const typename S::M live = S::first(row_len - t0);
          for (int l = 0; l < kL; ++l) v[l] = S::load(xr[l] + t0, live);
        }
        transpose16(v);
        for (int i = 0; i < kSsmConvTile; ++i) {
          ssm_conv_store<S>(dst.at<float>(c0, t0 + i, s), ssm_conv_dot<S>(v + i, wv, bv, cv.k),
                            cv.act);
        }
      }
      for (int64_t t = t0; t < n_t; ++t) {
        for (int l = 0; l < kL; ++l) {
          *dst.at<float>(c0 + l, t, s) =
              ssm_conv_channel(xr[l] + t, cv.w + (c0 + l) * cv.k, cv.k,
                               cv.bias != nullptr ? cv.bias[c0 + l] : 0.0f, cv.act);
        }
      }
    }
  }
}

// Fused update over channel blocks [b0, b1) of every sequence.
template <class S>
void ssm_conv_update_blocks(const SsmConvWeights& cv, const TensorView& x, const StateSlots& slots,
                            const TensorView& dst, int64_t b0, int64_t b1) {
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  const int taps = cv.k - 1;
  V wv[kSsmConvMaxK], bv, win[kSsmConvMaxK];
  alignas(64) float col[kSsmConvMaxK][kL];
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * kL;
      ssm_conv_load_weights<S>(cv, c0, wv, &bv);
      for (int l = 0; l < kL; ++l) {
        const float* fp = from.row<const float>(c0 + l);
        for (int j = 0; j < taps; ++j) col[j][l] = fp[j];
      }
      for (int j = 0; j < taps; ++j) win[j] = S::load(col[j]);
      win[taps] = S::load(x.at<const float>(c0, s));
      ssm_conv_store<S>(dst.at<float>(c0, s), ssm_conv_dot<S>(win, wv, bv, cv.k), cv.act);
      S::store(col[taps], win[taps]);
      for (int l = 0; l < kL; ++l) {
        float* tp = to.row<float>(c0 + l);
        for (int j = 0; j < taps; ++j) tp[j] = col[j + 1][l];
      }
    }
  }
}

template <class S>
Status ssm_conv(const Op& op, const KernelContext& ctx) {
  return ssm_conv_blocked(op, ctx, S::kLanes, ssm_conv_plain_blocks<S>);
}

template <class S>
Status ssm_conv_update(const Op& op, const KernelContext& ctx) {
  return ssm_conv_update_blocked(op, ctx, S::kLanes, ssm_conv_update_blocks<S>);
}

}  // namespace folio::cpu::simd
