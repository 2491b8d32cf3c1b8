// kRope (backend/cpu/ref/rope.cc's formulas in float). Work items per row
// (head h, token t, i3) of x: one per rotary pair i < n_dims / 2, then one
// per pass-through dim j >= n_dims; one thread per work item. Each item
// reads its elements before writing them, so dst may alias x.
//
// The host folds everything about pair i except the position into
// coef[i] = freq_base^(-2i / n_dims) * (freq_scale * (1 - mix_i) + mix_i)
// (computed in double; mix_i is the YaRN ramp times ext_factor), so
// theta = pos * coef[i] / freq_factor[i]; cos and sin are scaled by mscale.
// theta is reduced to [-pi, pi] before cos / sin (GPU sin / cos are only
// accurate there); rope_math.glsl holds the arithmetic. Spec 0: mode (kRopeMode*);
// spec 1: freq factors present.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "rope_interface.h"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint MODE = kRopeModeNormal;
layout(constant_id = 1) const bool HAS_FF = false;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_ROPE_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer P { int pos_i[]; };
layout(std430, binding = 4) readonly buffer F { float ff_f[]; };
layout(std430, binding = 5) writeonly buffer D { float d_f[]; };

#include "rope_math.glsl"

void main() {
  const uint half_dims = p.n_dims / 2u;
  const uint per_row = half_dims + (p.x.ne0 - p.n_dims);
  const uint w = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n_tok = p.x.ne2;
  if (w >= per_row * p.x.ne1 * n_tok * p.x.ne3) return;
  const uint k = w % per_row;
  const uvec3 r = unflatten_rows(w / per_row, p.x.ne1, n_tok);
  const uint xo = row_off(p.x, r.x, r.y, r.z);
  const uint dof = row_off(p.d, r.x, r.y, r.z);

  if (k >= half_dims) {  // pass-through dim
    const uint j = p.n_dims + (k - half_dims);
    d_f[(dof + j * p.d.nb0) >> 2] = x_f[(xo + j * p.x.nb0) >> 2];
    return;
  }
  const uint i = k;
  const uint ia = MODE == kRopeModeNormal ? 2u * i : i;
  const uint ib = MODE == kRopeModeNormal ? 2u * i + 1u : i + half_dims;
  const float x0 = x_f[(xo + ia * p.x.nb0) >> 2];
  const float x1 = x_f[(xo + ib * p.x.nb0) >> 2];
  float d0, d1;
  rope_pair(i, r.y, n_tok, x0, x1, d0, d1);
  d_f[(dof + ia * p.d.nb0) >> 2] = d0;
  d_f[(dof + ib * p.d.nb0) >> 2] = d1;
}
