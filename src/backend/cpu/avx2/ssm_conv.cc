// AVX2 depthwise causal convolution: the plain op for any number of tokens
// (kSsmConv: prefill and T = 1) and the fused conv update on a state pool
// (kSsmConvUpdate), bit-identical to the references (ref/ssm_conv.cc,
// ref/ssm_conv_update.cc).
//
// Lanes are 8 consecutive channels. Each output keeps the reference's
// order: ((0 + win[0] w[0]) + win[1] w[1]) ... + bias, one mul and one add
// per tap, no FMA, +0.0f when there is no bias; SiLU calls the reference's
// scalar expression (std::exp) per output.
//   plain: x holds time innermost per channel (K-1 taps, then T inputs) and
//     dst channels innermost, so a tile of 8 channels x 8 outputs loads
//     8 + 7 time steps of each channel row (the second load masked at the
//     row's end) and transposes them (two 8 x 8 transposes): vector v[i] =
//     time t0 + i across the channels. The reference walks time outermost
//     and every channel row once per output (a cache miss each); this is
//     about 20x faster on a 6144-channel, 512-token prefill.
//   update: the K-1 taps of the 8 channels' records, the new input (one
//     vector, channels innermost), then the shifted taps written back; a
//     block is fully read before its destination records are written, so
//     identity slots update in place.
// Remainder tokens (T % 8) run the reference's scalar code; the thread
// split, remainder channels (channels % 8) and the ops taken (K <= 8,
// weights and bias contiguous, channels innermost in dst):
// scalar/ssm_conv_driver.h.
#include <cmath>
#include <cstdint>

#include "backend/cpu/avx2/recurrent_kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/avx2/transpose.h"
#include "backend/cpu/scalar/ssm_conv_channel.h"
#include "backend/cpu/scalar/ssm_conv_driver.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction (the reference has none)

namespace folio::cpu {
namespace {

constexpr int kLanes = 8;
constexpr int kMaxK = kSsmConvMaxK;

// Weight vectors of the 8 channels from c0 (wv[j] lane l = w[j] of channel
// c0 + l) and the bias vector.
FOLIO_INLINE_AVX2 void load_weights(const SsmConvWeights& cv, int64_t c0, __m256 (&wv)[kMaxK], __m256* bv) {
  alignas(32) float col[8];
  for (int j = 0; j < cv.k; ++j) {
    for (int l = 0; l < 8; ++l) col[l] = cv.w[(c0 + l) * cv.k + j];
    wv[j] = _mm256_load_ps(col);
  }
  *bv = cv.bias != nullptr ? _mm256_loadu_ps(cv.bias + c0) : _mm256_setzero_ps();
}

// ((0 + win[0] w[0]) + win[1] w[1]) + ... + bias: the reference's order.
FOLIO_INLINE_AVX2 __m256 dot_window(const __m256* win, const __m256 (&wv)[kMaxK], __m256 bv,
                                    int k) {
  __m256 sum = _mm256_setzero_ps();
  for (int j = 0; j < k; ++j) sum = _mm256_add_ps(sum, _mm256_mul_ps(win[j], wv[j]));
  return _mm256_add_ps(sum, bv);
}

// Stores 8 outputs, SiLU (scalar, the reference's expression) if asked.
FOLIO_INLINE_AVX2 void store_out(float* dst, __m256 sum, bool act) {
  _mm256_storeu_ps(dst, sum);
  if (act) {
    for (int l = 0; l < 8; ++l) dst[l] = ssm_conv_silu(dst[l]);
  }
}

// Plain op over channel blocks [b0, b1) of every sequence.
FOLIO_TARGET_AVX2 void plain_blocks(const SsmConvWeights& cv, const TensorView& x, const TensorView& dst,
                                    int64_t b0, int64_t b1) {
  const int64_t n_t = dst.ne[1], n_seq = dst.ne[2], row_len = x.ne[0];
  __m256 wv[kMaxK], bv;
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * 8;
      load_weights(cv, c0, wv, &bv);
      const float* xr[8];
      for (int l = 0; l < 8; ++l) xr[l] = x.row<const float>(c0 + l, s);
      int64_t t0 = 0;
      for (; t0 + 8 <= n_t; t0 += 8) {
        __m256 v[16];
        __m256 lo[8], hi[8];
        const __m256i more = avx2::lanes(row_len - (t0 + 8));  // the row ends at row_len
        for (int l = 0; l < 8; ++l) {
          lo[l] = _mm256_loadu_ps(xr[l] + t0);
          hi[l] = _mm256_maskload_ps(xr[l] + t0 + 8, more);
        }
        avx2::transpose8(lo);
        avx2::transpose8(hi);
        for (int i = 0; i < 8; ++i) {
          v[i] = lo[i];
          v[i + 8] = hi[i];
        }
        for (int i = 0; i < 8; ++i) {
          store_out(dst.at<float>(c0, t0 + i, s), dot_window(v + i, wv, bv, cv.k), cv.act);
        }
      }
      for (int64_t t = t0; t < n_t; ++t) {
        for (int l = 0; l < 8; ++l)
          *dst.at<float>(c0 + l, t, s) =
              ssm_conv_channel(xr[l] + t, cv.w + (c0 + l) * cv.k, cv.k,
                               cv.bias != nullptr ? cv.bias[c0 + l] : 0.0f, cv.act);
      }
    }
  }
}

// Fused update over channel blocks [b0, b1) of every sequence.
FOLIO_TARGET_AVX2 void update_blocks(const SsmConvWeights& cv, const TensorView& x, const StateSlots& slots,
                                     const TensorView& dst, int64_t b0, int64_t b1) {
  const int taps = cv.k - 1;
  __m256 wv[kMaxK], bv, win[kMaxK];
  alignas(32) float col[kMaxK][8];
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c0 = b * 8;
      load_weights(cv, c0, wv, &bv);
      for (int l = 0; l < 8; ++l) {
        const float* fp = from.row<const float>(c0 + l);
        for (int j = 0; j < taps; ++j) col[j][l] = fp[j];
      }
      for (int j = 0; j < taps; ++j) win[j] = _mm256_load_ps(col[j]);
      win[taps] = _mm256_loadu_ps(x.at<const float>(c0, s));
      store_out(dst.at<float>(c0, s), dot_window(win, wv, bv, cv.k), cv.act);
      _mm256_store_ps(col[taps], win[taps]);
      for (int l = 0; l < 8; ++l) {
        float* tp = to.row<float>(c0 + l);
        for (int j = 0; j < taps; ++j) tp[j] = col[j + 1][l];
      }
    }
  }
}

}  // namespace

Status ssm_conv_avx2(const Op& op, const KernelContext& ctx) {
  return ssm_conv_blocked(op, ctx, kLanes, plain_blocks);
}

Status ssm_conv_update_avx2(const Op& op, const KernelContext& ctx) {
  return ssm_conv_update_blocked(op, ctx, kLanes, update_blocks);
}

}  // namespace folio::cpu
