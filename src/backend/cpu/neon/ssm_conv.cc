// NEON depthwise causal convolution: the plain op for any number of tokens
// (kSsmConv: prefill and T = 1) and the fused conv update on a state pool
// (kSsmConvUpdate), bit-identical to the references (ref/ssm_conv.cc,
// ref/ssm_conv_update.cc). The AVX2 kernels' scheme (avx2/ssm_conv.cc) on
// 4 lanes; the thread split, remainder channels and the ops taken:
// scalar/ssm_conv_driver.h.
//
// Lanes are 4 consecutive channels. Each output keeps the reference's
// order: ((0 + win[0] w[0]) + win[1] w[1]) ... + bias, one mul and one add
// per tap, no FMA, +0.0f when there is no bias; SiLU calls the reference's
// scalar expression per output.
//   plain: x holds time innermost per channel (K-1 taps, then T inputs) and
//     dst channels innermost, so a tile of 4 channels x 4 outputs reads
//     4 + K - 1 <= 11 time steps of each channel row (three 4-float loads,
//     the last ones through a zero-padded copy at the row's end) and
//     transposes them (4 x 4 transposes): vector v[i] = time t0 + i across
//     the channels.
//   update: the K-1 taps of the 4 channels' records, the new input (one
//     vector, channels innermost), then the shifted taps written back; a
//     block is fully read before its destination records are written, so
//     identity slots update in place.
// Remainder tokens (T % 4) run the reference's scalar code.
#include <cstdint>
#include <cstring>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/ssm_conv_channel.h"
#include "backend/cpu/scalar/ssm_conv_driver.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kLanes = 4;
constexpr int kMaxK = kSsmConvMaxK;
constexpr int kWinVecs = 3;  // 4-float loads per channel row for a tile: 4 + kMaxK - 1 <= 12

// Weight vectors of the 4 channels from c0 (wv[j] lane l = w[j] of channel
// c0 + l) and the bias vector.
FOLIO_INLINE_NEON void load_weights(const SsmConvWeights& cv, int64_t c0,
                                    float32x4_t (&wv)[kMaxK], float32x4_t* bv) {
  float col[kLanes];
  for (int j = 0; j < cv.k; ++j) {
    for (int l = 0; l < kLanes; ++l) col[l] = cv.w[(c0 + l) * cv.k + j];
    wv[j] = vld1q_f32(col);
  }
  *bv = cv.bias != nullptr ? vld1q_f32(cv.bias + c0) : vdupq_n_f32(0.0f);
}

// ((0 + win[0] w[0]) + win[1] w[1]) + ... + bias: the reference's order.
FOLIO_INLINE_NEON float32x4_t dot_window(const float32x4_t* win, const float32x4_t (&wv)[kMaxK],
                                         float32x4_t bv, int k) {
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (int j = 0; j < k; ++j) sum = vaddq_f32(sum, vmulq_f32(win[j], wv[j]));
  return vaddq_f32(sum, bv);
}

// Stores 4 outputs, SiLU (scalar, the reference's expression) if asked.
FOLIO_INLINE_NEON void store_out(float* dst, float32x4_t sum, bool act) {
  vst1q_f32(dst, sum);
  if (act) {
    for (int l = 0; l < kLanes; ++l) dst[l] = ssm_conv_silu(dst[l]);
  }
}

// Four floats of a row at i, zeros past its end n.
FOLIO_INLINE_NEON float32x4_t load_upto(const float* row, int64_t i, int64_t n) {
  if (i + kLanes <= n) return vld1q_f32(row + i);
  float tmp[kLanes] = {};
  if (i < n) std::memcpy(tmp, row + i, static_cast<size_t>(n - i) * sizeof(float));
  return vld1q_f32(tmp);
}

// Plain op over channel blocks [b0, b1) of every sequence.
void plain_blocks(const SsmConvWeights& cv, const TensorView& x, const TensorView& dst, int64_t b0,
                  int64_t b1) {
  const int64_t n_t = dst.ne[1], n_seq = dst.ne[2], row_len = x.ne[0];
  float32x4_t wv[kMaxK], bv;
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * kLanes;
      load_weights(cv, c0, wv, &bv);
      const float* xr[kLanes];
      for (int l = 0; l < kLanes; ++l) xr[l] = x.row<const float>(c0 + l, s);
      int64_t t0 = 0;
      for (; t0 + kLanes <= n_t; t0 += kLanes) {
        float32x4_t v[kLanes * kWinVecs];  // v[i]: time t0 + i of the 4 channels
        for (int q = 0; q < kWinVecs; ++q) {
          float32x4_t r[kLanes];
          for (int l = 0; l < kLanes; ++l) r[l] = load_upto(xr[l], t0 + q * kLanes, row_len);
          neon::transpose4(r);
          for (int i = 0; i < kLanes; ++i) v[q * kLanes + i] = r[i];
        }
        for (int i = 0; i < kLanes; ++i) {
          store_out(dst.at<float>(c0, t0 + i, s), dot_window(v + i, wv, bv, cv.k), cv.act);
        }
      }
      for (int64_t t = t0; t < n_t; ++t) {
        for (int l = 0; l < kLanes; ++l) {
          *dst.at<float>(c0 + l, t, s) =
              ssm_conv_channel(xr[l] + t, cv.w + (c0 + l) * cv.k, cv.k,
                               cv.bias != nullptr ? cv.bias[c0 + l] : 0.0f, cv.act);
        }
      }
    }
  }
}

// Fused update over channel blocks [b0, b1) of every sequence.
void update_blocks(const SsmConvWeights& cv, const TensorView& x, const StateSlots& slots,
                   const TensorView& dst, int64_t b0, int64_t b1) {
  const int taps = cv.k - 1;
  float32x4_t wv[kMaxK], bv, win[kMaxK];
  float col[kMaxK][kLanes];
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * kLanes;
      load_weights(cv, c0, wv, &bv);
      for (int l = 0; l < kLanes; ++l) {
        const float* fp = from.row<const float>(c0 + l);
        for (int j = 0; j < taps; ++j) col[j][l] = fp[j];
      }
      for (int j = 0; j < taps; ++j) win[j] = vld1q_f32(col[j]);
      win[taps] = vld1q_f32(x.at<const float>(c0, s));
      store_out(dst.at<float>(c0, s), dot_window(win, wv, bv, cv.k), cv.act);
      vst1q_f32(col[taps], win[taps]);
      for (int l = 0; l < kLanes; ++l) {
        float* tp = to.row<float>(c0 + l);
        for (int j = 0; j < taps; ++j) tp[j] = col[j + 1][l];
      }
    }
  }
}

}  // namespace

Status ssm_conv_neon(const Op& op, const KernelContext& ctx) {
  return ssm_conv_blocked(op, ctx, kLanes, plain_blocks);
}

Status ssm_conv_update_neon(const Op& op, const KernelContext& ctx) {
  return ssm_conv_update_blocked(op, ctx, kLanes, update_blocks);
}

}  // namespace folio::cpu
