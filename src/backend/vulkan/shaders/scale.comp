// kScale: dst = src0 * scale + bias, one thread per element. The reference
// rounds x * s + b once (in double); fma rounds the exact x * s + b once in
// float, which equals it except where the double's own rounding lands on a
// float tie.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Params {
  Tensor x;
  Tensor d;
  float scale;
  float bias;
} p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * 256u + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uvec3 r = unflatten_rows(i / p.d.ne0, p.d.ne1, p.d.ne2);
  const float x = x_f[elem_off(p.x, i0, r.x, r.y, r.z) >> 2];
  precise float v = fma(x, p.scale, p.bias);
  d_f[elem_off(p.d, i0, r.x, r.y, r.z) >> 2] = v;
}
