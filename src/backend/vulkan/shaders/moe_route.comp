// kMoeRoute: one workgroup of 256 invocations per token; invocation t owns
// experts t, t + 256, ... of the row (X <= kMoeMaxExperts; moe_interface.h
// holds the bounds and gating codes). In order, each stage
// separated by a barrier:
//   p = softmax (max and sum as soft_max.comp's fixed tree), sigmoid
//       1 / (1 + exp(-l)), or the logits; s = p + bias, in shared memory;
//   groups (n_groups > 1): invocation g < n_groups scores its group (the
//       sum of its two largest s, scanned in index order as the reference
//       does), then counts the groups ranked before it (higher score, or
//       equal and lower index): groups ranked below n_groups_used drop
//       their experts to -inf;
//   top-k: each expert counts the experts ordered before it (kTopK's order:
//       larger value, or equal and lower index; NaN after every number),
//       and one whose rank is below k writes itself to rank's slot: the
//       reference's stable order exactly, for these values;
//   weights (invocation 0): gathered p, then the softmax of the chosen
//       logits (kMoeGatingSoftmaxWeight) or the renormalisation (sum in
//       rank order, clamped below at 2^-14), then the scale.
// Everything is float: the op's probabilities are the reference's up to
// this device's exp and division (the parity harness bounds the weights'
// NMSE; the ids agree where no two selection values lie that close).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "moe_interface.h"

layout(local_size_x = kElementWorkgroup) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MOE_ROUTE_PARAMS } p;
layout(std430, binding = 2) readonly buffer L { float l_f[]; };
layout(std430, binding = 3) readonly buffer B { float b_f[]; };
layout(std430, binding = 4) writeonly buffer D { int d_i[]; };
layout(std430, binding = 5) writeonly buffer W { float w_f[]; };

shared float s_p[kMoeMaxExperts];    // probabilities (the weights' source)
shared float s_sel[kMoeMaxExperts];  // selection values (p + bias, masked by group)
shared float s_red[kElementWorkgroup];
shared float s_gscore[kMoeMaxGroups];
shared bool s_keep[kMoeMaxGroups];
shared uint s_chosen[kMoeMaxChosen];

const float NEG_INF = -1.0 / 0.0;

// Value a orders before value b (index ia < ib breaks ties): kTopK's order.
bool before(float a, uint ia, float b, uint ib) {
  if (isnan(a)) return isnan(b) && ia < ib;
  if (isnan(b)) return true;
  return a > b || (a == b && ia < ib);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint t = group_index();
  if (t >= p.l.ne1) return;
  const uint n = p.l.ne0;
  const uint lrow = row_off(p.l, t, 0u, 0u);
  const uint l_nb0 = p.l.nb0;
  const uint gating = p.gating;

  // Probabilities.
  if (gating == kMoeGatingSoftmax) {
    float mx = NEG_INF;
    for (uint j = tid; j < n; j += kElementWorkgroup) mx = max(mx, l_f[(lrow + j * l_nb0) >> 2]);
    s_red[tid] = mx;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
      if (tid < s) s_red[tid] = max(s_red[tid], s_red[tid + s]);
      barrier();
    }
    mx = s_red[0];
    barrier();  // s_red[0] is read before the sums overwrite it
    float sum = 0.0;
    for (uint j = tid; j < n; j += kElementWorkgroup) {
      const float v = l_f[(lrow + j * l_nb0) >> 2];
      const float e = (v == NEG_INF || mx == NEG_INF) ? 0.0 : exp(v - mx);
      s_p[j] = e;
      sum += e;
    }
    s_red[tid] = sum;
    barrier();
    for (uint s = 128u; s > 0u; s >>= 1) {
      if (tid < s) s_red[tid] += s_red[tid + s];
      barrier();
    }
    sum = s_red[0];
    for (uint j = tid; j < n; j += kElementWorkgroup) s_p[j] = sum > 0.0 ? s_p[j] / sum : 0.0;
  } else {
    for (uint j = tid; j < n; j += kElementWorkgroup) {
      const float v = l_f[(lrow + j * l_nb0) >> 2];
      s_p[j] = gating == kMoeGatingSigmoid ? 1.0 / (1.0 + exp(-v)) : v;
    }
  }
  for (uint j = tid; j < n; j += kElementWorkgroup) {
    s_sel[j] = p.has_bias != 0u ? s_p[j] + b_f[(p.b.off + j * p.b.nb0) >> 2] : s_p[j];
  }
  barrier();

  // Expert groups.
  const uint n_groups = p.n_groups;
  if (n_groups > 1u) {
    const uint per = n / n_groups;
    if (tid < n_groups) {
      float a = NEG_INF, b2 = NEG_INF;
      for (uint j = tid * per; j < (tid + 1u) * per; ++j) {
        const float v = s_sel[j];
        if (v > a) {
          b2 = a;
          a = v;
        } else if (v > b2) {
          b2 = v;
        }
      }
      s_gscore[tid] = a + b2;
    }
    barrier();
    if (tid < n_groups) {
      const float mine = s_gscore[tid];
      uint rank = 0u;
      for (uint h = 0u; h < n_groups; ++h) {
        const float o = s_gscore[h];
        if (o > mine || (o == mine && h < tid)) ++rank;
      }
      s_keep[tid] = rank < p.n_groups_used;
    }
    barrier();
    for (uint j = tid; j < n; j += kElementWorkgroup) {
      if (!s_keep[j / per]) s_sel[j] = NEG_INF;
    }
    barrier();
  }

  // Top k by rank.
  const uint k = p.k;
  for (uint j = tid; j < n; j += kElementWorkgroup) {
    const float v = s_sel[j];
    uint rank = 0u;
    for (uint i = 0u; i < n && rank < k; ++i) {
      if (before(s_sel[i], i, v, j)) ++rank;
    }
    if (rank < k) s_chosen[rank] = j;
  }
  barrier();

  // Weights.
  if (tid != 0u) return;
  const uint drow = row_off(p.d, t, 0u, 0u);
  const uint wrow = row_off(p.w, t, 0u, 0u);
  float wt[kMoeMaxChosen];
  for (uint u = 0u; u < k; ++u) wt[u] = s_p[s_chosen[u]];
  if (gating == kMoeGatingSoftmaxWeight) {
    float mx = NEG_INF;
    for (uint u = 0u; u < k; ++u) mx = max(mx, wt[u]);
    float sum = 0.0;
    for (uint u = 0u; u < k; ++u) {
      wt[u] = (wt[u] == NEG_INF || mx == NEG_INF) ? 0.0 : exp(wt[u] - mx);
      sum += wt[u];
    }
    for (uint u = 0u; u < k; ++u) wt[u] = sum > 0.0 ? wt[u] / sum : 0.0;
  } else if (p.norm != 0u) {
    float sum = 0.0;
    for (uint u = 0u; u < k; ++u) sum += wt[u];
    const float dv = max(sum, 6.103515625e-5);
    for (uint u = 0u; u < k; ++u) wt[u] = wt[u] / dv;
  }
  const float scale = p.scale;
  for (uint u = 0u; u < k; ++u) {
    d_i[(drow + u * p.d.nb0) >> 2] = int(s_chosen[u]);
    w_f[(wrow + u * p.w.nb0) >> 2] = scale != 1.0 ? wt[u] * scale : wt[u];
  }
}
