// Reference depthwise causal convolution (kSsmConv, tier kRef).
//
//   x    [K - 1 + T, channels, n_seq]  per channel: K-1 cached taps, then T inputs
//   w    [K, channels]
//   bias [channels] (optional)
//   dst  [channels, T, n_seq]
//   dst[c, t, s] = act(((0.0f + x[t, c, s] * w[0, c]) + x[t + 1, c, s] * w[1, c]) + ...
//                      + bias[c])
// in f32, taps summed in ascending j starting from 0.0f, the bias added last
// (+0.0f when absent), act = SiLU(x) = x / (1 + exp(-x)) when params.silu.
// The fused in-place conv update ops must reproduce exactly this order.
#include <cmath>

#include "backend/cpu/kernel.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::recurrent_ref {

Status ssm_conv_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const TensorView& x = op.src[0];     // [K - 1 + T, channels, n_seq]
  const TensorView& w = op.src[1];     // [K, channels]
  const TensorView& bias = op.src[2];  // [channels] or empty
  const TensorView& dst = op.dst;      // [channels, T, n_seq]
  const bool silu = op.p<SsmConvParams>().silu;
  const int64_t k = w.ne[0], channels = w.ne[1];
  const int64_t n_t = dst.ne[1], n_seq = dst.ne[2];
  // The bias holds `channels` values in any shape; read it flat.
  auto bias_at = [&](int64_t c) -> float {
    const int64_t i0 = c % bias.ne[0];
    const int64_t i1 = (c / bias.ne[0]) % bias.ne[1];
    const int64_t i2 = (c / (bias.ne[0] * bias.ne[1])) % bias.ne[2];
    const int64_t i3 = c / (bias.ne[0] * bias.ne[1] * bias.ne[2]);
    return *bias.at<const float>(i0, i1, i2, i3);
  };
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t t = 0; t < n_t; ++t) {
      for (int64_t c = 0; c < channels; ++c) {
        const float* xc = x.row<const float>(c, s);  // time is dim 0
        const float* wc = w.row<const float>(c);
        float sum = 0.0f;
        for (int64_t j = 0; j < k; ++j) sum += xc[t + j] * wc[j];
        sum += bias.empty() ? 0.0f : bias_at(c);
        if (silu) sum = sum / (1.0f + std::exp(-sum));
        *dst.at<float>(c, t, s) = sum;
      }
    }
  }
  return Status();
}

}  // namespace folio::recurrent_ref
