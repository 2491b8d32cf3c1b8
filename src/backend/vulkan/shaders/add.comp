// kAdd / kMul (op spec constant): dst = src0 (+|*) src1, src1 broadcast by
// indexing each dim modulo its size. One thread per element of dst.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_interface.h"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint OP = kBinaryAdd;  // or kBinaryMul

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_BINARY_PARAMS } p;
layout(std430, binding = 2) readonly buffer A { float a_f[]; };
layout(std430, binding = 3) readonly buffer B { float b_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uvec3 r = unflatten_rows(i / p.d.ne0, p.d.ne1, p.d.ne2);
  const float x = a_f[elem_off(p.a, i0, r.x, r.y, r.z) >> 2];
  const float y = b_f[elem_off(p.b, i0 % p.b.ne0, r.x % p.b.ne1, r.y % p.b.ne2, r.z % p.b.ne3) >> 2];
  precise float v;
  if (OP == kBinaryAdd) v = x + y; else v = x * y;
  d_f[elem_off(p.d, i0, r.x, r.y, r.z) >> 2] = v;
}
