// kRmsNorm / kL2Norm: one workgroup per row (dim 0). Each invocation sums
// the squares of elements tid, tid + B, ... (B = workgroup size, spec 0),
// the workgroup adds the partial sums, then the same invocation scales the
// same elements, so dst may alias src0. Spec 1: kNormModeRms or
// kNormModeL2 (norm_interface.h);
// spec 2: multiply by the weight w (flat element i).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "row_norm.glsl"
#include "norm_interface.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0;
layout(constant_id = 2) const bool HAS_W = false;

#include "workgroup_sum.glsl"

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_NORM_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer W { float w_f[]; };
layout(std430, binding = 4) buffer D { float d_f[]; };

void main() {
  const uint row = group_index();
  if (row >= p.x.ne1 * p.x.ne2 * p.x.ne3) return;
  const uvec3 r = unflatten_rows(row, p.x.ne1, p.x.ne2);
  const uint xo = row_off(p.x, r.x, r.y, r.z);
  const uint dof = row_off(p.d, r.x, r.y, r.z);
  const uint n = p.x.ne0;
  const uint B = gl_WorkGroupSize.x;

  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    const float v = x_f[(xo + i * p.x.nb0) >> 2];
    ss = add_square(ss, v);
  }
  ss = workgroup_sum(ss);
  const float inv = MODE == kNormModeRms ? rms_inv(ss, n, p.eps) : l2_inv(ss, p.eps);

  for (uint i = gl_LocalInvocationID.x; i < n; i += B) {
    const float v = x_f[(xo + i * p.x.nb0) >> 2];
    const float y = HAS_W ? scale_elem_w(v, inv, w_f[flat_elem_off(p.w, i) >> 2])
                          : scale_elem(v, inv);
    d_f[(dof + i * p.d.nb0) >> 2] = y;
  }
}
