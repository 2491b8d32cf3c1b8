// kRmsNormAddRmsNorm: one workgroup per row, B invocations (spec 0: the
// row-norm workgroup of the row length, as norm.comp and add_rms_norm.comp
// take it). Pass 0 sums b^2 exactly as norm.comp does (same elements per
// invocation, same tree); pass 1 forms s = a + (b * inv_b) * wb with
// row_norm.glsl's rounding, writes s to dst2 and sums s^2; pass 2 reads s
// back and writes s * inv [* w] as add_rms_norm.comp does. So the op is
// rms_norm then add_rms_norm bit for bit. Every element is read and written
// by one invocation, reads first: dst2 may alias a. Spec 1: the next
// norm's weight w. Spec 2 NEXT false (kRmsNormAdd): no next norm, the op
// ends after pass 1 (bit for bit rms_norm then add).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "row_norm.glsl"
#include "norm_interface.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool HAS_W = false;
layout(constant_id = 2) const bool NEXT = true;

#include "workgroup_sum.glsl"

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_ADD_RMS_NORM_PARAMS } p;
layout(std430, binding = 2) readonly buffer A { float a_f[]; };
layout(std430, binding = 3) readonly buffer Bb { float b_f[]; };
layout(std430, binding = 4) readonly buffer W { float w_f[]; };
layout(std430, binding = 5) readonly buffer Wb { float wb_f[]; };
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

  float ssb = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    ssb = add_square(ssb, b_f[(bo + i * p.b.nb0) >> 2]);
  }
  ssb = workgroup_sum(ssb);
  const float inv_b = rms_inv(ssb, n, p.eps);

  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    const float bn = scale_elem_w(b_f[(bo + i * p.b.nb0) >> 2], inv_b, wb_f[flat_elem_off(p.wb, i) >> 2]);
    precise float s = a_f[(ao + i * p.a.nb0) >> 2] + bn;
    d2_f[(d2o + i * p.d2.nb0) >> 2] = s;
    ss = add_square(ss, s);
  }
  if (!NEXT) return;
  ss = workgroup_sum(ss);
  const float inv = rms_inv(ss, n, p.eps);

  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    const float v = d2_f[(d2o + i * p.d2.nb0) >> 2];
    const float y = HAS_W ? scale_elem_w(v, inv, w_f[flat_elem_off(p.w, i) >> 2])
                          : scale_elem(v, inv);
    d_f[(dof + i * p.d.nb0) >> 2] = y;
  }
}
