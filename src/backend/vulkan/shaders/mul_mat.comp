// kMulMat / kMulMatId for many activation columns (prefill): dst = W^T X
// with W of any weight dtype (TYPE: DType id, dequant.glsl), X and dst F32.
//
// Tiling: a workgroup of 256 threads computes a tile of BN = 64 weight rows
// x BM = 64 activation columns, stepping over K by BK = 16. Each step
// dequantizes the 64 x 16 weight slice into shared memory once (two threads
// per row, one 8-element chunk each) and loads the 16 x 64 activation slice
// beside it; every thread then accumulates a 4 x 4 block of outputs (rows tn
// + 16i, columns tm + 16j), so each dequantized weight is reused across all
// the tile's columns. Shared arrays are padded (row strides 66) so the
// stores and the reads of a warp fall in distinct banks. Column groups past
// the tile's last column are skipped. Sums follow mul_mat_sum.glsl, bit for
// bit as mul_mat_vec.comp sums them: each output keeps the partial of the
// current SUM_CHUNK-element chunk beside its running total and folds the
// partial in at the chunk's end, so an output column does not depend on
// the tile slot its column lands in nor on the other columns.
//
// kMulMat (ID = 0): workgroups are N tiles (fastest) x M tiles x (b2, b3)
// batches; batch (b2, b3) uses weight matrix (b2 / (B2 / B2w), b3 / (B3 /
// B3w)).
// kMulMatId (ID = 1): workgroups are N tiles x E experts. The workgroup of
// expert e scans ids 256 at a time, collects the (u, t) pairs that chose e
// in shared memory and computes a tile whenever 64 are collected (and once
// more for the rest at the end), so each expert slice is read once per 64
// pairs. Pair (u, t) multiplies column u % X1 of token t into dst[:, u, t].
// An id outside [0, E) is reported (kErrIdRange) by the expert-0
// workgroups, which also write its output column as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint ID = 0;  // 1: mul_mat_id

const uint BN = kMatTile, BM = kMatTile, BK = 16u;
const uint WS = BN + 2u;  // ws row stride (floats)
const uint XS = BM + 2u;  // xs row stride
const uint SCAN = 256u;   // ids examined per round (mul_mat_id)

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MAT_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer X { float x_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };
layout(std430, binding = 5) readonly buffer Ids { int ids_i[]; };

#include "dequant.glsl"
#include "mul_mat_sum.glsl"

shared float ws[BK * WS];  // ws[k * WS + n]: weight row n0 + n, element k0 + k
shared float xs[BK * XS];  // xs[k * XS + m]: column m, element k0 + k
shared uint col_x[BM];     // word index of column m's x row
shared uint col_d[BM];     // word index of column m's dst row
shared uint pairs[BM + SCAN];  // mul_mat_id: collected pair indices u + n_used * t
shared uint n_pairs;

// Adds the products of element k of the K step to the chunk partials
// (acc) of the thread's 4 x 4 outputs.
#define ACCUMULATE_K(k)                                                     \
  {                                                                         \
    float a[4], b[4];                                                       \
    for (uint i = 0u; i < 4u; ++i) a[i] = ws[(k) * WS + tn + 16u * i];      \
    for (uint j = 0u; j < 4u; ++j) b[j] = xs[(k) * XS + tm + 16u * j];      \
    for (uint j = 0u; j < 4u; ++j) {                                        \
      if (j < jmax) {                                                       \
        for (uint i = 0u; i < 4u; ++i) acc[i][j] = acc[i][j] + a[i] * b[j]; \
      }                                                                     \
    }                                                                       \
  }

// The tile of weight rows n0 .. n0+63 of the matrix at byte wbase against
// columns 0 .. ncols-1 (col_x / col_d filled). Ends with a barrier.
void tile(uint n0, uint wbase, uint ncols) {
  const uint tid = gl_LocalInvocationID.x;
  const uint tn = tid % 16u, tm = tid / 16u;
  const uint K = p.w.ne0, N = p.w.ne1;
  const uint jmax = (ncols + 15u) / 16u;
  precise float acc[4][4];  // the current chunk's partial sums
  precise float tot[4][4];  // the finished chunks' sum
  for (uint i = 0u; i < 4u; ++i) {
    for (uint j = 0u; j < 4u; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint k0 = 0u; k0 < K; k0 += BK) {
    if (tid < 2u * BN) {
      const uint nl = tid >> 1u, h = tid & 1u;
      vec4 a = vec4(0.0), b = vec4(0.0);
      if (n0 + nl < N) dequant8(TYPE, wbase + (n0 + nl) * p.w.nb1, k0 / 8u + h, K, a, b);
      const uint o = 8u * h * WS + nl;
      ws[o] = a.x;
      ws[o + WS] = a.y;
      ws[o + 2u * WS] = a.z;
      ws[o + 3u * WS] = a.w;
      ws[o + 4u * WS] = b.x;
      ws[o + 5u * WS] = b.y;
      ws[o + 6u * WS] = b.z;
      ws[o + 7u * WS] = b.w;
    }
    {
      const uint kl = tid % BK;
      const uint k = k0 + kl;
      for (uint r = 0u; r < BM / 16u; ++r) {
        const uint m = tid / BK + 16u * r;
        xs[kl * XS + m] = (m < ncols && k < K) ? x_f[col_x[m] + k] : 0.0;
      }
    }
    barrier();
    // Elements at or past K (a partial last step) take no part.
    if (k0 + BK <= K) {
      for (uint k = 0u; k < BK; ++k) ACCUMULATE_K(k);
    } else {
      for (uint k = 0u; k < K - k0; ++k) ACCUMULATE_K(k);
    }
    // A chunk ends here: its partial joins the total.
    if ((k0 + BK) % SUM_CHUNK == 0u || k0 + BK >= K) {
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

// col_x / col_d of slots 0 .. cnt-1 from pairs[] (mul_mat_id).
void fill_pair_columns(uint cnt) {
  const uint tid = gl_LocalInvocationID.x;
  if (tid < cnt) {
    const uint q = pairs[tid];
    const uint u = q % p.ids.ne0, t = q / p.ids.ne0;
    col_x[tid] = (p.x.off + (u % p.x.ne1) * p.x.nb1 + t * p.x.nb2) >> 2u;
    col_d[tid] = (p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u;
  }
  barrier();
}

void main_mul_mat() {
  const uint tid = gl_LocalInvocationID.x;
  const uint N = p.w.ne1, M = p.x.ne1;
  const uint n_nt = (N + BN - 1u) / BN, n_mt = (M + BM - 1u) / BM;
  const uint g = group_index();
  const uint nt = g % n_nt, mt = (g / n_nt) % n_mt, batch = g / n_nt / n_mt;
  if (batch >= p.x.ne2 * p.x.ne3) return;
  const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
  const uint wbase =
      p.w.off + (b2 / (p.x.ne2 / p.w.ne2)) * p.w.nb2 + (b3 / (p.x.ne3 / p.w.ne3)) * p.w.nb3;
  if (tid < BM) {
    const uint m = mt * BM + tid;
    col_x[tid] = (p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u;
    col_d[tid] = (p.d.off + m * p.d.nb1 + b2 * p.d.nb2 + b3 * p.d.nb3) >> 2u;
  }
  barrier();
  tile(nt * BN, wbase, min(BM, M - mt * BM));
}

void main_mul_mat_id() {
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
        if (nt == 0u) report_error(kErrIdRange, uint(id));
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

void main() {
  if (ID == 0u) {
    main_mul_mat();
  } else {
    main_mul_mat_id();
  }
}
