// One token of the reference recurrences, shared by the multi-token
// references (gated_delta_net.cc, ssm_scan.cc) and their fused one-token
// decode forms (gated_delta_net_update.cc, ssm_scan_update.cc), so the fused
// ops are bit-identical to gather -> op -> scatter by construction. Each
// works on a local copy of one (sequence, head) state that the caller loads
// and stores. Include only from reference translation units (and the
// blocked gated DeltaNet driver, whose scalar parts are the reference's):
// this header switches fp contraction off (quant/strict_fp.h) for its
// functions and for the rest of the including file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/drivers/ssm_scan_step.h"
#include "backend/op.h"
#include "quant/strict_fp.h"  // last: no a*b+c contraction in the reference

namespace folio::recurrent_ref {

// out = x / max(sqrt(sum x^2), eps), in double and rounded once, operation
// for operation as the kL2Norm reference (ref/norm.cc).
inline void l2_normalise(const float* x, float* out, int64_t n, float eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) * inv);
}

// A gated DeltaNet token's q and k [sk] as the recurrence uses them: qn =
// q (L2-normalised if p.l2_norm_qk) times p.scale, kn = k (L2-normalised if
// asked). Also the blocked SIMD driver's (drivers/gdn_blocked.cc), which
// does these scalar parts exactly as the reference.
inline void gdn_normalise_qk(const GatedDeltaNetParams& p, int64_t sk, const float* qt,
                             const float* kt, float* qn, float* kn) {
  if (p.l2_norm_qk) {
    l2_normalise(qt, qn, sk, p.eps);
    l2_normalise(kt, kn, sk, p.eps);
  } else {
    std::copy(qt, qt + sk, qn);
    std::copy(kt, kt + sk, kn);
  }
  for (int64_t i = 0; i < sk; ++i) qn[i] *= p.scale;
}

// One gated DeltaNet token (the formula in gated_delta_net.cc) on st [sv rows
// of sk]: qt, kt [sk], vt [sv], log decay g, beta; writes out [sv]. qn and kn
// are scratch [sk] (the normalised, scaled q and the normalised k).
inline void gdn_token(const GatedDeltaNetParams& p, int64_t sk, int64_t sv, const float* qt,
                      const float* kt, const float* vt, float g, float beta, float* st, float* qn,
                      float* kn, float* out) {
  gdn_normalise_qk(p, sk, qt, kt, qn, kn);
  const float decay = std::exp(g);
  for (int64_t i = 0; i < sk * sv; ++i) st[i] *= decay;
  for (int64_t r = 0; r < sv; ++r) {
    float* row = &st[r * sk];
    float m = 0.0f;
    for (int64_t i = 0; i < sk; ++i) m += row[i] * kn[i];
    const float d = beta * (vt[r] - m);
    for (int64_t i = 0; i < sk; ++i) row[i] += d * kn[i];
  }
  for (int64_t r = 0; r < sv; ++r) {
    const float* row = &st[r * sk];
    float acc = 0.0f;
    for (int64_t i = 0; i < sk; ++i) acc += row[i] * qn[i];
    out[r] = acc;
  }
}

// One Mamba-2 selective-scan token (the formula in ssm_scan.cc) on st
// [p_dim rows of n]: time step dt, head decay a = A[h], xt [p_dim], bt and
// ct [n]; writes yt [p_dim].
inline void ssm_scan_token(int64_t n, int64_t p_dim, float dt, float a, const float* xt,
                           const float* bt, const float* ct, float* st, float* yt) {
  const float sp = cpu::ssm_scan_softplus(dt);
  const float da = cpu::ssm_scan_decay(sp, a);
  for (int64_t r = 0; r < p_dim; ++r) {
    float* row = &st[r * n];
    const float xdt = xt[r] * sp;
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      row[i] = row[i] * da + bt[i] * xdt;
      acc += row[i] * ct[i];
    }
    yt[r] = acc;
  }
}

}  // namespace folio::recurrent_ref
