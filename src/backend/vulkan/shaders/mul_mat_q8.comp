// kMulMat's int8 path for many activation columns (prefill): dst = W^T X
// with W of a type mul_mat_q8.glsl lists (TYPE: DType id) and X already
// quantized by quant_act_q8.comp (mat_interface.h's block layout).
//
// Each workgroup computes one tile of mul_mat_q8_tile.glsl (64 weight rows x
// 64 activation columns, the int8 dot products and their summation order,
// bit for bit as mul_mat_vec.comp's Q8 mode sums them); this file says
// where a column's quantized blocks and its dst column lie.
//
// Workgroups: N tiles (fastest) x M tiles x (b2, b3) batches; batch (b2,
// b3) uses weight matrix (b2 / (B2 / B2w), b3 / (B3 / B3w)).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const uint TYPE = 0;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MATQ8_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer Q { uint q_w[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

#include "dequant.glsl"
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_sum.glsl"
#include "mul_mat_q8.glsl"

#include "mul_mat_q8_tile.glsl"

// Tile slot m is activation column at.y + m of batch at.x (at.z, at.w =
// b2, b3).
uint q8_tile_x_block0(uvec4 at, uint m) {
  const uint nb = p.w.ne0 / kMatQ8Block;
  return (p.q.off >> 2u) + ((at.x * p.x.ne1 + at.y + m) * nb) * Q8_WORDS;
}
uint q8_tile_dst(uvec4 at, uint m) {
  return (p.d.off + (at.y + m) * p.d.nb1 + at.z * p.d.nb2 + at.w * p.d.nb3) >> 2u;
}

void main() {
  const uint N = p.w.ne1, M = p.x.ne1;
  const uint n_nt = (N + BN - 1u) / BN, n_mt = (M + BM - 1u) / BM;
  const uint g = group_index();
  const uint nt = g % n_nt, mt = (g / n_nt) % n_mt, batch = g / n_nt / n_mt;
  if (batch >= p.x.ne2 * p.x.ne3) return;
  const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
  const uint wbase =
      p.w.off + (b2 / (p.x.ne2 / p.w.ne2)) * p.w.nb2 + (b3 / (p.x.ne3 / p.w.ne3)) * p.w.nb3;
  const uint m0 = mt * BM;
  q8_tile(nt * BN, wbase, min(BM, M - m0), uvec4(batch, m0, b2, b3));
}
