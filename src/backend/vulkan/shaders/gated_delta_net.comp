// kGatedDeltaNet (token-by-token form) and kGatedDeltaNetUpdate (UPDATE = 1:
// one token per sequence, the state read from pool slot ids[s] and written to
// slot dst_slots[s] or ids[s]). One code path for both, so the fused update
// is bit-identical to gather, the plain op with T = 1, scatter on one device.
//
// Rows S[v, :] of a head's state are independent, so a workgroup of WG
// invocations takes ROWS = WG / L consecutive rows of one (value head,
// sequence) and keeps them in registers across all T tokens: the L lanes of
// a row hold EPL elements each, lane l the 4-element groups l, l + L,
// l + 2L, ... (element i = 4 (c L + l) + e for c < EPL / 4, e < 4; those at
// or past S_k are zeros). Neighbouring lanes read neighbouring 16 bytes of a
// row (VEC4: as vec4 loads), so each state element is read once and the
// reads are coalesced. Per token (reference: backend/cpu/ref/gated_delta_net.cc):
//   q, k  raw loads of the key head's vectors (the next token's are issued
//         before this token's arithmetic);
//   norm  with l2_norm: lane partial sums of squares (c then e ascending),
//         then every lane adds its row group's L partials in lane order from
//         shared memory: x / max(sqrt(sum), eps); then q *= scale;
//   S *= exp(g); m = sum_i S[v, i] k[i] (lane partials, then lanes in order);
//   d = beta (v[v] - m); S[v, i] += d k[i]; out[v] = sum_i S[v, i] q[i] (same
//   order). Every lane of a row computes the same sums, so no broadcast.
// Three barriers per token (two without the norm). All arithmetic `precise`:
// no fma contracted in one specialization and not in another.
// Each invocation reads its state elements before it writes them, and no two
// invocations share one, so state_out may alias the state (in place); the
// update requires distinct destinations (its host side declines explicit
// dst_slots, under which a sequence could read a slot that another
// workgroup writes). Slot errors: state_slots_check.comp runs first and this
// dispatch returns at once when the error word is set.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "recurrent_interface.h"
#include "flat_index.glsl"

layout(local_size_x_id = 0) in;                // WG = ROWS * L
layout(constant_id = 1) const uint L = 8u;     // lanes per state row (divides WG)
layout(constant_id = 2) const uint EPL = 16u;  // elements per lane, multiple of 4; L * EPL >= S_k
layout(constant_id = 3) const uint UPDATE = 0u;
layout(constant_id = 4) const uint VEC4 = 0u;  // q, k, state, state_out rows as vec4

const uint WG = gl_WorkGroupSize.x;
const uint ROWS = WG / L;
const uint G4 = EPL / 4u;  // 4-element groups per lane

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_GDN_PARAMS } p;
layout(std430, binding = 2) readonly buffer Q { float q_f[]; };
layout(std430, binding = 3) readonly buffer K { float k_f[]; };
layout(std430, binding = 4) readonly buffer V { float v_f[]; };
layout(std430, binding = 5) readonly buffer G { float g_f[]; };
layout(std430, binding = 6) readonly buffer Beta { float beta_f[]; };
layout(std430, binding = 7) readonly buffer State { float st_f[]; };
layout(std430, binding = 8) readonly buffer Ids { int ids_i[]; };
layout(std430, binding = 9) readonly buffer DstSlots { int dst_i[]; };
layout(std430, binding = 10) writeonly buffer O { float o_f[]; };
layout(std430, binding = 11) writeonly buffer StateOut { float so_f[]; };
layout(std430, binding = 2) readonly buffer Q4 { vec4 q_v[]; };
layout(std430, binding = 3) readonly buffer K4 { vec4 k_v[]; };
layout(std430, binding = 7) readonly buffer State4 { vec4 st_v[]; };
layout(std430, binding = 11) writeonly buffer StateOut4 { vec4 so_v[]; };

shared float red_n[2u * WG];  // norm partials: k at tid, q at WG + tid
shared float red_m[WG];
shared float red_o[WG];

float S[EPL];                // the row's elements this lane holds
float kr[EPL], qr[EPL];      // raw k, q of the next token

// Loads this lane's elements of the rows at byte offsets ko, qo (S_k long).
void load_kq(uint ko, uint qo, uint lane, uint n) {
  for (uint c = 0u; c < G4; ++c) {
    const uint i0 = 4u * (c * L + lane);
    if (VEC4 != 0u) {
      const vec4 kv = i0 < n ? k_v[(ko >> 4) + c * L + lane] : vec4(0.0);
      const vec4 qv = i0 < n ? q_v[(qo >> 4) + c * L + lane] : vec4(0.0);
      for (uint e = 0u; e < 4u; ++e) {
        kr[4u * c + e] = kv[e];
        qr[4u * c + e] = qv[e];
      }
    } else {
      const uint knb = p.k.nb0, qnb = p.q.nb0;
      for (uint e = 0u; e < 4u; ++e) {
        const uint i = i0 + e;
        kr[4u * c + e] = i < n ? k_f[(ko + i * knb) >> 2] : 0.0;
        qr[4u * c + e] = i < n ? q_f[(qo + i * qnb) >> 2] : 0.0;
      }
    }
  }
}

// Sum of the L lanes' values of row group `grp` in `buf`, in lane order.
#define ROW_SUM(buf, base, grp, res)                                               \
  {                                                                                \
    precise float acc_ = 0.0;                                                      \
    for (uint j_ = 0u; j_ < L; ++j_) acc_ = acc_ + buf[(base) + (grp) * L + j_]; \
    res = acc_;                                                                    \
  }

