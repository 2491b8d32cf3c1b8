// kMoeSum: dst[i, t] = e[i, 0, t] w[0, t] + e[i, 1, t] w[1, t] + ..., one
// invocation per element of dst. Each product is rounded (`precise`: no
// fused multiply-add) and the sum runs left to right, so the result is
// mul.comp's products summed by add.comp in rank order, bit for bit.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "moe_interface.h"

layout(local_size_x = kElementWorkgroup) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MOE_SUM_PARAMS } p;
layout(std430, binding = 2) readonly buffer Ex { float e_f[]; };
layout(std430, binding = 3) readonly buffer Wt { float w_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  if (i >= p.d.ne0 * p.d.ne1) return;
  const uint i0 = i % p.d.ne0;
  const uint t = i / p.d.ne0;
  const uint k = p.e.ne1;
  precise float acc = e_f[elem_off(p.e, i0, 0u, t, 0u) >> 2] * w_f[elem_off(p.w, 0u, 0u, t, 0u) >> 2];
  for (uint u = 1u; u < k; ++u) {
    precise float prod = e_f[elem_off(p.e, i0, u, t, 0u) >> 2] * w_f[elem_off(p.w, 0u, u, t, 0u) >> 2];
    acc = acc + prod;
  }
  d_f[elem_off(p.d, i0, t, 0u, 0u) >> 2] = acc;
}
