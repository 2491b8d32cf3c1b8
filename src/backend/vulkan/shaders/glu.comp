// kGlu: dst = act(gate) * up, one thread per element of dst. The host
// describes gate and up as two tensors of dst's row length: either src0 and
// src1, or the two halves of each src0 row (the up half's descriptor starts
// n elements later). Row r of dst pairs with flat row r of gate and up, which
// may be shaped differently from dst in dims 1..3. Spec constant 0: the
// activation (ACT_SILU, ACT_GELU or ACT_GELU_ERF).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "activation.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint KIND = 0;

layout(std430, binding = 0) readonly buffer Params {
  Tensor g;
  Tensor u;
  Tensor d;
} p;
layout(std430, binding = 2) readonly buffer G { float g_f[]; };
layout(std430, binding = 3) readonly buffer U { float u_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * 256u + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uint row = i / p.d.ne0;
  const float g = g_f[(flat_row_off(p.g, row) + i0 * p.g.nb0) >> 2];
  const float u = u_f[(flat_row_off(p.u, row) + i0 * p.u.nb0) >> 2];
  d_f[(flat_row_off(p.d, row) + i0 * p.d.nb0) >> 2] = activation(KIND, g) * u;
}
