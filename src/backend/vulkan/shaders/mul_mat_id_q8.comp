// kMulMatId's int8 path once the (u, t) pairs per expert are many
// (prefill): dst[:, u, t] = W[:, :, ids[u, t]]^T x[:, u % X1, t] with W of a
// type mul_mat_q8.glsl's q8_weight_block() reads (TYPE: DType id) and x
// already quantized by quant_act_q8.comp (each token's row once, shared by
// the experts it chose; mat_interface.h's block layout).
//
// Workgroups: N tiles (fastest) x E experts. The workgroup of expert e
// scans ids 256 at a time, collects the pairs that chose e in shared memory
// and computes a tile of BN = 64 weight rows x BM = 64 pairs whenever 64
// are collected (and once more for the rest at the end), so each expert
// slice is read once per 64 pairs (mul_mat.comp's ID mode). A tile steps
// over K one 32-element block at a time as mul_mat_q8.comp's: threads 0-63
// unpack one weight row's block into shared memory, threads 64-127 copy one
// pair's quantized x block, every thread forms a 4 x 4 block of outputs
// (rows tn + 16i, pairs tm + 16j) from integer dot products; each output
// keeps its chunk partial beside its running total, so the sums are
// mul_mat_q8.glsl's, bit for bit as mul_mat_vec_id_q8.comp's: a pair's
// output depends neither on its tile slot nor on the other pairs. An id
// outside [0, E) is reported (ERR_ID_RANGE) by the expert-0 workgroups,
// which also write its output column as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;

const uint BN = kMatTile, BM = kMatTile;
const uint RS = 9u;      // shared row stride (words)
const uint SCAN = 256u;  // ids examined per round

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

shared uint wc_s[BN * RS];  // weight row n's codes at n * RS
shared float wd_s[BN], wm_s[BN];
shared uint ws_s[BN];       // weight row n's packed sub-scales
shared uint xc_s[BM * RS];  // slot m's codes at m * RS
shared float xd_s[BM];
shared int xs_s[BM];
shared uint col_q[BM];         // word index of slot m's quantized block 0
shared uint col_d[BM];         // word index of slot m's dst column
shared uint pairs[BM + SCAN];  // collected pair indices u + n_used * t
shared uint n_pairs;

// The tile of weight rows n0 .. n0+63 of the expert at byte wbase against
// slots 0 .. ncols-1 (col_q / col_d filled). Ends with a barrier.
void tile(uint n0, uint wbase, uint ncols) {
  const uint tid = gl_LocalInvocationID.x;
  const uint N = p.w.ne1;
  const uint nb = p.w.ne0 / kMatQ8Block;
  const uint tn = tid % 16u, tm = tid / 16u;
  const uint jmax = (ncols + 15u) / 16u;
  // This thread's loads: weight row n0 + tid (tid < 64) or slot tid - 64.
  const bool w_loader = tid < BN && n0 + tid < N;
  const uint wrow = wbase + (n0 + tid) * p.w.nb1;
  const bool x_loader = tid >= BN && tid < BN + BM && tid - BN < ncols;
  const uint xblk0 = x_loader ? col_q[tid - BN] : 0u;

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
    for (uint i = 0u; i < 4u; ++i) {
      const uint n = n0 + tn + 16u * i;
      if (n < N) d_f[col_d[m] + n] = tot[i][j];
    }
  }
  barrier();
}

// col_q / col_d of slots 0 .. cnt-1 from pairs[].
void fill_pair_columns(uint cnt) {
  const uint tid = gl_LocalInvocationID.x;
  if (tid < cnt) {
    const uint q = pairs[tid];
    const uint u = q % p.ids.ne0, t = q / p.ids.ne0;
    const uint nb = p.w.ne0 / kMatQ8Block;
    col_q[tid] = (p.q.off >> 2u) + ((t * p.x.ne1 + u % p.x.ne1) * nb) * Q8_WORDS;
    col_d[tid] = (p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u;
  }
  barrier();
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint N = p.w.ne1, E = p.w.ne2;
  const uint n_nt = (N + BN - 1u) / BN;
  const uint g = group_index();
  const uint nt = g % n_nt, e = g / n_nt;
  if (e >= E) return;
  const uint n0 = nt * BN;
  const uint wbase = p.w.off + e * p.w.nb2;
  const uint n_used = p.ids.ne0;
  const uint total = n_used * p.ids.ne1;
  if (tid == 0u) n_pairs = 0u;
  barrier();
  for (uint base = 0u; base < total; base += SCAN) {
    const uint q = base + tid;
    if (q < total) {
      const uint u = q % n_used, t = q / n_used;
      const int id = ids_i[(p.ids.off + u * p.ids.nb0 + t * p.ids.nb1) >> 2u];
      if (id == int(e)) {
        pairs[atomicAdd(n_pairs, 1u)] = q;
      } else if (e == 0u && (id < 0 || id >= int(E))) {
        if (nt == 0u) report_error(ERR_ID_RANGE, uint(id));
        const uint dc = (p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u;
        for (uint n = n0; n < min(n0 + BN, N); ++n) d_f[dc + n] = 0.0;
      }
    }
    barrier();
    uint cnt = n_pairs;
    barrier();
    while (cnt >= BM) {
      fill_pair_columns(BM);
      tile(n0, wbase, BM);
      // Move the pairs past the first BM to the front.
      const uint rest = cnt - BM;
      const uint moved = tid < rest ? pairs[BM + tid] : 0u;
      barrier();
      if (tid < rest) pairs[tid] = moved;
      if (tid == 0u) n_pairs = rest;
      barrier();
      cnt = rest;
    }
  }
  const uint cnt = n_pairs;
  if (cnt > 0u) {
    barrier();
    fill_pair_columns(cnt);
    tile(n0, wbase, cnt);
  }
}
