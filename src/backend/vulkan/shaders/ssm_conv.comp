// kSsmConv: dst[c, t, s] = act(sum_j x[t + j, c, s] * w[j, c] + bias[c]),
// one invocation per output element (channels fastest, so the writes and the
// weight reads of neighbouring invocations are adjacent). The arithmetic is
// ssm_conv.glsl's, shared with ssm_conv_update.comp.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "recurrent_interface.h"
#include "flat_index.glsl"
#include "ssm_conv.glsl"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint K = 4;  // kernel width

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SSM_CONV_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer W { float w_f[]; };
layout(std430, binding = 4) readonly buffer B { float b_f[]; };
layout(std430, binding = 5) writeonly buffer D { float d_f[]; };

void main() {
  const Tensor d = p.d;
  const uint n_c = d.ne0, n_t = d.ne1;
  const uint e = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  if (e >= n_c * n_t * d.ne2) return;
  const uint c = e % n_c;
  const uint t = (e / n_c) % n_t;
  const uint s = e / (n_c * n_t);
  const Tensor x = p.x;
  const Tensor w = p.w;
  float acc = 0.0;
  for (uint j = 0u; j < K; ++j) {
    acc = conv_tap(acc, x_f[elem_off(x, t + j, c, s, 0u) >> 2], w_f[elem_off(w, j, c, 0u, 0u) >> 2]);
  }
  const float b = p.has_bias != 0u ? b_f[flat_elem_off(p.bias, c) >> 2] : 0.0;
  d_f[elem_off(d, c, t, s, 0u) >> 2] = conv_finish(acc, b, p.silu != 0u);
}
