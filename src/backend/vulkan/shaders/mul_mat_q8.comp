// kMulMat's int8 path for many activation columns (prefill): dst = W^T X
// with W of a type mul_mat_q8.glsl lists (TYPE: DType id) and X already
// quantized by quant_act_q8.comp (mat_interface.h's block layout).
//
// Tiling: a workgroup of 256 threads computes a tile of BN = 64 weight rows
// x BM = 64 activation columns, stepping over K one 32-element block at a
// time. Each step, threads 0-63 unpack one weight row's block (codes,
// scale, minimum, sub-scales) into shared memory and threads 64-127 copy one column's
// quantized block; every thread then forms a 4 x 4 block of outputs (rows
// tn + 16i, columns tm + 16j) from integer dot products of packed bytes.
// Shared rows are 9 words apart so lanes reading one word of different
// rows fall in distinct banks. Sums follow mul_mat_q8.glsl, bit for bit as
// mul_mat_vec.comp's Q8 mode sums them: each output keeps the partial of
// the current chunk (SUM_CHUNK / 32 blocks) beside its running total, so an
// output column depends neither on its tile slot nor on the other columns.
//
// Workgroups: N tiles (fastest) x M tiles x (b2, b3) batches; batch (b2,
// b3) uses weight matrix (b2 / (B2 / B2w), b3 / (B3 / B3w)).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;

const uint BN = kMatTile, BM = kMatTile;
const uint RS = 9u;  // shared row stride (words)

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MATQ8_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer Q { uint q_w[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };

#include "dequant.glsl"
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_sum.glsl"
#include "mul_mat_q8.glsl"

const uint CHUNK_BLOCKS = SUM_CHUNK / kMatQ8Block;

shared uint wc_s[BN * RS];  // weight row n's codes at n * RS
shared float wd_s[BN], wm_s[BN];
shared uint ws_s[BN];  // weight row n's packed sub-scales
shared uint xc_s[BM * RS];  // column m's codes at m * RS
shared float xd_s[BM];
shared int xs_s[BM];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint K = p.w.ne0, N = p.w.ne1, M = p.x.ne1;
  const uint nb = K / kMatQ8Block;
  const uint n_nt = (N + BN - 1u) / BN, n_mt = (M + BM - 1u) / BM;
  const uint g = group_index();
  const uint nt = g % n_nt, mt = (g / n_nt) % n_mt, batch = g / n_nt / n_mt;
  if (batch >= p.x.ne2 * p.x.ne3) return;
  const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
  const uint wbase =
      p.w.off + (b2 / (p.x.ne2 / p.w.ne2)) * p.w.nb2 + (b3 / (p.x.ne3 / p.w.ne3)) * p.w.nb3;
  const uint n0 = nt * BN, m0 = mt * BM;
  const uint ncols = min(BM, M - m0);
  const uint tn = tid % 16u, tm = tid / 16u;
  const uint jmax = (ncols + 15u) / 16u;
  // This thread's loads: weight row n0 + tid (tid < 64) or column m0 + tid - 64.
  const bool w_loader = tid < BN && n0 + tid < N;
  const uint wrow = wbase + (n0 + tid) * p.w.nb1;
  const bool x_loader = tid >= BN && tid < BN + BM && tid - BN < ncols;
  const uint xblk0 = (p.q.off >> 2u) + ((batch * M + m0 + tid - BN) * nb) * Q8_WORDS;

  precise float acc[4][4];  // the current chunk's partial sums
  precise float tot[4][4];  // the finished chunks' sum
  for (uint i = 0u; i < 4u; ++i) {
    for (uint j = 0u; j < 4u; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint kb = 0u; kb < nb; ++kb) {
    if (w_loader) {
      uint c[8];
      float dw, mw;
      uint ws;
      q8_weight_block(TYPE, wrow, kb, c, dw, mw, ws);
      for (uint i = 0u; i < 8u; ++i) wc_s[tid * RS + i] = c[i];
      wd_s[tid] = dw;
      wm_s[tid] = mw;
      ws_s[tid] = ws;
    } else if (x_loader) {
      const uint m = tid - BN;
      const uint qo = xblk0 + kb * Q8_WORDS;
      for (uint i = 0u; i < 8u; ++i) xc_s[m * RS + i] = q_w[qo + i];
      xd_s[m] = uintBitsToFloat(q_w[qo + 8u]);
      xs_s[m] = int(q_w[qo + 9u]);
    }
    barrier();
    for (uint j = 0u; j < 4u; ++j) {
      if (j >= jmax) continue;
      const uint m = tm + 16u * j;
      uint xc[8];
      for (uint w = 0u; w < 8u; ++w) xc[w] = xc_s[m * RS + w];
      const float dx = xd_s[m];
      const int xs = xs_s[m];
      for (uint i = 0u; i < 4u; ++i) {
        const uint n = tn + 16u * i;
        uint wc[8];
        for (uint w = 0u; w < 8u; ++w) wc[w] = wc_s[n * RS + w];
        acc[i][j] = acc[i][j] + q8_block_term(TYPE, wc, xc, xs, wd_s[n], wm_s[n], ws_s[n], dx);
      }
    }
    // A chunk ends here: its partial joins the total.
    if ((kb + 1u) % CHUNK_BLOCKS == 0u || kb + 1u == nb) {
      for (uint i = 0u; i < 4u; ++i) {
        for (uint j = 0u; j < 4u; ++j) {
          tot[i][j] = tot[i][j] + acc[i][j];
          acc[i][j] = 0.0;
        }
      }
    }
    barrier();
  }
  for (uint j = 0u; j < 4u; ++j) {
    const uint m = tm + 16u * j;
    if (m >= ncols) continue;
    const uint dc = (p.d.off + (m0 + m) * p.d.nb1 + b2 * p.d.nb2 + b3 * p.d.nb3) >> 2u;
    for (uint i = 0u; i < 4u; ++i) {
      const uint n = n0 + tn + 16u * i;
      if (n < N) d_f[dc + n] = tot[i][j];
    }
  }
}
