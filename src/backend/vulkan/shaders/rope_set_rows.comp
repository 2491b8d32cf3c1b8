// kRopeSetRows: rope.comp's rotation of x into d, with the K and V cache
// writes of the same step, in one dispatch.
//
// Workgroups [0, G): rope.comp's work items (one per rotary pair or
// pass-through dim of each (head, token) row, kElementWorkgroup per
// workgroup, the arithmetic of rope_math.glsl); an item of a K head (the last HK heads of
// a token, from hk0 on) writes the values it writes to d to the K table
// too. Workgroups [G, G + T): v's row t to the V table, one invocation per
// element (F32) or 32-bit word (two-byte elements), as set_rows.comp.
// Tables F32, F16 or BF16 (spec KDT, VDT: kDtype*; the host runs rope and
// set_rows for Q8_0 tables); conversions by half_convert.glsl, so the bytes
// are set_rows.comp's. A two-byte element whose word another item also
// writes is merged in with atomics (each item touches only its half).
//
// set_rows' rules: a slot outside the table is reported (kErrIdRange) and
// its row not written; with duplicate slots the last token wins (a token
// writes nothing when a later token names its slot: the invocations of a
// workgroup scan the later slots together, once per token of its items).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "flat_index.glsl"
#include "rope_interface.h"
#include "half_convert.glsl"

layout(local_size_x = kElementWorkgroup) in;
layout(constant_id = 0) const uint MODE = kRopeModeNormal;
layout(constant_id = 1) const bool HAS_FF = false;
layout(constant_id = 2) const uint KDT = kDtypeF32;  // K table: kDtypeF32, F16 or BF16
layout(constant_id = 3) const uint VDT = kDtypeF32;  // V table

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_ROPE_SET_ROWS_PARAMS } p;
layout(std430, binding = 2) readonly buffer X { float x_f[]; };
layout(std430, binding = 3) readonly buffer P { int pos_i[]; };
layout(std430, binding = 4) readonly buffer F { float ff_f[]; };
layout(std430, binding = 5) writeonly buffer D { float d_f[]; };
layout(std430, binding = 6) readonly buffer S { int slots_i[]; };
layout(std430, binding = 7) readonly buffer Vr { uint v_u[]; };
layout(std430, binding = 8) buffer KT { uint kt_u[]; };
layout(std430, binding = 9) buffer VT { uint vt_u[]; };

#include "rope_math.glsl"

int slot_at(uint t) { return slots_i[flat_elem_off(p.slots, t) >> 2]; }

#include "later_slot.glsl"

// The table row token t writes, called by every invocation of the workgroup
// with the same t: -1 when its slot is outside the table (reported) or a
// later token names the same slot (the invocations share that scan).
int write_slot(uint t, uint n_tok, uint n_slots) {
  const int s = slot_at(t);
  if (s < 0 || uint(s) >= n_slots) {  // the same for the whole workgroup
    if (gl_LocalInvocationID.x == 0u) report_error(kErrIdRange, uint(s));
    return -1;
  }
  const bool dup = slot_named_later(t, n_tok, s);
  barrier();  // before the next token's call resets the flag
  return dup ? -1 : s;
}

uint half_bits(uint dt, uint x) { return dt == kDtypeF16 ? f32_to_f16(x) : f32_to_bf16(x); }

// Element at byte b of the K table := v.
void put_k(uint b, float v) {
  const uint x = floatBitsToUint(v);
  const uint w = b >> 2;
  if (KDT == kDtypeF32) {
    kt_u[w] = x;
  } else if ((b & 2u) == 0u) {
    atomicAnd(kt_u[w], 0xffff0000u);
    atomicOr(kt_u[w], half_bits(KDT, x));
  } else {
    atomicAnd(kt_u[w], 0x0000ffffu);
    atomicOr(kt_u[w], half_bits(KDT, x) << 16);
  }
}

