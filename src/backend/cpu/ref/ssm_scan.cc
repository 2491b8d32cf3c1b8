// Reference Mamba-2 selective scan (kSsmScan, tier kRef): the definition the
// SIMD kernels are checked against, bit for bit.
//
//   x      [P, H, T, n_seq]       dt [H, T, n_seq]      A [H] (read flat)
//   B, C   [N, G, T, n_seq]       head h reads group h / (H / G)
//   state  [N, P, H, n_seq]: row p of head h holds S[p, 0..N)
//   y      [P, H, T, n_seq]       state_out like state (may alias it)
//
// Per (sequence, head) the state is loaded into a local copy first, so
// state_out may alias state_in. Per token, in f32 (drivers/ssm_scan_step.h
// for sp and dA):
//   sp = softplus(dt);  dA = exp(sp * A[h]);
//   per row p: xdt = x[p] * sp; acc = 0.0f; for i = 0 .. N-1:
//     S[p, i] = S[p, i] * dA + B[i] * xdt;  acc += S[p, i] * C[i];
//   y[p] = acc.
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/recurrent_step.h"
#include "backend/cpu/drivers/ssm_scan_step.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::recurrent_ref {

Status ssm_scan_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const TensorView &x = op.src[0], &dt = op.src[1], &a = op.src[2];
  const TensorView &b = op.src[3], &c = op.src[4], &state = op.src[5];
  const TensorView &y = op.dst, &state_out = op.dst2;
  const int64_t p_dim = x.ne[0], n_head = x.ne[1], n_t = x.ne[2], n_seq = x.ne[3];
  const int64_t n = state.ne[0], heads_per_group = n_head / b.ne[1];
  const size_t row_bytes = static_cast<size_t>(n) * sizeof(float);

  std::vector<float> st(static_cast<size_t>(n * p_dim));  // S[p, i] at p * n + i
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / heads_per_group;
      for (int64_t r = 0; r < p_dim; ++r)
        std::memcpy(&st[r * n], state.row<const float>(r, h, s), row_bytes);
      for (int64_t t = 0; t < n_t; ++t) {
        ssm_scan_token(n, p_dim, *dt.at<const float>(h, t, s), cpu::ssm_scan_a(a, h),
                       x.row<const float>(h, t, s), b.row<const float>(g, t, s),
                       c.row<const float>(g, t, s), st.data(), y.row<float>(h, t, s));
      }
      for (int64_t r = 0; r < p_dim; ++r)
        std::memcpy(state_out.row<float>(r, h, s), &st[r * n], row_bytes);
    }
  }
  return Status();
}

}  // namespace folio::recurrent_ref
