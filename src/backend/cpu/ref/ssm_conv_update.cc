// Reference fused conv update (kSsmConvUpdate, tier kRef): one new input per
// sequence, the K-1 cached taps read from a state-pool slot by id and the
// shifted taps written back to the sequence's destination slot.
//
//   x     [channels, n_seq]            w [K, channels]   bias [channels] (optional)
//   pool  [K - 1, channels, n_slots]   taps per channel, oldest first
//   ids, dst_slots I32 [n_seq]         dst [channels, n_seq]
// Per channel the window win = [taps..., x] is assembled in a local array
// (so an in-place slot is fully read before it is written), then
//   dst = act(((0.0f + win[0] * w[0]) + win[1] * w[1]) + ... + bias)
// in f32, operation for operation as the kSsmConv reference (ssm_conv.cc):
// that makes the fused op bit-identical to gather -> ssm_conv -> scatter.
// The identity / scratch rule and the id checks live in drivers/state_slots.
#include <cmath>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::fused_ref {

Status ssm_conv_update_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const TensorView& x = op.src[0];     // [channels, n_seq]
  const TensorView& w = op.src[1];     // [K, channels]
  const TensorView& bias = op.src[2];  // [channels] or empty
  const TensorView& dst = op.dst;      // [channels, n_seq]
  const bool silu = op.p<SsmConvParams>().silu;
  const int64_t k = w.ne[0], channels = w.ne[1];
  FOLIO_ASSIGN_OR_RETURN(cpu::StateSlots slots, cpu::StateSlots::prepare(op, 3, 2));
  auto bias_at = [&](int64_t c) -> float {  // `channels` values in any shape, read flat
    const int64_t i0 = c % bias.ne[0];
    const int64_t i1 = (c / bias.ne[0]) % bias.ne[1];
    const int64_t i2 = (c / (bias.ne[0] * bias.ne[1])) % bias.ne[2];
    const int64_t i3 = c / (bias.ne[0] * bias.ne[1] * bias.ne[2]);
    return *bias.at<const float>(i0, i1, i2, i3);
  };
  std::vector<float> win(static_cast<size_t>(k));
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    for (int64_t c = 0; c < channels; ++c) {
      const float* taps = slots.src(s).row<const float>(c);  // [K - 1]
      for (int64_t j = 0; j + 1 < k; ++j) win[static_cast<size_t>(j)] = taps[j];
      win[static_cast<size_t>(k - 1)] = *x.at<const float>(c, s);
      const float* wc = w.row<const float>(c);
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) sum += win[static_cast<size_t>(j)] * wc[j];
      sum += bias.empty() ? 0.0f : bias_at(c);
      if (silu) sum = sum / (1.0f + std::exp(-sum));
      *dst.at<float>(c, s) = sum;
      float* out_taps = slots.dst(s).row<float>(c);
      for (int64_t j = 0; j + 1 < k; ++j) out_taps[j] = win[static_cast<size_t>(j + 1)];
    }
  }
  return Status();
}

}  // namespace folio::fused_ref
