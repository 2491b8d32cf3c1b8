// kMulMatId's int8 path while the (u, t) pairs per expert are few (decode):
// dst[:, u, t] = W[:, :, ids[u, t]]^T x[:, u % X1, t] with W of a type
// mul_mat_q8.glsl's q8_weight_block() reads (TYPE: DType id) and x already
// quantized by quant_act_q8.comp (each token's row once, shared by the
// experts it chose; mat_interface.h's block layout).
//
// A workgroup of 128 threads computes RPW = 128 / TPR consecutive weight
// rows of one pair. The TPR lanes of a row take its SUM_CHUNK-element
// chunks (lane l chunk l, then l + TPR, ... in later rounds), each chunk's
// 32-element blocks in ascending order: the weight block's codes against
// the pair's quantized x block, the block's term added to the chunk
// partial. The partials go to shared memory and lane 0 of the row adds them
// to the running total in chunk order: mul_mat_q8.glsl's order, bit for bit
// as mul_mat_id_q8.comp (the tiled variant) and mul_mat_q8.comp sum it.
//
// Workgroups: ceil(N / RPW) row blocks (fastest) x n_used * T pairs. An id
// outside [0, E) is reported (kErrIdRange) and its output column written
// as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = kMatVecWorkgroup) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint TPR = 32;  // lanes per row: power of 2, <= 128

const uint WG = kMatVecWorkgroup;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MATQ8_ID_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer Q { uint q_w[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };
layout(std430, binding = 5) readonly buffer Ids { int ids_i[]; };

#include "dequant.glsl"
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_sum.glsl"
#include "mul_mat_q8.glsl"

const uint CHUNK_BLOCKS = SUM_CHUNK / kMatQ8Block;

shared float red[WG];  // red[tid]: a lane's chunk partial

void main() {
  const uint RPW = WG / TPR;
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % TPR;
  const uint K = p.w.ne0, N = p.w.ne1, E = p.w.ne2;
  const uint n_used = p.ids.ne0;
  const uint n_blocks = (N + RPW - 1u) / RPW;
  const uint g = group_index();
  const uint pair = g / n_blocks;
  if (pair >= n_used * p.ids.ne1) return;  // whole workgroup
  const uint n = (g % n_blocks) * RPW + tid / TPR;
  const uint u = pair % n_used, t = pair / n_used;

  const int e = ids_i[(p.ids.off + u * p.ids.nb0 + t * p.ids.nb1) >> 2u];
  const bool valid = e >= 0 && e < int(E);
  if (!valid && tid == 0u) report_error(kErrIdRange, uint(e));
  const bool live = valid && n < N;
  const uint rb = p.w.off + (valid ? uint(e) : 0u) * p.w.nb2 + n * p.w.nb1;
  const uint nb = K / kMatQ8Block;
  // Block 0 of the pair's quantized column (u % X1, t).
  const uint xq = (p.q.off >> 2u) + ((t * p.x.ne1 + u % p.x.ne1) * nb) * Q8_WORDS;
  const uint n_chunks = (nb + CHUNK_BLOCKS - 1u) / CHUNK_BLOCKS;
  const uint row_red = tid - lane;  // red index of this row's lane 0

  precise float tot = 0.0;  // lane 0's running total
  for (uint c0 = 0u; c0 < n_chunks; c0 += TPR) {
    const uint c = c0 + lane;
    precise float s = 0.0;
    if (live && c < n_chunks) {
      const uint b_end = min((c + 1u) * CHUNK_BLOCKS, nb);
      for (uint b = c * CHUNK_BLOCKS; b < b_end; ++b) {
        uint wc[8], xc[8];
        float dw, mw;
        uint ws;
        q8_weight_block(TYPE, rb, b, wc, dw, mw, ws);
        const uint qo = xq + b * Q8_WORDS;
        for (uint i = 0u; i < 8u; ++i) xc[i] = q_w[qo + i];
        const float dx = uintBitsToFloat(q_w[qo + 8u]);
        const int xs = int(q_w[qo + 9u]);
        s = s + q8_block_term(TYPE, wc, xc, xs, dw, mw, ws, dx);
      }
    }
    red[tid] = s;
    barrier();
    if (lane == 0u) {
      const uint used = min(TPR, n_chunks - c0);
      for (uint l = 0u; l < used; ++l) tot = tot + red[row_red + l];
    }
    barrier();
  }
  if (lane == 0u && n < N) d_f[((p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u) + n] = tot;
}
