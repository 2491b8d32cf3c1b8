// kMulMat / kMulMatId for few activation columns (decode): dst = W^T X with
// W of any weight dtype (TYPE: DType id, dequant.glsl), X and dst F32.
//
// A workgroup of 128 threads computes RPW = 128 / TPR consecutive weight
// rows for NCOLS (<= 8) activation columns: TPR threads share a row and
// stride over its 8-element chunks (consecutive threads read consecutive
// chunks, so a warp reads a contiguous run of the row), each dequantizes its
// chunk once and accumulates it against all NCOLS columns; the TPR partial
// sums are then added in shared memory (a fixed tree: results do not depend
// on timing).
//
// Workgroups: ceil(N / RPW) row blocks (fastest) x batches. kMulMat (ID =
// 0): a batch is one (b2, b3) of X, all M = NCOLS columns of it, against
// weight matrix (b2 / (B2 / B2w), b3 / (B3 / B3w)). kMulMatId (ID = 1,
// NCOLS = 1): a batch is one (u, t) of ids: column u % X1 of token t against
// expert ids[u, t]; an id outside [0, E) is reported (ERR_ID_RANGE) and its
// output column written as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint NCOLS = 1;  // 1..8
layout(constant_id = 2) const uint TPR = 32;   // threads per row: power of 2, <= 128
layout(constant_id = 3) const uint ID = 0;     // 1: mul_mat_id

const uint WG = 128u;
const uint MAX_COLS = 8u;

layout(std430, binding = 0) readonly buffer Params {
  Tensor w;    // [K, N, B2w, B3w]; mul_mat_id: [K, N, E]
  Tensor x;    // F32 [K, M, B2, B3]; mul_mat_id: [K, X1, T]
  Tensor d;    // F32 [N, M, B2, B3]; mul_mat_id: [N, n_used, T]
  Tensor ids;  // mul_mat_id: I32 [n_used, T] (mul_mat: unused)
} p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer X { float x_f[]; };
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };
layout(std430, binding = 5) readonly buffer Ids { int ids_i[]; };

#include "dequant.glsl"

shared float red[MAX_COLS * WG];

void main() {
  const uint RPW = WG / TPR;
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % TPR;
  const uint K = p.w.ne0, N = p.w.ne1;
  const uint n_blocks = (N + RPW - 1u) / RPW;
  const uint g = group_index();
  const uint batch = g / n_blocks;
  const uint n = (g % n_blocks) * RPW + tid / TPR;
  const uint n_batches = ID == 0u ? p.x.ne2 * p.x.ne3 : p.ids.ne0 * p.ids.ne1;
  if (batch >= n_batches) return;  // whole workgroup

  uint wbase = 0u;
  uint xcol[MAX_COLS];  // word index of each column's x row
  uint dcol[MAX_COLS];  // word index of each column's dst row
  bool valid = true;
  if (ID == 0u) {
    const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
    wbase = p.w.off + (b2 / (p.x.ne2 / p.w.ne2)) * p.w.nb2 + (b3 / (p.x.ne3 / p.w.ne3)) * p.w.nb3;
    for (uint m = 0u; m < NCOLS; ++m) {
      xcol[m] = (p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u;
      dcol[m] = (p.d.off + m * p.d.nb1 + b2 * p.d.nb2 + b3 * p.d.nb3) >> 2u;
    }
  } else {
    const uint u = batch % p.ids.ne0, t = batch / p.ids.ne0;
    const int e = ids_i[(p.ids.off + u * p.ids.nb0 + t * p.ids.nb1) >> 2u];
    if (e < 0 || e >= int(p.w.ne2)) {
      valid = false;
      if (tid == 0u) report_error(ERR_ID_RANGE, uint(e));
    } else {
      wbase = p.w.off + uint(e) * p.w.nb2;
    }
    xcol[0] = (p.x.off + (u % p.x.ne1) * p.x.nb1 + t * p.x.nb2) >> 2u;
    dcol[0] = (p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u;
  }

  float acc[MAX_COLS];
  for (uint m = 0u; m < NCOLS; ++m) acc[m] = 0.0;
  if (valid && n < N) {
    const uint rb = wbase + n * p.w.nb1;
    const uint n_chunks = (K + 7u) / 8u;
    for (uint c = lane; c < n_chunks; c += TPR) {
      vec4 a, b;
      dequant8(TYPE, rb, c, K, a, b);
      const uint k0 = 8u * c;
      if (k0 + 8u <= K) {
        for (uint m = 0u; m < NCOLS; ++m) {
          const uint xo = xcol[m] + k0;
          const vec4 xa = vec4(x_f[xo], x_f[xo + 1u], x_f[xo + 2u], x_f[xo + 3u]);
          const vec4 xb = vec4(x_f[xo + 4u], x_f[xo + 5u], x_f[xo + 6u], x_f[xo + 7u]);
          acc[m] += dot(a, xa) + dot(b, xb);
        }
      } else {
        const float wv[8] = float[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
        for (uint m = 0u; m < NCOLS; ++m) {
          for (uint i = 0u; k0 + i < K; ++i) acc[m] += wv[i] * x_f[xcol[m] + k0 + i];
        }
      }
    }
  }

  for (uint m = 0u; m < NCOLS; ++m) red[m * WG + tid] = acc[m];
  barrier();
  for (uint s = TPR / 2u; s > 0u; s >>= 1u) {
    if (lane < s) {
      for (uint m = 0u; m < NCOLS; ++m) red[m * WG + tid] += red[m * WG + tid + s];
    }
    barrier();
  }
  if (n < N) {
    for (uint m = lane; m < NCOLS; m += TPR) d_f[dcol[m] + n] = red[m * WG + tid - lane];
  }
}
