// The int8 path's activation quantizer (mul_mat_q8.glsl): x F32 [K, M, B2,
// B3] into blocks of kMatQ8BlockWords words (mat_interface.h), numbered
// ((b3 * B2 + b2) * M + m) * (K / 32) + kb, fastest along K; the products
// (mul_mat_q8.comp, mul_mat_vec_q8.comp, mul_mat_id_q8.comp) read them.
//
// NORM = 0: one invocation per 32-element block, workgroups of 256.
// NORM = 1 (kRmsNormMulMat's decode, one batch): one workgroup per column
// of norm.comp's size for rows of K (spec constant 1, the workgroup size):
// it finds the column's 1 / rms as norm.comp does (the same partial sums
// and tree, workgroup_sum.glsl), then its invocations quantize blocks tid,
// tid + WG, ... of the normalised column, each element (x * inv) * nw[k]
// (row_norm.glsl): bit for bit rms_norm followed by the quantization.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const uint NORM = 0;

#include "workgroup_sum.glsl"
#include "row_norm.glsl"

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_QUANT_ACT_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) writeonly buffer Q { uint q_w[]; };
layout(std430, binding = 4) readonly buffer NormW { float nw_f[]; };
#define Q8_ACT_ONLY
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_q8.glsl"

// Quantizes block kb of the column whose row starts at word xo into block
// idx of q, each element scaled by inv and the norm weight under NORM.
void quantize_block(uint xo, uint kb, uint idx, float inv) {
  float v[32];
  for (uint j = 0u; j < 32u; ++j) {
    const uint k = kMatQ8Block * kb + j;
    const float e = x_f[xo + k];
    v[j] = NORM != 0u ? scale_elem_w(e, inv, nw_f[(p.nw.off >> 2u) + k]) : e;
  }
  STORE_Q8_ACT_BLOCK(q_w, (p.q.off >> 2u) + idx * Q8_WORDS, v);
}

void main() {
  const uint K = p.x.ne0, nb = K / kMatQ8Block, M = p.x.ne1;
  const uint tid = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  if (NORM != 0u) {
    const uint m = group_index();
    if (m >= M) return;  // whole workgroup
    const uint xo = (p.x.off + m * p.x.nb1) >> 2u;
    float ss = 0.0;
    for (uint i = tid; i < K; i += WG) ss = add_square(ss, x_f[xo + i]);
    ss = workgroup_sum(ss);
    const float inv = rms_inv(ss, K, p.eps);
    for (uint kb = tid; kb < nb; kb += WG) quantize_block(xo, kb, m * nb + kb, inv);
    return;
  }
  const uint idx = group_index() * WG + tid;
  if (idx >= nb * M * p.x.ne2 * p.x.ne3) return;
  const uint kb = idx % nb, col = idx / nb;
  const uint m = col % M, batch = col / M;
  const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
  quantize_block((p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u, kb, idx, 0.0);
}
