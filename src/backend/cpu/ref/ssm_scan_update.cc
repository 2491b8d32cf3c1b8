// Reference fused Mamba-2 decode step (kSsmScanUpdate, tier kRef): one token
// per sequence, the prior state read from a state-pool slot by id, the new
// state written in place to the sequence's destination slot.
//
//   x      [P, H, 1, n_seq]       dt [H, 1, n_seq]      A [H] (read flat)
//   B, C   [N, G, 1, n_seq]       head h reads group h / (H / G)
//   pool   [N, P, H, n_slots]: row p of head h of a slot holds S[p, 0..N)
//   ids, dst_slots I32 [n_seq]    y [P, H, 1, n_seq]
// Per (sequence, head) the head's rows are loaded into a local copy before
// anything is written (so an in-place slot is safe), then updated operation
// for operation by the token step the kSsmScan reference uses (recurrent_step.h):
//   sp = softplus(dt);  dA = exp(sp * A[h]);
//   per row p: xdt = x[p] * sp; acc = 0.0f; for i = 0 .. N-1:
//     S[p, i] = S[p, i] * dA + B[i] * xdt;  acc += S[p, i] * C[i];
//   y[p] = acc.
// That makes the fused op bit-identical to gather -> ssm_scan -> scatter.
// The identity / scratch rule and the id checks live in drivers/state_slots.
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/recurrent_step.h"
#include "backend/cpu/drivers/ssm_scan_step.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::fused_ref {

Status ssm_scan_update_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const TensorView &x = op.src[0], &dt = op.src[1], &a = op.src[2];  // see above
  const TensorView &b = op.src[3], &c = op.src[4];
  const TensorView& y = op.dst;
  const int64_t p_dim = x.ne[0], n_head = x.ne[1];
  const int64_t n = op.src[5].ne[0], heads_per_group = n_head / b.ne[1];
  const size_t row_bytes = static_cast<size_t>(n) * sizeof(float);
  FOLIO_ASSIGN_OR_RETURN(cpu::StateSlots slots, cpu::StateSlots::prepare(op, 5, 3));

  std::vector<float> st(static_cast<size_t>(n * p_dim));  // S[p, i] at p * n + i
  for (int64_t s = 0; s < slots.n_seq(); ++s) {
    const TensorView &from = slots.src(s), &to = slots.dst(s);  // [N, P, H, 1]
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / heads_per_group;
      for (int64_t r = 0; r < p_dim; ++r)
        std::memcpy(&st[r * n], from.row<const float>(r, h), row_bytes);
      recurrent_ref::ssm_scan_token(n, p_dim, *dt.at<const float>(h, 0, s), cpu::ssm_scan_a(a, h),
                                    x.row<const float>(h, 0, s), b.row<const float>(g, 0, s),
                                    c.row<const float>(g, 0, s), st.data(), y.row<float>(h, 0, s));
      for (int64_t r = 0; r < p_dim; ++r) std::memcpy(to.row<float>(r, h), &st[r * n], row_bytes);
    }
  }
  return Status();
}

}  // namespace folio::fused_ref