// v's row t into the V table (set_rows.comp's loops for F32 and two-byte
// elements).
void v_row(uint t, uint n_tok) {
  if (t >= n_tok) return;
  const int slot = write_slot(t, n_tok, p.vt.ne1);
  if (slot < 0) return;
  const uint tid = gl_LocalInvocationID.x;
  const uint src = flat_row_off(p.v, t);
  const uint src_nb0 = p.v.nb0;
  const uint dst = p.vt.off + uint(slot) * p.vt.nb1;
  const uint n_cols = p.v.ne0;
  if (VDT == kDtypeF32) {
    const uint dst_nb0 = p.vt.nb0;
    for (uint c = tid; c < n_cols; c += kElementWorkgroup) {
      vt_u[(dst + c * dst_nb0) >> 2] = v_u[(src + c * src_nb0) >> 2];
    }
    return;
  }
  // Word w holds the elements hi - 1 and hi, hi = (4w - dst) / 2 + 1 (hi =
  // 0 and no low element when the row starts in the word's upper half).
  const uint w0 = dst >> 2;
  const uint w_end = (dst + 2u * n_cols + 3u) >> 2;
  for (uint w = w0 + tid; w < w_end; w += kElementWorkgroup) {
    const bool has_lo = 4u * w >= dst;
    const uint hi = has_lo ? (4u * w - dst) / 2u + 1u : 0u;
    const bool has_hi = hi < n_cols;
    const uint v_lo = has_lo ? half_bits(VDT, v_u[(src + (hi - 1u) * src_nb0) >> 2]) : 0u;
    const uint v_hi = has_hi ? half_bits(VDT, v_u[(src + hi * src_nb0) >> 2]) : 0u;
    if (has_lo && has_hi) {
      vt_u[w] = v_lo | (v_hi << 16);
    } else if (has_lo) {
      atomicAnd(vt_u[w], 0xffff0000u);
      atomicOr(vt_u[w], v_lo);
    } else {
      atomicAnd(vt_u[w], 0x0000ffffu);
      atomicOr(vt_u[w], v_hi << 16);
    }
  }
}

void main() {
  const uint g = group_index();
  const uint n_tok = p.x.ne2;
  if (g >= p.rope_groups) {  // the whole workgroup
    v_row(g - p.rope_groups, n_tok);
    return;
  }
  const uint half_dims = p.n_dims / 2u;
  const uint per_row = half_dims + (p.x.ne0 - p.n_dims);
  const uint tok_items = per_row * p.x.ne1;  // work items of one token
  const uint total = tok_items * n_tok;
  const uint w0 = g * kElementWorkgroup;  // the workgroup's first item
  const uint w = w0 + gl_LocalInvocationID.x;
  const bool live = w < total;
  const uint k = w % per_row;
  const uint h = (w / per_row) % p.x.ne1, tok = (w / per_row) / p.x.ne1;
  const bool pair = k < half_dims;
  uint ia = 0u, ib = 0u;
  float d0 = 0.0, d1 = 0.0;
  if (live) {
    const uint xo = row_off(p.x, h, tok, 0u);
    const uint dof = row_off(p.d, h, tok, 0u);
    if (pair) {
      ia = MODE == kRopeModeNormal ? 2u * k : k;
      ib = MODE == kRopeModeNormal ? 2u * k + 1u : k + half_dims;
      const float x0 = x_f[(xo + ia * p.x.nb0) >> 2];
      const float x1 = x_f[(xo + ib * p.x.nb0) >> 2];
      rope_pair(k, tok, n_tok, x0, x1, d0, d1);
      d_f[(dof + ia * p.d.nb0) >> 2] = d0;
      d_f[(dof + ib * p.d.nb0) >> 2] = d1;
    } else {  // pass-through dim
      ia = p.n_dims + (k - half_dims);
      d0 = x_f[(xo + ia * p.x.nb0) >> 2];
      d_f[(dof + ia * p.d.nb0) >> 2] = d0;
    }
  }
  // The K table rows of the tokens whose K heads (the last HK heads of a
  // token, from hk0 on) have items here, one token at a time for the whole
  // workgroup (write_slot's shared scan).
  const uint last = min(w0 + kElementWorkgroup, total) - 1u;
  for (uint t = w0 / tok_items; t <= last / tok_items; ++t) {
    const uint k_first = max(w0, t * tok_items + p.hk0 * per_row);
    if (k_first > min(last, (t + 1u) * tok_items - 1u)) continue;  // no K item of t here
    const int slot = write_slot(t, n_tok, p.kt.ne1);
    if (slot < 0 || !live || tok != t || h < p.hk0) continue;
    const uint base = p.kt.off + uint(slot) * p.kt.nb1 + (h - p.hk0) * p.x.ne0 * p.kt.nb0;
    put_k(base + ia * p.kt.nb0, d0);
    if (pair) put_k(base + ib * p.kt.nb0, d1);
  }
}
