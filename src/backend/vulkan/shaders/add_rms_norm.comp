// kAddRmsNorm: one workgroup per row. Pass 1: each invocation forms
// s = a + b for elements tid, tid + B, ... (B = workgroup size, spec 0),
// writes s to dst2 and sums s^2; the workgroup adds the partial sums. Pass 2:
// the same invocation reads its s back from dst2 (the rounded sum, as the
// reference normalises) and writes s * inv [* w] to dst. Every element is
// read and written by one invocation only, reads first, so dst and dst2 may
// alias a or b. Spec 1: multiply by the weight w (flat element i).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "row_norm.glsl"
#include "norm_interface.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool HAS_W = false;

#include "workgroup_sum.glsl"

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_ADD_RMS_NORM_PARAMS } p;
layout(std430, binding = 2) readonly buffer A { float a_f[]; };
layout(std430, binding = 3) readonly buffer Bb { float b_f[]; };
layout(std430, binding = 4) readonly buffer W { float w_f[]; };
// binding 5: rms_norm_add_rms_norm's wb, unread here
layout(std430, binding = 6) buffer D { float d_f[]; };
layout(std430, binding = 7) buffer D2 { float d2_f[]; };

void main() {
  const uint row = group_index();
  if (row >= p.a.ne1 * p.a.ne2 * p.a.ne3) return;
  const uvec3 r = unflatten_rows(row, p.a.ne1, p.a.ne2);
  const uint ao = row_off(p.a, r.x, r.y, r.z);
  const uint bo = row_off(p.b, r.x, r.y, r.z);
  const uint dof = row_off(p.d, r.x, r.y, r.z);
  const uint d2o = row_off(p.d2, r.x, r.y, r.z);
  const uint n = p.a.ne0;
  const uint B = gl_WorkGroupSize.x;

  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    precise float s = a_f[(ao + i * p.a.nb0) >> 2] + b_f[(bo + i * p.b.nb0) >> 2];
    d2_f[(d2o + i * p.d2.nb0) >> 2] = s;
    ss = add_square(ss, s);
  }
  ss = workgroup_sum(ss);
  const float inv = rms_inv(ss, n, p.eps);

  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    const float v = d2_f[(d2o + i * p.d2.nb0) >> 2];
    const float y = HAS_W ? scale_elem_w(v, inv, w_f[flat_elem_off(p.w, i) >> 2])
                          : scale_elem(v, inv);
    d_f[(dof + i * p.d.nb0) >> 2] = y;
  }
}
