// kMulMat / kMulMatId for many activation columns (prefill): dst = W^T X
// with W of any weight dtype (TYPE: DType id, dequant.glsl), X and dst F32.
//
// Tiling: a workgroup computes a tile of BN = 64 weight rows x BM = 64
// activation columns, stepping over K by BK = 16. Each step dequantizes
// the 64 x 16 weight slice into shared memory once (one 8-element piece a
// load) and loads the 16 x 64 activation slice beside it; every thread then
// accumulates an R x R block of outputs (rows R tn .. R tn + R - 1,
// columns R tm .. R tm + R - 1), reading its rows and columns at each k as
// R / 4 vec4s of shared memory each, so each dequantized weight is reused
// across all the tile's columns. R (spec constant 2) is
// DeviceCaps::tile_rows: 4 (256 threads) on a GPU, 8 (64 threads) on a CPU
// device, where every shared-memory load is a loop over the SIMD lanes.
// Threads whose columns all lie past the tile's last column skip the
// products. Sums follow mul_mat_sum.glsl, bit for bit as mul_mat_vec.comp
// sums them: each output keeps the partial of the current SUM_CHUNK-element
// chunk beside its running total and folds the partial in at the chunk's
// end, so an output column does not depend on the tile slot its column
// lands in, on the other columns, nor on R. The loops inside a K step are
// unrolled: lavapipe ends a shader's loops after 65535 iterations in all.
//
// kMulMat (ID = 0): workgroups are N tiles (fastest) x M tiles x (b2, b3)
// batches; batch (b2, b3) uses weight matrix (b2 / (B2 / B2w), b3 / (B3 /
// B3w)).
// kMulMatId (ID = 1): workgroups are N tiles x E experts. The workgroup of
// expert e scans WG ids at a time, collects the (u, t) pairs that chose e
// in shared memory and computes a tile whenever 64 are collected (and once
// more for the rest at the end), so each expert slice is read once per 64
// pairs. Pair (u, t) multiplies column u % X1 of token t into dst[:, u, t].
// An id outside [0, E) is reported (kErrIdRange) by the expert-0
// workgroups, which also write its output column as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint ID = 0;  // 1: mul_mat_id
layout(constant_id = 2) const uint R = 4u;     // rows and columns a thread: 4 or 8
layout(constant_id = 3) const uint WG = 256u;  // invocations: (kMatTile / R)^2

const uint BN = kMatTile, BM = kMatTile, BK = 16u;
const uint WS4 = BN / 4u + 1u;  // ws4 row stride (vec4)
const uint XS4 = BM / 4u + 1u;  // xs4 row stride
const uint SCAN = WG;     // ids examined per round (mul_mat_id)

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MAT_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer X { float x_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };
layout(std430, binding = 5) readonly buffer Ids { int ids_i[]; };

#include "dequant.glsl"
#include "mul_mat_sum.glsl"

shared vec4 ws4[BK * WS4];  // ws4[k * WS4 + g][i]: weight row n0 + 4g + i, element k0 + k
shared vec4 xs4[BK * XS4];  // xs4[k * XS4 + g][j]: column 4g + j, element k0 + k
shared uint col_x[BM];     // word index of column m's x row
shared uint col_d[BM];     // word index of column m's dst row
shared uint pairs[BM + SCAN];  // mul_mat_id: collected pair indices u + n_used * t
shared uint n_pairs;

const uint RG = R / 4u;     // vec4 groups of a thread's rows (columns)
const uint TN = BN / R;     // threads along the tile's rows (and columns)
const uint W_ROUNDS = (BN * BK / 8u + WG - 1u) / WG;  // weight pieces a thread loads a step

