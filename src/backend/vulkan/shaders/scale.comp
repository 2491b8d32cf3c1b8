// kScale: dst = src0 * scale + bias, one thread per element. The reference
// rounds the exact x * s + b once (through a double); so do the CPU kernels
// (an FMA). GLSL's fma() may round twice (Vulkan lets it be a multiply then
// an add; lavapipe does), so the product is made exact instead: Dekker's
// two-product gives x * s = prod + e exactly, Knuth's two-sum gives
// prod + b = q + t exactly, and q + (t + e) is the correctly rounded sum
// unless rounding t + e moves it across a rounding boundary of q (rare).
// `precise` keeps the compiler from contracting or reassociating any of it.
// Products near the float range's ends (where the split could overflow or
// the error term underflow), NaN and inf take the plain two-rounding path.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_interface.h"

layout(local_size_x = kElementWorkgroup) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SCALE_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) writeonly buffer D { float d_f[]; };

// Veltkamp split: a == hi + lo, each with at most 12 significant bits.
void split(float a, out float hi, out float lo) {
  precise float c = 4097.0 * a;
  precise float h = c - (c - a);
  hi = h;
  precise float l = a - h;
  lo = l;
}

float scale_bias(float x, float s, float b) {
  precise float prod = x * s;
  // Split and error terms stay normal floats (no overflow, no underflow).
  const float ap = abs(prod), ax = abs(x), as_ = abs(s);
  if (!(ap < 1.0e30 && ap > 1.0e-20 && ax < 1.0e30 && ax > 1.0e-30 && as_ < 1.0e30 &&
        as_ > 1.0e-30)) {
    precise float r = prod + b;
    return r;
  }
  float xh, xl, sh, sl;
  split(x, xh, xl);
  split(s, sh, sl);
  precise float e = ((xh * sh - prod) + xh * sl + xl * sh) + xl * sl;  // x * s - prod
  precise float q = prod + b;
  precise float bv = q - prod;
  precise float t = (prod - (q - bv)) + (b - bv);  // prod + b - q
  precise float r = q + (t + e);
  return r;
}

void main() {
  const uint i = group_index() * kElementWorkgroup + gl_LocalInvocationID.x;
  const uint n = p.d.ne0 * p.d.ne1 * p.d.ne2 * p.d.ne3;
  if (i >= n) return;
  const uint i0 = i % p.d.ne0;
  const uvec3 r = unflatten_rows(i / p.d.ne0, p.d.ne1, p.d.ne2);
  const float x = x_f[elem_off(p.x, i0, r.x, r.y, r.z) >> 2];
  d_f[elem_off(p.d, i0, r.x, r.y, r.z) >> 2] = scale_bias(x, p.scale, p.bias);
}
