// kFlashAttn: one workgroup per (query token, GH query heads that share a KV
// head), 256 invocations that split the visible keys between them (see op.h,
// "Attention inputs"). With GH > 1 each tile's K/V words, loaded once, serve
// all the heads: each head has its own scores, running max, denominator and
// accumulators, so every head's arithmetic is the GH = 1 kernel's, bit for
// bit, and the phases below take all heads between the same barriers.
//
// Keys are visited in ascending position order in tiles of BC = 64:
//   V loads  VS key slots x CT = 256 / VS column invocations: slot v owns the
//            tile keys j = v, v + VS, ... and first loads its words of their
//            V rows into registers (they do not depend on the scores, so their
//            latency overlaps the K loads and the score reduction).
//   scores   32 key groups of TPK = 8 lanes; a key group takes keys g and
//            g + 32 of the tile, each lane a strided slice of the K row's
//            32-bit words (neighbouring lanes read neighbouring words), for
//            every head; then one invocation per (head, key) sums the 8 lane
//            partials in lane order, scales and soft-caps.
//   weights  one invocation per (head, 4 keys) finds the head's running max
//            m (the tile's scores' max, and the previous m: online softmax,
//            one rescale of the accumulators per tile) and its keys' weights
//            exp(s_j - m), into shared memory;
//   values   slot v adds w_j v_j and w_j of its keys to each head's
//            accumulator and denominator.
// Three barriers a tile, whatever GH.
// The slots share m, so their accumulators and denominators are summed (in
// slot order) at the end. Every reduction has a fixed order that depends only
// on key positions, and the arithmetic is `precise` (no contraction that a
// compiler might apply to one code path and not another): the contiguous and
// paged layouts, which differ only in where a row's address comes from, give
// byte-identical outputs.
//
// A tile's K/V words are all loaded before any arithmetic uses them, with no
// load behind a branch, so their latencies overlap (what decode, a few long
// rows per workgroup, is bound by). Keys past the tile's end load the tile's
// last visible row instead and are masked out of the max and the sums.
//
// K/V rows are read through 32-bit words (F16 / BF16: two elements a word;
// Q8_0: four codes of a block, its "word" w being codes 4w .. 4w + 3, read
// with the block's f16 scale and dequantized as the reference does, d * q);
// only visible rows are read (rows at or past kv_len never), so whatever the
// others hold cannot reach the output. K and V types are independent.
// Out-of-range seq_idx / kv_len / used block-table entries are reported and
// give zeros for that token.
//
// Split-K (SPLIT = kFaSplitPartials, then kFaSplitCombine), for batches with
// few (token, head) pairs over long caches: key positions are cut into
// pieces at multiples of split_len (a multiple of BC), and partial z of a
// pair (gl_WorkGroupID.z < n_split <= kFaMaxSplits) takes the pieces z, z +
// kFaMaxSplits, ... in ascending order, leaving its unnormalised
// accumulators, running max m and denominator l in scratch (l = 0: no
// visible key). The combine pass (one workgroup per pair) rescales the
// non-empty partials to their common max and sums them in z order, then
// folds in the sink and divides. Which keys a partial holds depends only on
// positions, never on the layout or on n_split (partials past the cache are
// empty), and a single non-empty partial passes through unchanged (its
// values are copied, not added to 0 or multiplied by exp(0)), then meets the
// same sink and division code as the one-pass kernel: contiguous and paged
// forms agree byte for byte whichever of the two paths each takes.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "attention_interface.h"
#include "mat_interface.h"

const uint NT = kFaWorkgroup;  // invocations
const uint TPK = kFaLanes;    // lanes per key when scoring
const uint KG = NT / TPK;
const uint R = 2u;     // keys per key group and tile
const uint BC = KG * R;