// Adds the products of element k of the K step to the chunk partials
// (acc) of the thread's R x R outputs.
#define ACCUMULATE_K(k)                                                            \
  {                                                                                \
    vec4 a[RG], b[RG];                                                             \
    [[unroll]] for (uint g = 0u; g < RG; ++g) a[g] = ws4[(k) * WS4 + RG * tn + g]; \
    [[unroll]] for (uint g = 0u; g < RG; ++g) b[g] = xs4[(k) * XS4 + RG * tm + g]; \
    [[unroll]] for (uint j = 0u; j < R; ++j) {                                     \
      [[unroll]] for (uint i = 0u; i < R; ++i) {                                   \
        acc[i][j] = acc[i][j] + a[i / 4u][i % 4u] * b[j / 4u][j % 4u];             \
      }                                                                            \
    }                                                                              \
  }

// The tile of weight rows n0 .. n0+63 of the matrix at byte wbase against
// columns 0 .. ncols-1 (col_x / col_d filled). Ends with a barrier.
void tile(uint n0, uint wbase, uint ncols) {
  const uint tid = gl_LocalInvocationID.x;
  const uint tn = tid % TN, tm = tid / TN;
  const uint K = p.w.ne0, N = p.w.ne1;
  const bool cols = R * tm < ncols;
  precise float acc[R][R];  // the current chunk's partial sums
  precise float tot[R][R];  // the finished chunks' sum
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    [[unroll]] for (uint j = 0u; j < R; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint k0 = 0u; k0 < K; k0 += BK) {
    [[unroll]] for (uint r = 0u; r < W_ROUNDS; ++r) {
      const uint pc = tid + r * WG;  // the piece this thread loads this round
      if (pc >= BN * BK / 8u) break;
      const uint nl = pc / (BK / 8u), h = pc % (BK / 8u);
      vec4 a = vec4(0.0), b = vec4(0.0);
      if (n0 + nl < N) dequant8(TYPE, wbase + (n0 + nl) * p.w.nb1, k0 / 8u + h, K, a, b);
      const uint o = 8u * h * WS4 + nl / 4u, c = nl % 4u;
      ws4[o][c] = a.x;
      ws4[o + WS4][c] = a.y;
      ws4[o + 2u * WS4][c] = a.z;
      ws4[o + 3u * WS4][c] = a.w;
      ws4[o + 4u * WS4][c] = b.x;
      ws4[o + 5u * WS4][c] = b.y;
      ws4[o + 6u * WS4][c] = b.z;
      ws4[o + 7u * WS4][c] = b.w;
    }
    [[unroll]] for (uint r = 0u; r < BM * BK / WG; ++r) {
      const uint v = tid + r * WG;  // the x element this thread loads this round
      const uint kl = v % BK, m = v / BK;
      const uint k = k0 + kl;
      xs4[kl * XS4 + m / 4u][m % 4u] = (m < ncols && k < K) ? x_f[col_x[m] + k] : 0.0;
    }
    barrier();
    // Elements at or past K (a partial last step) take no part.
    if (cols) {
      if (k0 + BK <= K) {
        [[unroll]] for (uint k = 0u; k < BK; ++k) ACCUMULATE_K(k);
      } else {
        for (uint k = 0u; k < K - k0; ++k) ACCUMULATE_K(k);
      }
    }
    // A chunk ends here: its partial joins the total.
    if ((k0 + BK) % SUM_CHUNK == 0u || k0 + BK >= K) {
      [[unroll]] for (uint i = 0u; i < R; ++i) {
        [[unroll]] for (uint j = 0u; j < R; ++j) {
          tot[i][j] = tot[i][j] + acc[i][j];
          acc[i][j] = 0.0;
        }
      }
    }
    barrier();
  }
  [[unroll]] for (uint j = 0u; j < R; ++j) {
    const uint m = R * tm + j;
    if (m >= ncols) continue;
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const uint n = n0 + R * tn + i;
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
  const uint ncols = min(BM, M - mt * BM);
  for (uint t = tid; t < BM; t += WG) {
    const uint m = mt * BM + t;
    col_x[t] = (p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u;
    col_d[t] = (p.d.off + m * p.d.nb1 + b2 * p.d.nb2 + b3 * p.d.nb3) >> 2u;
  }
  barrier();
  tile(nt * BN, wbase, ncols);
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
