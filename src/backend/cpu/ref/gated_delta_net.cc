// Reference gated DeltaNet recurrence (kGatedDeltaNet, tier kRef), plain
// token-by-token form; the definition the chunked prefill form and the fused
// in-place decode ops are checked against.
//
//   q, k   [S_k, H_k, T, n_seq]      v [S_v, H_v, T, n_seq]
//   g      [H_v, T, n_seq] (log decay)   beta [H_v, T, n_seq]
//   state  [S_k, S_v, H_v, n_seq]: row v of head h is S[v, 0..S_k)
//   out    [S_v, H_v, T, n_seq]      state_out like state (may alias it)
//
// For each (sequence, value head h) the state S (S_v x S_k) is loaded into a
// local copy first, so state_out may alias state_in; key head kh = h / (H_v /
// H_k) (HeadMap::kDiv) or h % H_k (kMod). Per token, all in f32 with sums
// in ascending index order:
//   q, k <- l2_norm(x) when l2_norm_qk: x / max(sqrt(sum x^2), eps) computed
//           exactly as the kL2Norm reference does (double, rounded once), so
//           l2_norm ops followed by this op with l2_norm_qk = false give the
//           same bits; then q <- q * scale (f32)
//   S[v, i] *= exp(g)                         (whole state first)
//   m[v] = sum_i S[v, i] k[i];  d[v] = beta * (v_t[v] - m[v]);
//   S[v, i] += d[v] * k[i]                    (row v: m, d, update)
//   out[v] = sum_i S[v, i] q[i]               (after every row is updated)
// Rows are independent, so the per-row interleaving of the middle step is
// the same arithmetic as computing every m first.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/recurrent_step.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::recurrent_ref {

Status gated_delta_net_ref(const Op& op, const KernelContext& ctx) {
  (void)ctx;
  const auto& p = op.p<GatedDeltaNetParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];  // see above
  const TensorView &g = op.src[3], &beta = op.src[4], &state = op.src[5];
  const TensorView &out = op.dst, &state_out = op.dst2;
  // state_out is state itself or disjoint from it (validate_op).
  const int64_t sk = q.ne[0], hk = q.ne[1], n_t = q.ne[2], n_seq = q.ne[3];
  const int64_t sv = v.ne[0], hv = v.ne[1];
  const int64_t ratio = hv / hk;
  const size_t row_bytes = static_cast<size_t>(sk) * sizeof(float);

  std::vector<float> st(static_cast<size_t>(sk * sv));  // S[v, i] at v * sk + i
  std::vector<float> qn(static_cast<size_t>(sk)), kn(static_cast<size_t>(sk));
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t h = 0; h < hv; ++h) {
      const int64_t kh = p.head_map == HeadMap::kDiv ? h / ratio : h % hk;
      for (int64_t r = 0; r < sv; ++r)
        std::memcpy(&st[r * sk], state.row<const float>(r, h, s), row_bytes);
      for (int64_t t = 0; t < n_t; ++t) {
        gdn_token(p, sk, sv, q.row<const float>(kh, t, s), k.row<const float>(kh, t, s),
                  v.row<const float>(h, t, s), *g.at<const float>(h, t, s),
                  *beta.at<const float>(h, t, s), st.data(), qn.data(), kn.data(),
                  out.row<float>(h, t, s));
      }
      for (int64_t r = 0; r < sv; ++r)
        std::memcpy(state_out.row<float>(r, h, s), &st[r * sk], row_bytes);
    }
  }
  return Status();
}

}  // namespace folio::recurrent_ref