layout(local_size_x = kFaWorkgroup) in;
layout(constant_id = 0) const uint KT = kDtypeF32;  // K dtype: kDtypeF32, F16, BF16 or Q8_0
layout(constant_id = 1) const uint VT = kDtypeF32;  // V dtype, same codes
layout(constant_id = 2) const uint D = 128u;    // K head dim
layout(constant_id = 3) const uint DV = 128u;   // V head dim
layout(constant_id = 4) const uint KWPL = 8u;   // K words per lane: ceil(words(D) / TPK)
layout(constant_id = 5) const uint VS = 1u;     // key slots for the values
layout(constant_id = 6) const uint VWPT = 1u;   // V words per invocation: ceil(words(DV) / CT)
layout(constant_id = 7) const uint ALIGNED = 0u;  // 1: every non-q8_0 K/V row starts on and fills whole words
layout(constant_id = 8) const uint SPLIT = kFaSplitNone;  // or kFaSplitPartials, kFaSplitCombine
layout(constant_id = 9) const uint GH = 1u;  // query heads a workgroup: 1, or (kFaSplitNone) a divisor of group
layout(constant_id = 10) const uint QOUT = 0u;  // 1: the output quantized too (not kFaSplitPartials; DV % 32 == 0)

const uint KEPW = KT == kDtypeF32 ? 1u : KT == kDtypeQ8_0 ? 4u : 2u;  // elements per 32-bit word
const uint VEPW = VT == kDtypeF32 ? 1u : VT == kDtypeQ8_0 ? 4u : 2u;
const uint KE = KT == kDtypeQ8_0 ? 4u : 2u;  // register slots per word (q, accumulators)
const uint VE = VT == kDtypeQ8_0 ? 4u : 2u;
const uint WK = (D + KEPW - 1u) / KEPW;  // words per K row
const uint WV = (DV + VEPW - 1u) / VEPW;
const uint CT = NT / VS;
const float NEG_INF = -1.0 / 0.0;
const uint KPS = (BC + VS - 1u) / VS;  // keys per slot and tile

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_FLASH_ATTN_PARAMS } p;
layout(std430, binding = 2) readonly buffer Q { float q_f[]; };
layout(std430, binding = 3) readonly buffer K { uint k_u[]; };
layout(std430, binding = 4) readonly buffer V { uint v_u[]; };
layout(std430, binding = 5) readonly buffer SeqIdx { int seq_i[]; };
layout(std430, binding = 6) readonly buffer Pos { int pos_i[]; };
layout(std430, binding = 7) readonly buffer KvLen { int kvlen_i[]; };
layout(std430, binding = 8) readonly buffer Blocks { int blocks_i[]; };
layout(std430, binding = 9) readonly buffer Sinks { float sinks_f[]; };
layout(std430, binding = 10) writeonly buffer Dst { float dst_f[]; };
layout(std430, binding = 11) buffer Partials { float part_f[]; };
layout(std430, binding = 12) writeonly buffer Qo { uint qo_w[]; };

// Lane partials of the scores; the slots' accumulators at the end (VS > 1
// means VWPT = 1: NT * VE floats).
const uint PART_FLOATS = NT * VE > GH * BC * TPK ? NT * VE : GH * BC * TPK;
shared vec4 part4[(PART_FLOATS + 3u) / 4u];  // float i at part4[i / 4][i % 4]
shared vec4 sc[GH * BC / 4u];  // the tile's scores (head g's key j at sc[(g * BC + j) / 4][j % 4])
shared float wt[GH * BC];      // their weights exp(s_j - m), the same order
shared float tile_m[GH];       // each head's running max after the tile
shared float slot_l[8];       // the slots' denominators
shared uint bad_flag;
shared float outv[QOUT != 0u ? GH * DV : 1u];  // QOUT: the heads' outputs, head g's from g * DV on

#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "q8_act_block.glsl"

// QOUT: heads h0 .. h0 + GH - 1 of token tok (their outputs in outv) into
// int8 activation blocks, as quant_act_q8.comp quantizes the output for
// the next int8 product: one invocation a block. Every invocation calls it.
void quantize_out(uint tok, uint h0) {
  barrier();
  const uint hb = DV / 32u;  // blocks a head
  const uint col = tok * (p.n_head * hb);
  for (uint b = gl_LocalInvocationID.x; b < GH * hb; b += NT) {
    float v[32];
    for (uint j = 0u; j < 32u; ++j) v[j] = outv[32u * b + j];
    STORE_Q8_ACT_BLOCK(qo_w, (p.qo.off >> 2) + (col + h0 * hb + b) * kMatQ8BlockWords, v);
  }
}

