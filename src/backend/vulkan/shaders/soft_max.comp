// kSoftMax: dst = softmax over dim 0 of (x * scale + mask). One workgroup per
// row, 256 invocations; invocation t owns the elements t, t + 256, ... of the
// row in all three passes (max, sum of exp, write), so dst may alias x.
// Reductions go through shared memory in a fixed tree order. A row whose
// every value is -inf gives zeros. The mask row is (i1, i2 % m2, i3 % m3).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "attention_interface.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SOFT_MAX_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer M { float m_f[]; };
layout(std430, binding = 4) writeonly buffer Dst { float d_f[]; };

shared float red[256];

const float NEG_INF = -1.0 / 0.0;

// Parameters the element loops read, copied once into invocation-private
// variables (the parameter buffer may live in host memory).
uint x_nb0, m_nb0;
float scale;
bool has_mask;

// x * scale + mask of element i of the row at xrow (mask row at mrow).
float value(uint xrow, uint mrow, uint i) {
  const float x = x_f[(xrow + i * x_nb0) >> 2] * scale;
  return has_mask ? x + m_f[(mrow + i * m_nb0) >> 2] : x;
}

// exp(v - mx); exactly 0 for v = -inf, which not every driver's exp gives.
float weight(float v, float mx) { return v == NEG_INF ? 0.0 : exp(v - mx); }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r = group_index();
  if (r >= p.x.ne1 * p.x.ne2 * p.x.ne3) return;
  const uvec3 ri = unflatten_rows(r, p.x.ne1, p.x.ne2);
  const uint xrow = row_off(p.x, ri.x, ri.y, ri.z);
  const uint drow = row_off(p.d, ri.x, ri.y, ri.z);
  const uint mrow = p.has_mask != 0u ? row_off(p.mask, ri.x, ri.y % p.mask.ne2, ri.z % p.mask.ne3) : 0u;
  const uint n = p.x.ne0;
  const uint d_nb0 = p.d.nb0;
  x_nb0 = p.x.nb0;
  m_nb0 = p.mask.nb0;
  scale = p.scale;
  has_mask = p.has_mask != 0u;

  float mx = NEG_INF;
  for (uint i = tid; i < n; i += 256u) mx = max(mx, value(xrow, mrow, i));
  red[tid] = mx;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] = max(red[tid], red[tid + s]);
    barrier();
  }
  mx = red[0];
  barrier();  // red[0] is read before the sums overwrite it
  if (mx == NEG_INF) {
    for (uint i = tid; i < n; i += 256u) d_f[(drow + i * d_nb0) >> 2] = 0.0;
    return;
  }

  float sum = 0.0;
  for (uint i = tid; i < n; i += 256u) sum += weight(value(xrow, mrow, i), mx);
  red[tid] = sum;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (tid < s) red[tid] += red[tid + s];
    barrier();
  }
  sum = red[0];
  for (uint i = tid; i < n; i += 256u) {
    d_f[(drow + i * d_nb0) >> 2] = weight(value(xrow, mrow, i), mx) / sum;
  }
}
