// kMulMatId's int8 path once the (u, t) pairs per expert are many
// (prefill): dst[:, u, t] = W[:, :, ids[u, t]]^T x[:, u % X1, t] with W of a
// type mul_mat_q8.glsl's q8_weight_block() reads (TYPE: DType id) and x
// already quantized by quant_act_q8.comp (each token's row once, shared by
// the experts it chose; mat_interface.h's block layout).
//
// Workgroups: N tiles (fastest) x E experts. The workgroup of expert e
// scans WG ids at a time, collects the pairs that chose e in shared memory
// and computes a tile of mul_mat_q8_tile.glsl (64 weight rows x 64 pairs)
// whenever 64 are collected (and once more for the rest at the end), so
// each expert slice is read once per 64 pairs (mul_mat.comp's ID mode). The
// tile's sums are mul_mat_q8.glsl's, bit for bit as
// mul_mat_vec_q8.comp's ID mode: a pair's output depends neither on its tile
// slot nor on the other pairs. An id outside [0, E) is reported
// (kErrIdRange) by the expert-0 workgroups, which also write its output
// column as zeros.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "mat_interface.h"

layout(local_size_x_id = 2) in;
layout(constant_id = 0) const uint TYPE = 0;

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

#include "mul_mat_q8_tile.glsl"

const uint SCAN = WG;  // ids examined per round

shared uint col_q[BM];         // word index of slot m's quantized block 0
shared uint col_d[BM];         // word index of slot m's dst column
shared uint pairs[BM + SCAN];  // collected pair indices u + n_used * t
shared uint n_pairs;

// Tile slot m's data: where fill_pair_columns() put them.
uint q8_tile_x_block0(uvec4 at, uint m) { return col_q[m]; }
uint q8_tile_dst(uvec4 at, uint m) { return col_d[m]; }

// The tile of weight rows n0 .. n0+63 of the expert at byte wbase against
// slots 0 .. ncols-1 (col_q / col_d filled). Ends with a barrier.
void tile(uint n0, uint wbase, uint ncols) {
  q8_tile(n0, wbase, ncols, uvec4(0u));
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
