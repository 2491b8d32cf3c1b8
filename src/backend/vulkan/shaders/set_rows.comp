// kSetRows: table[:, slots[i]] = convert(rows[:, i]) for an F32, F16, BF16 or
// Q8_0 table. One workgroup per source row i, 256 invocations over its columns.
//
// Duplicate slots: the last row wins (later_slot.glsl: row i's workgroup
// first scans the slots of rows i+1 .. n-1 and writes nothing when one of
// them names the same slot).
//
// F16 / BF16 rows are written as 32-bit words (two elements each, one
// invocation per word); a word the row shares with its neighbour (an odd
// element offset or count) is merged with atomics so the other half keeps
// its bytes. The conversions are integer code, bit-exact with core/fp16.h
// (round to nearest even, subnormals kept, NaN quieted) whatever the
// driver's float rounding and denormal modes.
//
// Q8_0 rows (34-byte blocks {f16 d, int8 qs[32]}, so a row is only 2-byte
// aligned) are quantized bit-exactly as the reference quantizer does
// (quant_q8_0.glsl), in chunks of QB blocks: first one invocation per block
// finds its scale and inverse (into shared memory), then one invocation per
// 32-bit word of the chunk's bytes assembles and writes the word. A word
// belongs to the chunk holding its first byte of the row (it may reach up to
// 3 bytes into the next block, whose scale the chunk therefore also
// computes). Words the row shares with a neighbouring row are merged with
// atomics, as for F16.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "attention_interface.h"
#include "quant_q8_0.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint DT = kDtypeF32;  // table dtype: kDtypeF32, F16, BF16 or Q8_0

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_SET_ROWS_PARAMS } p;
layout(std430, binding = 2) readonly buffer Rows { uint rows_u[]; };
layout(std430, binding = 3) readonly buffer Slots { int slots_i[]; };
layout(std430, binding = 4) buffer Table { uint table_u[]; };

const uint QB = 128u;          // Q8_0 blocks per chunk
shared uint q8_d16[QB + 1u];  // the chunk's blocks (and the next one's): f16 d
shared uint q8_id[QB + 1u];   // and 1 / d (or 0) as f32 bits

Tensor slots_t;  // p.slots, read once (the parameter buffer may live in host memory)

int slot_at(uint i) {
  return slots_i[(slots_t.off + (i % slots_t.ne0) * slots_t.nb0 + (i / slots_t.ne0) * slots_t.nb1) >> 2];
}

#include "half_convert.glsl"
#include "later_slot.glsl"

uint to_half(uint x) { return DT == kDtypeF16 ? f32_to_f16(x) : f32_to_bf16(x); }

// Q8_0 row: n_cols / 32 blocks of 34 bytes at byte dst of the table, from the
// F32 elements at src (byte stride src_nb0).
void write_q8_0_row(uint src, uint src_nb0, uint dst, uint n_cols) {
  const uint tid = gl_LocalInvocationID.x;
  const uint n_blk = n_cols / 32u;
  const uint row_end = dst + 34u * n_blk;
  for (uint c0 = 0u; c0 < n_blk; c0 += QB) {
    const uint n_here = min(QB + 1u, n_blk - c0);  // blocks whose scales the chunk reads
    for (uint b = tid; b < n_here; b += 256u) {
      const uint x0 = src + 32u * (c0 + b) * src_nb0;
      uint amax = 0u;
      for (uint j = 0u; j < 32u; ++j) amax = max(amax, q8_abs_bits(rows_u[(x0 + j * src_nb0) >> 2]));
      const uint d = q8_scale(amax);
      q8_d16[b] = f32_to_f16(d);
      q8_id[b] = q8_inverse(d);
    }
    barrier();
    const uint chunk_begin = dst + 34u * c0;
    const uint chunk_end = dst + 34u * min(c0 + QB, n_blk);
    const uint w_begin = c0 == 0u ? dst >> 2 : (chunk_begin + 3u) >> 2;
    const uint w_end = (chunk_end + 3u) >> 2;
    for (uint w = w_begin + tid; w < w_end; w += 256u) {
      uint val = 0u, mask = 0u;
      for (uint k = 0u; k < 4u; ++k) {
        const uint a = 4u * w + k;
        if (a < dst || a >= row_end) continue;
        const uint o = a - dst;
        const uint blk = o / 34u;
        const uint in_blk = o - 34u * blk;
        const uint lb = blk - c0;  // <= QB: the word starts inside the chunk
        uint byte_ = 0u;
        if (in_blk < 2u) {
          byte_ = (q8_d16[lb] >> (8u * in_blk)) & 0xffu;
        } else {
          const uint x = rows_u[(src + (32u * blk + in_blk - 2u) * src_nb0) >> 2];
          byte_ = uint(q8_code(x, q8_id[lb])) & 0xffu;
        }
        val |= byte_ << (8u * k);
        mask |= 0xffu << (8u * k);
      }
      if (mask == 0xffffffffu) {
        table_u[w] = val;
      } else {
        atomicAnd(table_u[w], ~mask);
        atomicOr(table_u[w], val);
      }
    }
    barrier();  // the next chunk overwrites the scales
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint i = group_index();
  const uint n = p.n;
  if (i >= n) return;
  slots_t = p.slots;
  const int slot = slot_at(i);
  if (slot < 0 || uint(slot) >= p.table.ne1) {
    if (tid == 0u) report_error(kErrIdRange, uint(slot));
    return;
  }
  if (slot_named_later(i, n, slot)) return;

  const uvec3 r = unflatten_rows(i, p.rows.ne1, p.rows.ne2);
  const uint src = row_off(p.rows, r.x, r.y, r.z);
  const uint dst = p.table.off + uint(slot) * p.table.nb1;
  const uint n_cols = p.rows.ne0;
  const uint src_nb0 = p.rows.nb0;  // read once: the parameter buffer may live in host memory
  if (DT == kDtypeQ8_0) {
    write_q8_0_row(src, src_nb0, dst, n_cols);
    return;
  }
  if (DT == kDtypeF32) {
    const uint dst_nb0 = p.table.nb0;
    for (uint c = tid; c < n_cols; c += 256u) {
      table_u[(dst + c * dst_nb0) >> 2] = rows_u[(src + c * src_nb0) >> 2];
    }
    return;
  }
  // Two-byte elements (nb0 == 2): element c at byte dst + 2c. Word w holds the
  // elements hi - 1 and hi, hi = (4w - dst) / 2 + 1 (hi = 0 and no low element
  // when the row starts in the word's upper half).
  const uint w0 = dst >> 2;
  const uint w_end = (dst + 2u * n_cols + 3u) >> 2;
  for (uint w = w0 + tid; w < w_end; w += 256u) {
    const bool has_lo = 4u * w >= dst;
    const uint hi = has_lo ? (4u * w - dst) / 2u + 1u : 0u;
    const bool has_hi = hi < n_cols;
    const uint v_lo = has_lo ? to_half(rows_u[(src + (hi - 1u) * src_nb0) >> 2]) : 0u;
    const uint v_hi = has_hi ? to_half(rows_u[(src + hi * src_nb0) >> 2]) : 0u;
    if (has_lo && has_hi) {
      table_u[w] = v_lo | (v_hi << 16);
    } else if (has_lo) {
      atomicAnd(table_u[w], 0xffff0000u);
      atomicOr(table_u[w], v_lo);
    } else {
      atomicAnd(table_u[w], 0x0000ffffu);
      atomicOr(table_u[w], v_hi << 16);
    }
  }
}
