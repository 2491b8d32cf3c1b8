// kSsmScan (Mamba-2 selective scan), one invocation per state row: row p of
// head h of sequence s keeps its N state values in registers across all T
// tokens (rows only meet the token's shared B, C and dt). Per token, as the
// reference (backend/cpu/ref/ssm_scan.cc):
//   sp = dt > 20 ? dt : log(1 + exp(dt));  dA = exp(sp * A[h]);
//   xdt = x[p] * sp;  S[i] = S[i] * dA + B[i] * xdt;  acc += S[i] * C[i]
// (i ascending), y[p] = acc. All arithmetic `precise`: no fma contraction.
// exp and log are the device's, so results are close to the CPU's, not
// bit-identical. Each invocation reads its state values before it writes
// them and no two share one: state_out may alias the state (in place).
// kSsmScanUpdate (UPDATE = 1): one token per sequence, the state read from
// and written back to pool slot ids[s] (state and state_out: the pool
// [N, P, H, n_slots]); the same code, so the fused step is bit-identical
// to gather, plain scan, scatter. Explicit destination slots are declined
// by the host (a sequence could read a slot another invocation writes).
// Slot errors: state_slots_check.comp runs first and this writes nothing.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "recurrent_interface.h"
#include "flat_index.glsl"

layout(local_size_x = kSsmScanWorkgroup) in;
layout(constant_id = 0) const uint N = 16u;  // state values per row (d_state)
layout(constant_id = 1) const uint UPDATE = 0u;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SSM_SCAN_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer Dt { float dt_f[]; };
layout(std430, binding = 4) readonly buffer A { float a_f[]; };
layout(std430, binding = 5) readonly buffer B { float b_f[]; };
layout(std430, binding = 6) readonly buffer C { float c_f[]; };
layout(std430, binding = 7) readonly buffer State { float st_f[]; };
layout(std430, binding = 8) writeonly buffer Y { float y_f[]; };
layout(std430, binding = 9) writeonly buffer StateOut { float so_f[]; };
layout(std430, binding = 10) readonly buffer Ids { int ids_i[]; };

void main() {
  if (UPDATE != 0u && err_code != 0u) return;  // a slot check (or an earlier kernel) failed
  const Tensor x = p.x;
  const uint n_p = x.ne0, n_h = x.ne1, n_t = x.ne2, n_s = x.ne3;
  const uint e = group_index() * kSsmScanWorkgroup + gl_LocalInvocationID.x;
  if (e >= n_p * n_h * n_s) return;
  const uint r = e % n_p;
  const uint h = (e / n_p) % n_h;
  const uint s = e / (n_p * n_h);
  const uint g = h / p.heads_per_group;
  const Tensor st = p.state;
  const Tensor dt = p.dt;
  const Tensor b = p.b;
  const Tensor c = p.c;
  const Tensor y = p.y;
  uint slot = s;  // the state's sequence index, or its pool slot
  if (UPDATE != 0u) {
    const int id = ids_i[flat_elem_off(p.ids, s) >> 2];
    if (id < 0 || uint(id) >= st.ne3) return;  // reported by the check
    slot = uint(id);
  }
  float v[N];
  for (uint i = 0u; i < N; ++i) v[i] = st_f[elem_off(st, i, r, h, slot) >> 2];
  const float a_h = a_f[flat_elem_off(p.a, h) >> 2];
  for (uint t = 0u; t < n_t; ++t) {
    const float d = dt_f[elem_off(dt, h, t, s, 0u) >> 2];
    precise float sp = d > 20.0 ? d : log(1.0 + exp(d));
    precise float da = exp(sp * a_h);
    precise float xdt = x_f[elem_off(x, r, h, t, s) >> 2] * sp;
    const uint bo = row_off(b, g, t, s) >> 2;
    const uint co = row_off(c, g, t, s) >> 2;
    precise float acc = 0.0;
    for (uint i = 0u; i < N; ++i) {
      precise float u = v[i] * da + b_f[bo + i] * xdt;
      v[i] = u;
      precise float sum = acc + u * c_f[co + i];
      acc = sum;
    }
    y_f[elem_off(y, r, h, t, s) >> 2] = acc;
  }
  const Tensor so = p.state_out;
  for (uint i = 0u; i < N; ++i) so_f[elem_off(so, i, r, h, slot) >> 2] = v[i];
}
