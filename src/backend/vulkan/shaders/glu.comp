// kGlu: dst = act(gate) * up, one thread per element of dst. The host
// describes gate and up as two tensors of dst's row length: either src0 and
// src1, or the two halves of each src0 row (the up half's descriptor starts
// n elements later). Row r of dst pairs with flat row r of gate and up, which
// may be shaped differently from dst in dims 1..3. Spec constant 0: the
// activation (kActSilu, kActGelu or kActGeluErf), or kGluSwiGluOai for
// gpt-oss's clamped form: g = min(gate, limit), u = clamp(up, -limit, limit),
// dst = g / (1 + e^(-alpha g)) * (u + 1) (alpha, limit from the params).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_interface.h"
#include "flat_index.glsl"
#include "activation.glsl"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint KIND = 0;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_GLU_PARAMS } p;
layout(std430, binding = 2) readonly buffer G { float g_f[]; };
layout(std430, binding = 3) readonly buffer U { float u_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uint row = i / p.d.ne0;
  const float g = g_f[(flat_row_off(p.g, row) + i0 * p.g.nb0) >> 2];
  const float u = u_f[(flat_row_off(p.u, row) + i0 * p.u.nb0) >> 2];
  float r;
  if (KIND == kGluSwiGluOai) {
    // min/max return the non-NaN operand on GPUs: keep a NaN input NaN, as
    // the reference's std::min / std::clamp do.
    const float gc = isnan(g) ? g : min(g, p.limit);
    const float uc = isnan(u) ? u : clamp(u, -p.limit, p.limit);
    r = gc / (1.0 + exp(-p.alpha * gc)) * (uc + 1.0);
  } else {
    r = activation(KIND, g) * u;
  }
  d_f[(flat_row_off(p.d, row) + i0 * p.d.nb0) >> 2] = r;
}