float norm_inv(float ss, float eps) {
  precise float r = 1.0 / max(sqrt(ss), eps);
  return r;
}

void main() {
  if (UPDATE != 0u && err_code != 0u) return;  // a slot check (or an earlier kernel) failed
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % L, grp = tid / L;
  const uint wg = group_index();
  const uint n_heads = p.v.ne1, n_seq = p.v.ne3, n_t = p.v.ne2;
  const uint rb = wg % p.row_blocks, hs = wg / p.row_blocks;
  if (hs >= n_heads * n_seq) return;
  const uint h = hs % n_heads, s = hs / n_heads;
  const uint kh = p.head_mod != 0u ? h % p.h_k : h / p.ratio;
  const uint n_k = p.q.ne0, n_v = p.v.ne0;
  const uint row = rb * ROWS + grp;
  const bool live = row < n_v;

  uint from = s, to = s;
  if (UPDATE != 0u) {
    const int a = ids_i[flat_elem_off(p.ids, s) >> 2];
    const int b = p.has_dst != 0u ? dst_i[flat_elem_off(p.dst_slots, s) >> 2] : a;
    const uint n_slots = p.state.ne3;
    if (a < 0 || uint(a) >= n_slots || b < 0 || uint(b) >= n_slots) return;  // reported by the check
    from = uint(a);
    to = uint(b);
  }

  const Tensor st = p.state, so = p.state_out;
  const uint si = row_off(st, live ? row : 0u, h, from);
  const uint sout = row_off(so, live ? row : 0u, h, to);
  for (uint c = 0u; c < G4; ++c) {
    const uint i0 = 4u * (c * L + lane);
    if (VEC4 != 0u) {
      const vec4 x = live && i0 < n_k ? st_v[(si >> 4) + c * L + lane] : vec4(0.0);
      for (uint e = 0u; e < 4u; ++e) S[4u * c + e] = x[e];
    } else {
      for (uint e = 0u; e < 4u; ++e) {
        const uint i = i0 + e;
        S[4u * c + e] = live && i < n_k ? st_f[(si + i * st.nb0) >> 2] : 0.0;
      }
    }
  }

  const bool l2 = p.l2_norm != 0u;
  const float scale = p.scale, eps = p.eps;
  load_kq(row_off(p.k, kh, 0u, s), row_off(p.q, kh, 0u, s), lane, n_k);
  for (uint t = 0u; t < n_t; ++t) {
    float kk[EPL], qq[EPL];
    for (uint i = 0u; i < EPL; ++i) {
      kk[i] = kr[i];
      qq[i] = qr[i];
    }
    const float decay = exp(g_f[elem_off(p.g, h, t, s, 0u) >> 2]);
    const float bt = beta_f[elem_off(p.beta, h, t, s, 0u) >> 2];
    const float vt = live ? v_f[elem_off(p.v, row, h, t, s) >> 2] : 0.0;
    if (t + 1u < n_t) load_kq(row_off(p.k, kh, t + 1u, s), row_off(p.q, kh, t + 1u, s), lane, n_k);

    if (l2) {
      precise float ssk = 0.0, ssq = 0.0;
      for (uint i = 0u; i < EPL; ++i) {
        ssk = ssk + kk[i] * kk[i];
        ssq = ssq + qq[i] * qq[i];
      }
      red_n[tid] = ssk;
      red_n[WG + tid] = ssq;
      barrier();
      float tk, tq;
      ROW_SUM(red_n, 0u, grp, tk);
      ROW_SUM(red_n, WG, grp, tq);
      const float ik = norm_inv(tk, eps), iq = norm_inv(tq, eps);
      for (uint i = 0u; i < EPL; ++i) {
        precise float a = kk[i] * ik;
        precise float b = qq[i] * iq;
        kk[i] = a;
        qq[i] = b;
      }
    }
    for (uint i = 0u; i < EPL; ++i) {
      precise float b = qq[i] * scale;
      qq[i] = b;
    }

    precise float mp = 0.0;
    for (uint i = 0u; i < EPL; ++i) {
      precise float x = S[i] * decay;
      S[i] = x;
      mp = mp + x * kk[i];
    }
    red_m[tid] = mp;
    barrier();
    float m;
    ROW_SUM(red_m, 0u, grp, m);
    precise float d = bt * (vt - m);

    precise float op = 0.0;
    for (uint i = 0u; i < EPL; ++i) {
      precise float x = S[i] + d * kk[i];
      S[i] = x;
      op = op + x * qq[i];
    }
    red_o[tid] = op;
    barrier();
    float o;
    ROW_SUM(red_o, 0u, grp, o);
    if (live && lane == 0u) o_f[elem_off(p.o, row, h, t, s) >> 2] = o;
  }

  if (!live) return;
  for (uint c = 0u; c < G4; ++c) {
    const uint i0 = 4u * (c * L + lane);
    if (i0 >= n_k) break;
    if (VEC4 != 0u) {
      so_v[(sout >> 4) + c * L + lane] = vec4(S[4u * c], S[4u * c + 1u], S[4u * c + 2u], S[4u * c + 3u]);
    } else {
      for (uint e = 0u; e < 4u && i0 + e < n_k; ++e) so_f[(sout + (i0 + e) * so.nb0) >> 2] = S[4u * c + e];
    }
  }
}
