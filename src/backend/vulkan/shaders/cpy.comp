// kCpy: dst[i] = src0[i] for 4-byte elements (F32 or I32) under any strides,
// one thread per element, moved as raw words (NaN payloads and -0.0 intact).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_interface.h"

layout(local_size_x = kElementWorkgroup) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_UNARY_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { uint x_w[]; };
layout(std430, binding = 3) writeonly buffer D { uint d_w[]; };

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uvec3 r = unflatten_rows(i / p.d.ne0, p.d.ne1, p.d.ne2);
  d_w[elem_off(p.d, i0, r.x, r.y, r.z) >> 2] = x_w[elem_off(p.x, i0, r.x, r.y, r.z) >> 2];
}
