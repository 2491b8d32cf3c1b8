// Reference fused gated DeltaNet decode step (kGatedDeltaNetUpdate, tier
// kRef): one token per sequence, the prior state read from a state-pool slot
// by id, the final state written in place to the sequence's destination slot.
//
//   q, k  [S_k, H_k, 1, n_seq]      v [S_v, H_v, 1, n_seq]
//   g, beta [H_v, 1, n_seq]         pool [S_k, S_v, H_v, n_slots]
//   ids, dst_slots I32 [n_seq]      out [S_v, H_v, 1, n_seq]
// Per (sequence, value head) the head's state is loaded into a local copy
// before anything is written (so an in-place slot is safe), then updated
// operation for operation as the kGatedDeltaNet reference
// (gated_delta_net.cc) does for one token: L2 norms in double rounded once,
// q scaled in f32, S *= exp(g), per row m = sum_i S k (ascending i, from
// 0.0f), d = beta (v - m), S += d k, out = sum_i S q. That makes the fused op
// bit-identical to gather -> gated_delta_net -> scatter. The identity /
// scratch rule and the id checks live in drivers/state_slots.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/state_slots.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::fused_ref {
namespace {

// out = x / max(sqrt(sum x^2), eps), in double and rounded once, exactly as
// the kL2Norm and kGatedDeltaNet references.
void l2_normalise(const float* x, float* out, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) * inv);
}

}  // namespace

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
      const float* qt = q.row<const float>(kh, 0, s);
      const float* kt = k.row<const float>(kh, 0, s);
      const float* vt = v.row<const float>(h, 0, s);
      if (p.l2_norm_qk) {
        l2_normalise(qt, qn.data(), sk, p.eps);
        l2_normalise(kt, kn.data(), sk, p.eps);
      } else {
        std::copy(qt, qt + sk, qn.begin());
        std::copy(kt, kt + sk, kn.begin());
      }
      for (float& x : qn) x *= p.scale;
      const float decay = std::exp(*g.at<const float>(h, 0, s));
      const float b = *beta.at<const float>(h, 0, s);
      for (float& x : st) x *= decay;
      for (int64_t r = 0; r < sv; ++r) {
        float* row = &st[r * sk];
        float m = 0.0f;
        for (int64_t i = 0; i < sk; ++i) m += row[i] * kn[i];
        const float d = b * (vt[r] - m);
        for (int64_t i = 0; i < sk; ++i) row[i] += d * kn[i];
      }
      float* o = out.row<float>(h, 0, s);
      for (int64_t r = 0; r < sv; ++r) {
        const float* row = &st[r * sk];
        float acc = 0.0f;
        for (int64_t i = 0; i < sk; ++i) acc += row[i] * qn[i];
        o[r] = acc;
      }
      for (int64_t r = 0; r < sv; ++r) std::memcpy(to.row<float>(r, h), &st[r * sk], row_bytes);
    }
  }
  return Status();
}

}  // namespace folio::fused_ref
