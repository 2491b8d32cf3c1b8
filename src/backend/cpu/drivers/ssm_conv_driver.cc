#include "backend/cpu/drivers/ssm_conv_driver.h"

#include "backend/cpu/drivers/parallel.h"
#include "backend/cpu/drivers/ssm_conv_channel.h"
#include "quant/strict_fp.h"  // last: the reference's scalar arithmetic, uncontracted

namespace folio::cpu {
namespace {

SsmConvWeights weights_of(const Op& op) {
  return {static_cast<const float*>(op.src[1].data),
          op.src[2].empty() ? nullptr : static_cast<const float*>(op.src[2].data),
          op.p<SsmConvParams>().silu, static_cast<int>(op.src[1].ne[0])};
}

float bias_of(const SsmConvWeights& cv, int64_t c) {
  return cv.bias != nullptr ? cv.bias[c] : 0.0f;
}

// Weights records of K floats, K in [2, kSsmConvMaxK]; bias contiguous.
bool weights_supported(const Op& op) {
  const TensorView &w = op.src[1], &bias = op.src[2];
  return w.ne[0] >= 2 && w.ne[0] <= kSsmConvMaxK && w.is_contiguous() &&
         (bias.empty() || bias.is_contiguous());
}

}  // namespace

bool supports_ssm_conv_blocked(const Op& op) {
  const TensorView &x = op.src[0], &dst = op.dst;  // [K-1+T, channels, n_seq], [channels, T, n_seq]
  return weights_supported(op) && x.nb[0] == sizeof(float) && dst.nb[0] == sizeof(float);
}

bool supports_ssm_conv_update_blocked(const Op& op) {
  const TensorView &x = op.src[0], &pool = op.src[3], &dst = op.dst;
  return weights_supported(op) && x.nb[0] == sizeof(float) && dst.nb[0] == sizeof(float) &&
         pool.nb[0] == sizeof(float);
}

Status ssm_conv_blocked(const Op& op, const KernelContext& ctx, int lanes, SsmConvPlainBlocks fn) {
  const TensorView &x = op.src[0], &dst = op.dst;
  const SsmConvWeights cv = weights_of(op);
  const int64_t channels = dst.ne[0], n_t = dst.ne[1], n_seq = dst.ne[2];
  const int64_t n_blocks = channels / lanes;
  run_range(ctx, n_blocks, ssm_conv_parallel(channels * n_t * n_seq, cv.k, cv.act),
            [&](int64_t b0, int64_t b1) { fn(cv, x, dst, b0, b1); });
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t c = n_blocks * lanes; c < channels; ++c) {
      const float* xc = x.row<const float>(c, s);
      for (int64_t t = 0; t < n_t; ++t) {
        *dst.at<float>(c, t, s) =
            ssm_conv_channel(xc + t, cv.w + c * cv.k, cv.k, bias_of(cv, c), cv.act);
      }
    }
  }
  return Status();
}

Status ssm_conv_update_blocked(const Op& op, const KernelContext& ctx, int lanes,
                               SsmConvUpdateBlocks fn) {
  const TensorView &x = op.src[0], &dst = op.dst;  // [channels, n_seq]
  FOLIO_ASSIGN_OR_RETURN(StateSlots slots, StateSlots::prepare(op, 3, 2));
  const SsmConvWeights cv = weights_of(op);
  const int64_t channels = x.ne[0], n_seq = x.ne[1], n_blocks = channels / lanes;
  run_range(ctx, n_blocks, ssm_conv_parallel(channels * n_seq, cv.k, cv.act),
            [&](int64_t b0, int64_t b1) { fn(cv, x, slots, dst, b0, b1); });
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t c = n_blocks * lanes; c < channels; ++c) {
      *dst.at<float>(c, s) = ssm_conv_update_channel(
          slots.src(s).row<const float>(c), *x.at<const float>(c, s), cv.w + c * cv.k, cv.k,
          bias_of(cv, c), cv.act, slots.dst(s).row<float>(c));
    }
  }
  return Status();
}

}  // namespace folio::cpu
