// The int8 path's activation quantizer (mul_mat_q8.glsl): x F32 [K, M, B2,
// B3] into blocks of kMatQ8BlockWords words (mat_interface.h), one thread
// per 32-element block; mul_mat_q8.comp reads them. Blocks are numbered
// ((b3 * B2 + b2) * M + m) * (K / 32) + kb, fastest along K.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MATQ8_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) writeonly buffer Q { uint q_w[]; };
#define Q8_ACT_ONLY
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_q8.glsl"

void main() {
  const uint nb = p.x.ne0 / kMatQ8Block, M = p.x.ne1;
  const uint idx = group_index() * 256u + gl_LocalInvocationID.x;
  if (idx >= nb * M * p.x.ne2 * p.x.ne3) return;
  const uint kb = idx % nb, col = idx / nb;
  const uint m = col % M, batch = col / M;
  const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
  const uint xo = ((p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u) + kMatQ8Block * kb;
  float v[32];
  for (uint j = 0u; j < 32u; ++j) v[j] = x_f[xo + j];
  uint c[8];
  float dx;
  int xs;
  q8_act_block(v, c, dx, xs);
  const uint qo = (p.q.off >> 2u) + idx * Q8_WORDS;
  for (uint i = 0u; i < 8u; ++i) q_w[qo + i] = c[i];
  q_w[qo + 8u] = floatBitsToUint(dx);
  q_w[qo + 9u] = uint(xs);
}
