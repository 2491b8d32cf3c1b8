#include "backend/cpu/drivers/gdn_blocked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/drivers/parallel.h"
#include "backend/cpu/drivers/state_slots.h"
// Last: the reference's q / k normalisation (gdn_normalise_qk), and fp
// contraction off for the rest of this file (quant/strict_fp.h): the scalar
// parts must round like the reference.
#include "backend/cpu/ref/recurrent_step.h"

namespace folio::cpu {

Status run_gdn_blocked(const Op& op, const KernelContext& ctx, int lanes, int max_blocks,
                       GdnRowsFn fn) {
  const auto& p = op.p<GatedDeltaNetParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];  // [S, H, T, n_seq]
  const TensorView &g = op.src[3], &beta = op.src[4];               // [H_v, T, n_seq]
  const TensorView& out = op.dst;                                   // [S_v, H_v, T, n_seq]
  const int64_t sk = q.ne[0], hk = q.ne[1], n_t = q.ne[2], n_seq = q.ne[3];
  const int64_t sv = v.ne[0], hv = v.ne[1];
  const int64_t ratio = hv / hk;

  // Prior and new state of every sequence: views [S_k, S_v, H_v, 1].
  std::vector<TensorView> from, to;
  StateSlots slots;
  if (op.kind == OpKind::kGatedDeltaNetUpdate) {
    FOLIO_ASSIGN_OR_RETURN(slots, StateSlots::prepare(op, 5, 3));
    for (int64_t s = 0; s < n_seq; ++s) {
      from.push_back(slots.src(s));
      to.push_back(slots.dst(s));
    }
  } else {
    const TensorView &state = op.src[5], &state_out = op.dst2;  // the same view or disjoint
    for (int64_t s = 0; s < n_seq; ++s) {
      from.push_back(state_sequence(state, s));
      to.push_back(state_sequence(state_out, s));
    }
  }

  // Normalised (and scaled) q, k per (sequence, token, key head): [.., 2, S_k].
  std::vector<float> qk(static_cast<size_t>(n_seq * n_t * hk * 2 * sk));
  const int64_t n_qk = n_seq * n_t * hk;
  run_range(ctx, n_qk, n_qk * sk >= 4096, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t kh = u % hk, t = (u / hk) % n_t, s = u / (hk * n_t);
      float* qn = &qk[static_cast<size_t>(u * 2 * sk)];
      float* kn = qn + sk;
      const float* qt = q.row<const float>(kh, t, s);
      const float* kt = k.row<const float>(kh, t, s);
      recurrent_ref::gdn_normalise_qk(p, sk, qt, kt, qn, kn);
    }
  });

  // Work unit: a group of `blocks` blocks of one head of one sequence.
  const int64_t n_blocks = sv / lanes;
  const int blocks = max_blocks >= 4 && n_blocks % 4 == 0 ? 4 : n_blocks % 2 == 0 ? 2 : 1;
  const int64_t n_groups = n_blocks / blocks;
  const int64_t n_units = n_seq * hv * n_groups;
  run_range(ctx, n_units, n_units > 1, [&](int64_t u0, int64_t u1) {
    std::vector<float> tbuf(static_cast<size_t>(sk * lanes * blocks) + 16);
    std::vector<float> decay(static_cast<size_t>(n_t)), bet(static_cast<size_t>(n_t));
    float* tb = tbuf.data() +
                (16 - reinterpret_cast<uintptr_t>(tbuf.data()) / 4 % 16) % 16;  // 64-byte aligned
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t grp = u % n_groups, h = (u / n_groups) % hv, s = u / (n_groups * hv);
      const int64_t kh = p.head_map == HeadMap::kDiv ? h / ratio : h % hk;
      const int64_t row0 = grp * blocks * lanes;
      for (int64_t t = 0; t < n_t; ++t) {
        decay[static_cast<size_t>(t)] = std::exp(*g.at<const float>(h, t, s));
        bet[static_cast<size_t>(t)] = *beta.at<const float>(h, t, s);
      }
      const TensorView &fs = from[static_cast<size_t>(s)], &ts = to[static_cast<size_t>(s)];
      GdnRows r;
      r.src = fs.row<const char>(row0, h);
      r.src_stride = fs.nb[1];
      r.dst = ts.row<char>(row0, h);
      r.dst_stride = ts.nb[1];
      r.sk = sk;
      r.n_t = n_t;
      r.qk = &qk[static_cast<size_t>((s * n_t * hk + kh) * 2 * sk)];
      r.qk_stride = hk * 2 * sk;
      r.decay = decay.data();
      r.beta = bet.data();
      r.v = reinterpret_cast<const char*>(v.row<const float>(h, 0, s) + row0);
      r.v_stride = v.nb[2];
      r.out = reinterpret_cast<char*>(out.row<float>(h, 0, s) + row0);
      r.out_stride = out.nb[2];
      r.tbuf = tb;
      r.blocks = blocks;
      fn(r);
    }
  });
  return Status();
}

}  // namespace folio::cpu