// Byte offset of element i (flat, ne0 fastest) of a tensor of 4-byte values.
uint flat_off(Tensor t, uint i) {
  const uint i0 = i % t.ne0;
  uint r = i / t.ne0;
  const uint i1 = r % t.ne1;
  r /= t.ne1;
  return t.off + i0 * t.nb0 + i1 * t.nb1 + (r % t.ne2) * t.nb2 + (r / t.ne2) * t.nb3;
}

// The parameters the key loop reads, copied once into invocation-private
// variables: the parameter buffer may live in host memory (and the compiler
// cannot keep buffer values across barriers and stores on its own).
Tensor k_t, v_t, blocks_t;
bool paged;
uint block_size;
uint block_shift;  // log2(block_size) when it is a power of two, else 32

uint block_entry_off(uint b, uint s) { return blocks_t.off + b * blocks_t.nb0 + s * blocks_t.nb1; }

// kv_len[s] when it and (paged) every block-table entry covering a position
// below it are in range; -1 otherwise (the bad value is reported). Called by
// every invocation, in uniform control flow.
int checked_kv_len(uint s) {
  const uint tid = gl_LocalInvocationID.x;
  if (tid == 0u) bad_flag = 0u;
  barrier();
  const int len = kvlen_i[flat_off(p.kv_len, s) >> 2];
  const bool len_bad = len < 0 || uint(len) > p.capacity;
  if (len_bad) {
    if (tid == 0u) report_error(kErrSeqRange, uint(len));
  } else if (paged) {
    const uint used = (uint(len) + block_size - 1u) / block_size;
    for (uint b = tid; b < used; b += NT) {
      const int id = blocks_i[block_entry_off(b, s) >> 2];
      if (id < 0 || uint(id) >= p.n_blocks) {
        report_error(kErrBlockRange, uint(id));
        atomicOr(bad_flag, 1u);
      }
    }
  }
  barrier();
  const bool bad = len_bad || bad_flag != 0u;
  barrier();  // bad_flag is read before anyone resets it
  return bad ? -1 : len;
}

// Byte offset of the row (kv head kvh, position pp) of sequence s in k or v.
uint kv_row(Tensor t, uint s, uint kvh, uint pp) {
  uint blk = s;
  uint r = pp;
  if (paged) {
    const uint b = block_shift < 32u ? pp >> block_shift : pp / block_size;
    blk = uint(blocks_i[block_entry_off(b, s) >> 2]);
    r = pp - b * block_size;
  }
  return t.off + kvh * t.nb1 + r * t.nb2 + blk * t.nb3;
}

// The bits of 32-bit word w of a row at byte `row` holding n elements of
// dtype `dt`: one f32, or two 16-bit values (the upper half is 0 past the
// row's end, which is never read).
#define READ_WORD(buf, dt, row, w, n)                                                     \
  (ALIGNED != 0u ? buf[((row) >> 2) + (w)]                                                \
   : (dt == 0u || 2u * (w) + 1u < (n)) ? READ_U32(buf, (row) + 4u * (w))                  \
                                       : READ_U16(buf, (row) + 4u * (w)))

// Q8_0 word w of a row at byte `row`: the codes 4w .. 4w + 3 (of block w / 8),
// and the f16 bits of that block's scale.
#define READ_Q8_WORD(buf, row, w) READ_U32(buf, (row) + 34u * ((w) >> 3) + 2u + 4u * ((w) & 7u))
#define READ_Q8_SCALE(buf, row, w) READ_U16(buf, (row) + 34u * ((w) >> 3))

// The four elements of a Q8_0 word: d * q as the reference dequantizes.
vec4 decode_q8(uint bits, uint d16) {
  const float d = unpackHalf2x16(d16).x;
  const ivec4 q = ivec4(int(bits << 24) >> 24, int(bits << 16) >> 24, int(bits << 8) >> 24,
                        int(bits) >> 24);
  precise vec4 x = d * vec4(q);
  return x;
}

