// Reference fused gated DeltaNet decode step (kGatedDeltaNetUpdate, tier
// kRef): one token per sequence, the prior state read from a state-pool slot
// by id, the final state written in place to the sequence's destination slot.
//
//   q, k  [S_k, H_k, 1, n_seq]      v [S_v, H_v, 1, n_seq]
//   g, beta [H_v, 1, n_seq]         pool [S_k, S_v, H_v, n_slots]
//   ids, dst_slots I32 [n_seq]      out [S_v, H_v, 1, n_seq]
// Per (sequence, value head) the head's state is loaded into a local copy
// before anything is written (so an in-place slot is safe), then updated
// operation for operation by the token step the kGatedDeltaNet reference
// uses (recurrent_step.h): L2 norms in double rounded once,
// q scaled in f32, S *= exp(g), per row m = sum_i S k (ascending i, from
// 0.0f), d = beta (v - m), S += d k, out = sum_i S q. That makes the fused op
// bit-identical to gather -> gated_delta_net -> scatter. The identity /
// scratch rule and the id checks live in drivers/state_slots.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/recurrent_step.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::fused_ref {

Status gated_delta_net_update_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const auto& p = op.p<GatedDeltaNetParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];  // see above
  const TensorView &g = op.src[3], &beta = op.src[4];
  const TensorView& out = op.dst;
  const int64_t sk = q.ne[0], hk = q.ne[1];
  const int64_t sv = v.ne[0], hv = v.ne[1];
  const int64_t ratio = hv / hk;
  const size_t row_bytes = static_cast<size_t>(sk) * sizeof(float);
  FOLIO_ASSIGN_OR_RETURN(cpu::StateSlots slots, cpu::StateSlots::prepare(op, 5, 3));

  std::vector<float> st(static_cast<size_t>(sk * sv));  // S[v, i] at v * sk + i
  std::vector<float> qn(static_cast<size_t>(sk)), kn(static_cast<size_t>(sk));
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);  // [S_k, S_v, H_v, 1]
    for (int64_t h = 0; h < hv; ++h) {
      const int64_t kh = p.head_map == HeadMap::kDiv ? h / ratio : h % hk;
      for (int64_t r = 0; r < sv; ++r)
        std::memcpy(&st[r * sk], from.row<const float>(r, h), row_bytes);
      recurrent_ref::gdn_token(p, sk, sv, q.row<const float>(kh, 0, s),
                               k.row<const float>(kh, 0, s), v.row<const float>(h, 0, s),
                               *g.at<const float>(h, 0, s), *beta.at<const float>(h, 0, s),
                               st.data(), qn.data(), kn.data(), out.row<float>(h, 0, s));
      for (int64_t r = 0; r < sv; ++r) std::memcpy(to.row<float>(r, h), &st[r * sk], row_bytes);
    }
  }
  return Status();
}

}  // namespace folio::fused_ref
