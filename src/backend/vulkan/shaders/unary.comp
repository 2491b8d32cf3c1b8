// kUnary: dst = act(src0), one thread per element; the activation (a
// UnaryKind, numbered as kAct* in elementwise_interface.h) is spec constant 0.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_interface.h"
#include "activation.glsl"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint KIND = 0;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_UNARY_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uvec3 r = unflatten_rows(i / p.d.ne0, p.d.ne1, p.d.ne2);
  const float x = x_f[elem_off(p.x, i0, r.x, r.y, r.z) >> 2];
  d_f[elem_off(p.d, i0, r.x, r.y, r.z) >> 2] = activation(KIND, x);
}