// The elements (x, y) of a word read by READ_WORD (f32: x only).
vec2 decode(uint dt, uint bits) {
  if (dt == 0u) return vec2(uintBitsToFloat(bits), 0.0);
  if (dt == 1u) return unpackHalf2x16(bits);
  return vec2(uintBitsToFloat(bits << 16), uintBitsToFloat(bits & 0xffff0000u));
}

// Split-K combine: one workgroup per (token, head), an invocation per output column.
void combine(uint gid) {
  const uint tok = gid / p.n_head;
  const uint h = gid % p.n_head;
  const uint out_row = p.dst.off + h * p.dst.nb1 + tok * p.dst.nb2;
  const uint n_split = p.n_split;
  const uint stride = DV + 2u;
  const uint base = (p.partials.off >> 2) + gid * n_split * stride;
  float m = NEG_INF;
  uint n_full = 0u;
  for (uint z = 0u; z < n_split; ++z) {
    if (part_f[base + z * stride + 1u] > 0.0) {
      m = max(m, part_f[base + z * stride]);
      ++n_full;
    }
  }
  for (uint c = gl_LocalInvocationID.x; c < DV; c += NT) {
    if (n_full == 0u) {
      dst_f[(out_row + c * p.dst.nb0) >> 2] = 0.0;
      if (QOUT != 0u) outv[c] = 0.0;
      continue;
    }
    precise float acc = 0.0;
    precise float l = 0.0;
    bool first = true;
    for (uint z = 0u; z < n_split; ++z) {
      const uint at = base + z * stride;
      const float lz = part_f[at + 1u];
      if (!(lz > 0.0)) continue;
      const float mz = part_f[at];
      const float az = part_f[at + 2u + c];
      if (mz == m) {
        acc = first ? az : acc + az;
        l = first ? lz : l + lz;
      } else {
        const float f = exp(mz - m);
        acc = first ? az * f : acc + az * f;
        l = first ? lz * f : l + lz * f;
      }
      first = false;
    }
    if (p.has_sinks != 0u) {
      const float sink = sinks_f[flat_off(p.sinks, h) >> 2];
      if (sink > m) {
        const float ms = exp(m - sink);
        acc *= ms;
        l = l * ms + 1.0;
      } else {
        l += exp(sink - m);
      }
    }
    precise float o = acc / l;
    dst_f[(out_row + c * p.dst.nb0) >> 2] = o;
    if (QOUT != 0u) outv[c] = o;
  }
  if (QOUT != 0u) quantize_out(tok, h);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint gid = group_index();
  const uint n_hg = p.n_head / GH;  // head groups a token
  const uint n_work = p.n_tokens * n_hg;
  if (gid >= n_work) return;
  if (SPLIT == kFaSplitCombine) {
    combine(gid);
    return;
  }
  const uint zi = SPLIT == kFaSplitPartials ? gl_WorkGroupID.z : 0u;  // split-K: this partial
  const uint part_at = (p.partials.off >> 2) + (gid * p.n_split + zi) * (DV + 2u);
  k_t = p.k;
  v_t = p.v;
  blocks_t = p.blocks;
  paged = p.paged != 0u;
  block_size = p.block_size;
  block_shift = (block_size & (block_size - 1u)) == 0u ? findLSB(block_size) : 32u;
  const float scale = p.scale;
  const float softcap = p.softcap;

  // Every sequence's data is checked, also those no token of the batch uses
  // (the reference rejects the whole op then); report only.
  if (zi == 0u) {
    for (uint s = gid; s < p.n_seq; s += n_work) checked_kv_len(s);
  }

  const uint tok = gid / n_hg;
  const uint h0 = (gid % n_hg) * GH;  // this workgroup's heads: h0 .. h0 + GH - 1
  const int s_in = seq_i[flat_off(p.seq_idx, tok) >> 2];
  int len = -1;
  if (s_in < 0 || uint(s_in) >= p.n_seq) {
    if (tid == 0u) report_error(kErrSeqRange, uint(s_in));
  } else {
    len = checked_kv_len(uint(s_in));
  }
  const uint s = uint(s_in);

  // Visible keys [kb, ke): p < kv_len, p <= pos (causal), pos - p < window.
  uint kb = 0u, ke = 0u;
  if (len > 0) {
    const int pos = pos_i[flat_off(p.pos, tok) >> 2];
    int e = len;
    if (p.causal != 0u && pos < len) e = pos + 1;
    int b = 0;
    if (p.window > 0 && pos >= p.window) b = pos - p.window + 1;
    if (e > b) {
      kb = uint(b);
      ke = uint(e);
    }
  }
  // Head h0 + g's output row: out_row0 + g * nb1.
  const uint out_row0 = p.dst.off + h0 * p.dst.nb1 + tok * p.dst.nb2;
  // The keys are visited in pieces [sb, sb + plen), sb = sb0, sb0 + pstride,
  // ... below ke (one piece, [kb, ke), without split-K).
  uint sb0 = kb;
  uint plen = 0xffffffffu;
  uint pstride = 0xffffffffu;
  if (SPLIT == kFaSplitPartials) {
    plen = p.split_len;
    pstride = kFaMaxSplits * plen;
    sb0 = zi * plen;
    // The first of this partial's pieces that ends past kb.
    if (kb >= sb0 + plen) sb0 += (kb - sb0) / pstride * pstride;
    if (kb >= sb0 + plen) sb0 += pstride;
    if (sb0 >= ke) ke = kb;  // no visible key in this partial
  }
  if (ke <= kb) {
    if (SPLIT == kFaSplitPartials) {
      if (tid == 0u) part_f[part_at + 1u] = 0.0;
    } else {
      for (uint g = 0u; g < GH; ++g) {
        for (uint c = tid; c < DV; c += NT) {
          dst_f[(out_row0 + g * p.dst.nb1 + c * p.dst.nb0) >> 2] = 0.0;
          if (QOUT != 0u) outv[g * DV + c] = 0.0;
        }
      }
      if (QOUT != 0u) quantize_out(tok, h0);
    }
    return;
  }

  const uint kvh = h0 / p.group;
  const uint lane = tid % TPK;
  const uint kgrp = tid / TPK;
  const uint slot = tid / CT;
  const uint ct = tid % CT;

  // This lane's slice of each head's q: the elements of K words lane, lane +
  // TPK, ...
  float qr[GH][KE * KWPL];
  for (uint g = 0u; g < GH; ++g) {
    const uint q_row = p.q.off + (h0 + g) * p.q.nb1 + tok * p.q.nb2;
    for (uint i = 0u; i < KWPL; ++i) {
      for (uint e = 0u; e < KE; ++e) {
        const uint d = (lane + TPK * i) * KEPW + e;
        qr[g][KE * i + e] = (e < KEPW && d < D) ? q_f[(q_row + d * p.q.nb0) >> 2] : 0.0;
      }
    }
  }

  // Each head's accumulators, running max (set by the first tile) and this
  // slot's denominator.
  precise float acc[GH][VE * VWPT];
  float m[GH];
  precise float l[GH];
  for (uint g = 0u; g < GH; ++g) {
    for (uint c = 0u; c < VE * VWPT; ++c) acc[g][c] = 0.0;
    m[g] = 0.0;
    l[g] = 0.0;
  }

  bool first = true;  // the first tile sets the running maxima
  for (uint sb = sb0; sb < ke; sb = ke - sb <= pstride ? ke : sb + pstride) {
    const uint rb = max(kb, sb);
    const uint re = ke - sb <= plen ? ke : sb + plen;
    for (uint t0 = rb; t0 < re; t0 += BC) {
      const uint nv = min(BC, re - t0);
      // Loads first, arithmetic after: no load waits behind a branch or a
      // product. Keys past the tile's end load the tile's last row instead (a
      // visible row, so always inside the tensor) and are masked below.
      // This invocation's V words of the tile.
      uint vb[KPS * VWPT];
      uint vd[KPS * VWPT];  // q8_0: the words' block scales
      for (uint mi = 0u; mi < KPS; ++mi) {
        const uint row = kv_row(v_t, s, kvh, t0 + min(slot + VS * mi, nv - 1u));
        for (uint i = 0u; i < VWPT; ++i) {
          const uint w = min(ct + CT * i, WV - 1u);
          if (VT == kDtypeQ8_0) {
            vb[mi * VWPT + i] = READ_Q8_WORD(v_u, row, w);
            vd[mi * VWPT + i] = READ_Q8_SCALE(v_u, row, w);
          } else {
            vb[mi * VWPT + i] = READ_WORD(v_u, VT, row, w, DV);
          }
        }
      }
      // This lane's K words of its R keys.
      uint kw[R * KWPL];
      uint kd[R * KWPL];  // q8_0: the words' block scales
      for (uint r = 0u; r < R; ++r) {
        const uint row = kv_row(k_t, s, kvh, t0 + min(kgrp + KG * r, nv - 1u));
        for (uint i = 0u; i < KWPL; ++i) {
          const uint w = min(lane + TPK * i, WK - 1u);
          if (KT == kDtypeQ8_0) {
            kw[r * KWPL + i] = READ_Q8_WORD(k_u, row, w);
            kd[r * KWPL + i] = READ_Q8_SCALE(k_u, row, w);
          } else {
            kw[r * KWPL + i] = READ_WORD(k_u, KT, row, w, D);
          }
        }
      }
      // Three barriers a tile whatever GH: every head's lane partials; then
      // every (head, key)'s score; then each head's tile max and each key's
      // weight exp(s_j - m), found once and read by every invocation; then
      // head by head the rescale and the accumulation (each head's sums as
      // in the one-head kernel). The next tile writes this shared memory
      // again only after its first barrier, which every invocation reaches
      // once done with these.
      for (uint g = 0u; g < GH; ++g) {
        for (uint r = 0u; r < R; ++r) {
          precise float dot = 0.0;
          for (uint i = 0u; i < KWPL; ++i) {
            if (lane + TPK * i < WK) {
              if (KT == kDtypeQ8_0) {
                const vec4 kv = decode_q8(kw[r * KWPL + i], kd[r * KWPL + i]);
                dot += qr[g][4u * i] * kv.x;
                dot += qr[g][4u * i + 1u] * kv.y;
                dot += qr[g][4u * i + 2u] * kv.z;
                dot += qr[g][4u * i + 3u] * kv.w;
              } else {
                const vec2 kv = decode(KT, kw[r * KWPL + i]);
                dot += qr[g][2u * i] * kv.x;
                if (KEPW == 2u) dot += qr[g][2u * i + 1u] * kv.y;
              }
            }
          }
          const uint pi = (g * BC + kgrp + KG * r) * TPK + lane;
          part4[pi >> 2u][pi & 3u] = dot;
        }
      }
      barrier();
      for (uint u = tid; u < GH * BC; u += NT) {  // head u / BC, key u % BC
        precise float score = NEG_INF;  // keys past the tile's end: no effect on the max
        if (u % BC < nv) {
          precise float sum = 0.0;
          for (uint i = 0u; i < TPK / 4u; ++i) {  // the lane partials in lane order, 4 a load
            const vec4 p4 = part4[u * (TPK / 4u) + i];
            sum += p4.x;
            sum += p4.y;
            sum += p4.z;
            sum += p4.w;
          }
          score = sum * scale;
          if (softcap > 0.0) {
            // tanh(x) rounds to +-1 in f32 for |x| > 9.1: the clamp only keeps
            // exp-based tanh implementations away from inf / inf.
            score = softcap * tanh(clamp(score / softcap, -10.0, 10.0));
          }
        }
        sc[u >> 2][u & 3u] = score;
      }
      barrier();
      // Online softmax: one rescale of the accumulators per tile. The max
      // scan has a fixed trip count (it unrolls, its reads overlap); keys
      // past the tile's end are masked, never weighted by 0.
      for (uint u = tid; u < GH * BC / 4u; u += NT) {  // head u / (BC / 4), keys 4 (u % (BC / 4)) ..
        const uint g = u / (BC / 4u), sg = g * (BC / 4u);
        vec4 m4 = sc[sg];
        for (uint i = 1u; i < BC / 4u; ++i) m4 = max(m4, sc[sg + i]);
        const float mt = max(max(m4.x, m4.y), max(m4.z, m4.w));
        const float mn = first ? mt : max(m[g], mt);
        const vec4 s4 = sc[u];
        for (uint e = 0u; e < 4u; ++e) {
          const uint j = 4u * (u % (BC / 4u)) + e;
          wt[4u * u + e] = j < nv ? exp(s4[e] - mn) : 0.0;
        }
        if (u % (BC / 4u) == 0u) tile_m[g] = mn;
      }
      barrier();
      for (uint g = 0u; g < GH; ++g) {
        const float mn = tile_m[g];
        const float ms = first ? 0.0 : exp(m[g] - mn);
        l[g] = l[g] * ms;
        for (uint c = 0u; c < VE * VWPT; ++c) acc[g][c] *= ms;
        m[g] = mn;
        for (uint mi = 0u; mi < KPS; ++mi) {
          const uint j = slot + VS * mi;
          if (j < nv) {
            const float wgt = wt[g * BC + j];
            l[g] += wgt;
            for (uint i = 0u; i < VWPT; ++i) {
              if (VT == kDtypeQ8_0) {
                const vec4 vv = decode_q8(vb[mi * VWPT + i], vd[mi * VWPT + i]);
                acc[g][4u * i] += wgt * vv.x;
                acc[g][4u * i + 1u] += wgt * vv.y;
                acc[g][4u * i + 2u] += wgt * vv.z;
                acc[g][4u * i + 3u] += wgt * vv.w;
              } else {
                const vec2 vv = decode(VT, vb[mi * VWPT + i]);
                acc[g][2u * i] += wgt * vv.x;
                if (VEPW == 2u) acc[g][2u * i + 1u] += wgt * vv.y;
              }
            }
          }
        }
      }
      first = false;
    }
  }

  // Per head: sum the slots' accumulators and denominators (slot order),
  // fold in the sink, divide.
  for (uint g = 0u; g < GH; ++g) {
    if (VS > 1u) {
      if (g > 0u) barrier();  // the previous head's sums have read part4[]
      for (uint c = 0u; c < VE * VWPT; ++c) {
        const uint pi = tid * VE * VWPT + c;
        part4[pi >> 2u][pi & 3u] = acc[g][c];
      }
      if (ct == 0u) slot_l[slot] = l[g];
      barrier();
      if (slot == 0u) {
        for (uint v = 1u; v < VS; ++v) {
          for (uint c = 0u; c < VE * VWPT; ++c) {
            const uint pi = (v * CT + ct) * VE * VWPT + c;
            acc[g][c] += part4[pi >> 2u][pi & 3u];
          }
          l[g] += slot_l[v];
        }
      }
    }
    if (slot != 0u) continue;
    if (SPLIT == kFaSplitPartials) {  // GH == 1
      if (tid == 0u) {
        part_f[part_at] = m[g];
        part_f[part_at + 1u] = l[g];
      }
      for (uint i = 0u; i < VWPT; ++i) {
        for (uint e = 0u; e < VEPW; ++e) {
          const uint c = (ct + CT * i) * VEPW + e;
          if (c < DV) part_f[part_at + 2u + c] = acc[g][VE * i + e];
        }
      }
      continue;
    }
    if (p.has_sinks != 0u) {
      const float sink = sinks_f[flat_off(p.sinks, h0 + g) >> 2];
      if (sink > m[g]) {
        const float ms = exp(m[g] - sink);
        for (uint c = 0u; c < VE * VWPT; ++c) acc[g][c] *= ms;
        l[g] = l[g] * ms + 1.0;
      } else {
        l[g] += exp(sink - m[g]);
      }
    }
    const uint out_row = out_row0 + g * p.dst.nb1;
    for (uint i = 0u; i < VWPT; ++i) {
      for (uint e = 0u; e < VEPW; ++e) {
        const uint c = (ct + CT * i) * VEPW + e;
        if (c < DV) {
          precise float o = acc[g][VE * i + e] / l[g];
          dst_f[(out_row + c * p.dst.nb0) >> 2] = o;
          if (QOUT != 0u) outv[g * DV + c] = o;
        }
      }
    }
  }
  if (QOUT != 0u) quantize_out(tok, h0);
}
