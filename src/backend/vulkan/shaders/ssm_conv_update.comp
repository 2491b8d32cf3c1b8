// kSsmConvUpdate: one decode step of the depthwise causal convolution on a
// state pool. Sequence s, channel c: win = [taps of slot ids[s], x[c, s]],
// dst[c, s] = act(sum_j win[j] * w[j, c] + bias[c]) (ssm_conv.glsl, the
// plain op's arithmetic), and slot dst_slots[s] (or ids[s]) receives
// win[1 .. K-1].
//
// The slot checks run first (state_slots_check.comp); this dispatch returns
// at once when an error is set, so a bad op writes nothing.
//   STAGED = 0 (destinations = ids, which are then distinct): one invocation
//     per (c, s), channels fastest; it reads its own slot's taps before it
//     writes them, and nobody else touches them.
//   STAGED = 1 (explicit destinations: a sequence may read a slot another one
//     writes): one workgroup per block of CB channels owns those channels of
//     every slot. It copies the old taps of all (channel, sequence) pairs into
//     shared memory, waits, then computes and writes: every read of the old
//     state happens before any write to it.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "recurrent_interface.h"
#include "flat_index.glsl"
#include "ssm_conv.glsl"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint K = 4;  // kernel width (>= 2)
layout(constant_id = 1) const uint STAGED = 0u;
layout(constant_id = 2) const uint STAGE_FLOATS = 1u;  // STAGED: CB * n_seq * (K - 1)

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SSM_CONV_UPDATE_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer W { float w_f[]; };
layout(std430, binding = 4) readonly buffer B { float b_f[]; };
layout(std430, binding = 5) buffer Pool { float pool_f[]; };
layout(std430, binding = 6) readonly buffer Ids { int ids_i[]; };
layout(std430, binding = 7) readonly buffer DstSlots { int dst_i[]; };
layout(std430, binding = 8) writeonly buffer D { float d_f[]; };

shared float stage[STAGE_FLOATS];

float win[K];  // the invocation's current window, oldest first

// Slot of sequence s in `t` (ids or dst_slots), or -1 when out of range
// (reported by state_slots_check.comp; read here too so nothing runs off the pool).
int slot_of(Tensor t, bool dst, uint s) {
  const int v = dst ? dst_i[flat_elem_off(t, s) >> 2] : ids_i[flat_elem_off(t, s) >> 2];
  return v >= 0 && uint(v) < p.pool.ne2 ? v : -1;
}

// win[0 .. K-2] holds the old taps: completes the window with x[c, s],
// writes dst[c, s] and the shifted taps to slot `to`.
void finish(uint c, uint s, uint to) {
  win[K - 1u] = x_f[elem_off(p.x, c, s, 0u, 0u) >> 2];
  const Tensor w = p.w;
  float acc = 0.0;
  for (uint j = 0u; j < K; ++j) acc = conv_tap(acc, win[j], w_f[elem_off(w, j, c, 0u, 0u) >> 2]);
  const float b = p.has_bias != 0u ? b_f[flat_elem_off(p.bias, c) >> 2] : 0.0;
  d_f[elem_off(p.d, c, s, 0u, 0u) >> 2] = conv_finish(acc, b, p.silu != 0u);
  const Tensor pool = p.pool;
  for (uint j = 0u; j + 1u < K; ++j) pool_f[elem_off(pool, j, c, to, 0u) >> 2] = win[j + 1u];
}

void main() {
  if (err_code != 0u) return;  // a slot check (or an earlier kernel) failed
  const uint tid = gl_LocalInvocationID.x;
  const uint n_c = p.d.ne0, n_seq = p.d.ne1;
  const bool has_dst = p.has_dst != 0u;
  const Tensor pool = p.pool;
  if (STAGED == 0u) {
    const uint e = group_index() * kElementWorkgroup + tid;
    if (e >= n_c * n_seq) return;
    const uint c = e % n_c, s = e / n_c;
    const int from = slot_of(p.ids, false, s);
    const int to = has_dst ? slot_of(p.dst_slots, true, s) : from;
    if (from < 0 || to < 0) return;
    for (uint j = 0u; j + 1u < K; ++j) win[j] = pool_f[elem_off(pool, j, c, uint(from), 0u) >> 2];
    finish(c, s, uint(to));
    return;
  }
  const uint c0 = group_index() * p.cb;
  if (c0 >= n_c) return;
  const uint cb = min(p.cb, n_c - c0);
  const uint n_pairs = cb * n_seq;  // pair = (c0 + pair % cb, pair / cb)
  for (uint pr = tid; pr < n_pairs; pr += kElementWorkgroup) {
    const int from = slot_of(p.ids, false, pr / cb);
    if (from < 0) continue;
    for (uint j = 0u; j + 1u < K; ++j) {
      stage[pr * (K - 1u) + j] = pool_f[elem_off(pool, j, c0 + pr % cb, uint(from), 0u) >> 2];
    }
  }
  barrier();
  for (uint pr = tid; pr < n_pairs; pr += kElementWorkgroup) {
    const int to = has_dst ? slot_of(p.dst_slots, true, pr / cb) : slot_of(p.ids, false, pr / cb);
    if (to < 0 || slot_of(p.ids, false, pr / cb) < 0) continue;
    for (uint j = 0u; j + 1u < K; ++j) win[j] = stage[pr * (K - 1u) + j];
    finish(c0 + pr % cb, pr / cb, uint(to));
  }
}
