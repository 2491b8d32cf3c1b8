// kMulMat / kMulMatId for few activation columns (decode): dst = W^T X with
// W of any weight dtype (TYPE: DType id, dequant.glsl), X and dst F32.
// Sums follow mul_mat_sum.glsl, bit for bit as mul_mat.comp sums them.
//
// A workgroup of 128 threads computes RPW = 128 / TPR consecutive weight
// rows for NCOLS (<= 8) activation columns. The TPR lanes of a row take its
// SUM_CHUNK-element chunks, lane l chunk l (and l + TPR, ... in later
// rounds when the row has more than TPR chunks): each lane reads one
// contiguous stretch of the row, dequantizes it 8 elements at a time, four
// pieces' loads issued before their arithmetic, and accumulates each piece
// against all NCOLS columns in ascending k. The chunk partials go to shared
// memory; then for each (row, column) one lane adds them to that output's
// running total in chunk order (at TPR = 1 the row's one lane adds its
// partial itself, the same additions without the barriers). x is read as
// vec4 where its rows are 16-byte aligned (X16), F32 / F16 / BF16 weights
// 16 bytes at a time where theirs are and a legacy block type's chunk (two
// blocks) as whole words where its rows start 4-byte aligned (W16): the
// record function checks the offsets
// and strides.
//
// Workgroups: ceil(N / RPW) row blocks (fastest) x batches. kMulMat (ID =
// 0): a batch is one (b2, b3) of X, all M = NCOLS columns of it, against
// weight matrix (b2 / (B2 / B2w), b3 / (B3 / B3w)). kMulMatId (ID = 1,
// NCOLS = 1): a batch is one (u, t) of ids: column u % X1 of token t against
// expert ids[u, t]; an id outside [0, E) is reported (kErrIdRange) and its
// output column written as zeros.
//
// kMulMatGlu (GLU != 0, ID = 0, one batch): W [K, 2F] holds gate rows then
// up rows (GLU = 2: up rows first); dst [F, M] = act(gate) * up, act the
// activation GLU_ACT (SiLU, tanh-GELU or erf-GELU). A
// workgroup's RPW row slots take RPW / 2 output rows: slot s < RPW / 2 sums
// the gate row of output row s, slot s + RPW / 2 its up row, in the order
// above; the up totals pass through shared memory and the gate lanes write
// activation(GLU_ACT, gate) * up, the expression glu.comp evaluates: bit for bit
// mul_mat followed by glu.
//
// kRmsNormMulMat (NORM = 1, ID = 0, one batch; with GLU or not): x is the
// un-normalised input; the workgroup first finds each column's 1 / rms as
// norm.comp does with NORM_B invocations (lane l stands for invocations l,
// l + 128, their partial sums of squares in the same order, then the same
// shared-memory tree), and every x element the sums read is
// (x * inv) * nw[k], row_norm.glsl's expression: bit for bit rms_norm
// followed by the product. kMulMatAdd (ADD = kMatAddPlain, ID = 0, no
// GLU): each output is its total plus r's element, add.comp's one
// addition; r may be d (each element read and written by its own lane).
// With a gate (ADD = kMatAddGated, the gate logits in nw's binding): the
// total times sigmoid(gate[m]) (activation.glsl's, as unary.comp computes
// it; the product mul.comp's), then plus r: bit for bit the product, the
// sigmoid, the mul and the add.
//
// Q8 (mul_mat_vec_q8.comp, which defines MUL_MAT_VEC_Q8: kMulMat, the
// GLU and ADD fusions, kMulMatId; the weights mul_mat_q8.glsl lists): the
// int8 path of mul_mat_q8.glsl. x comes quantized by quant_act_q8.comp
// (normalised there for kRmsNormMulMat, so NORM stays 0 here), its blocks
// in binding 3 from word p.q.off / 4 on: column m of batch b (ID: the
// pair's column (u % X1, t)) is quant_act_q8's column b * NCOLS + m
// (t * X1 + u % X1). A lane loads the weight blocks of its chunk, then
// adds each block's term, in ascending order, to each column's chunk
// partial; partials and totals then go on as above, so the sums are
// mul_mat_q8.comp's. A separate SPIR-V module, so a device without integer
// dot products never loads the capability.
//
// TAIL (Q8 only, one batch; ops_matmul.cc sets it when the next record
// function is an int8 product of this output): after its outputs, each
// workgroup counts itself on cnt (atomicAdd after memoryBarrierBuffer,
// the output binding coherent); the last to count reads the whole output
// back and quantizes it into qo as quant_act_q8.comp would (normalised
// first as its NORM mode does for kMatTailNormQuant), then sets cnt back
// to 0. The next product reads those blocks: the quantizer's dispatch
// and its barrier saved, the same bits.
//
// Included by mul_mat_vec.comp and mul_mat_vec_q8.comp after #version and
// the extension lines.

#include "common.glsl"
#include "mat_interface.h"
#include "elementwise_interface.h"

layout(local_size_x = kMatVecWorkgroup) in;
layout(constant_id = 0) const uint TYPE = 0;
layout(constant_id = 1) const uint NCOLS = 1;  // 1..8
layout(constant_id = 2) const uint TPR = 32;   // lanes per row: power of 2, <= 128
layout(constant_id = 3) const uint ID = 0;     // 1: mul_mat_id
layout(constant_id = 4) const uint X16 = 0;    // 1: x rows 16-byte aligned (vec4 reads)
layout(constant_id = 5) const uint W16 = 0;    // 1: F32 / F16 / BF16 weight rows 16-byte aligned, legacy block rows 4-byte aligned
layout(constant_id = 6) const uint GLU = kMatGluOff;  // kMulMatGlu (kMatGlu*)
layout(constant_id = 7) const uint NORM = 0;    // 1: x normalised first (kRmsNormMulMat)
layout(constant_id = 8) const uint NORM_B = 32; // norm.comp's workgroup for rows of K
layout(constant_id = 9) const uint ADD = kMatAddOff;  // kMulMatAdd (kMatAdd*)
layout(constant_id = 10) const uint GLU_ACT = kActSilu; // GLU: act's activation code (kAct*)
layout(constant_id = 11) const uint TAIL = kMatTailOff;  // Q8: the output quantized too (kMatTail*)

const uint WG = kMatVecWorkgroup;
const uint MAX_COLS = kMatVecMaxCols;

layout(std430, binding = 0) readonly buffer Params { FOLIO_VK_MAT_PARAMS } p;
layout(std430, binding = 2) readonly buffer W { uint wq[]; };
layout(std430, binding = 3) readonly buffer X { float x_f[]; };
#ifdef MUL_MAT_VEC_Q8
// The output, read back by the tail's last workgroup: coherent, so the
// other workgroups' writes reach it.
layout(std430, binding = 4) coherent buffer D { float d_f[]; };
#else
layout(std430, binding = 4) writeonly buffer D { float d_f[]; };
#endif
layout(std430, binding = 5) readonly buffer Ids { int ids_i[]; };
layout(std430, binding = 6) readonly buffer NormW { float nw_f[]; };
layout(std430, binding = 7) readonly buffer R { float r_f[]; };
// The weights and x again, 16 bytes at a time (same buffers).
layout(std430, binding = 2) readonly buffer W4 { uvec4 wq4[]; };
layout(std430, binding = 3) readonly buffer X4 { vec4 x_v[]; };

#include "dequant.glsl"
#include "mul_mat_sum.glsl"
#ifdef MUL_MAT_VEC_Q8
// x quantized (the same binding as x).
layout(std430, binding = 3) readonly buffer Q { uint q_w[]; };
// TAIL: the output's blocks, the workgroups' count, the norm weight.
layout(std430, binding = 8) writeonly buffer Qo { uint qo_w[]; };
layout(std430, binding = 9) coherent buffer Cnt { uint cnt_u[]; };
layout(std430, binding = 10) readonly buffer NormW2 { float nw2_f[]; };
#include "quant_q8_0.glsl"
#include "half_convert.glsl"
#include "mul_mat_q8.glsl"
const uint Q8_CB = SUM_CHUNK / kMatQ8Block;  // blocks per chunk
#endif
#include "activation.glsl"
#include "row_norm.glsl"

const uint PIECES = SUM_CHUNK / 8u;  // 8-element pieces per chunk
const uint ILP = 4u;                 // pieces loaded ahead of their arithmetic

shared float red[MAX_COLS * WG];  // red[m * WG + tid]: a lane's chunk partial of column m
shared float up_tot[(WG / 2u) * MAX_COLS];  // GLU: up_tot[s * MAX_COLS + m], output row slot s
shared float norm_tree[kMatNormMaxWorkgroup];  // NORM: norm.comp's workgroup_sum tree

float inv_rms[MAX_COLS];  // NORM: 1 / rms of each column of x
uint nw_word;             // NORM: word index of the norm weight's element 0

// Piece q (elements 8q .. 8q+7, all below K) of the weight row at byte rb:
// the values dequant8() gives, read 16 bytes at a time where W16 allows.
void weights8(uint rb, uint q, out vec4 lo, out vec4 hi) {
  if (W16 != 0u && TYPE == T_F32) {
    const uint i = (rb >> 4u) + 2u * q;
    lo = uintBitsToFloat(wq4[i]);
    hi = uintBitsToFloat(wq4[i + 1u]);
  } else if (W16 != 0u && TYPE == T_F16) {
    const uvec4 u = wq4[(rb >> 4u) + q];
    lo = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
    hi = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
  } else if (W16 != 0u && TYPE == T_BF16) {
    const uvec4 u = wq4[(rb >> 4u) + q];
    lo = uintBitsToFloat(uvec4(u.x << 16u, u.x & 0xffff0000u, u.y << 16u, u.y & 0xffff0000u));
    hi = uintBitsToFloat(uvec4(u.z << 16u, u.z & 0xffff0000u, u.w << 16u, u.w & 0xffff0000u));
  } else {
    dequant8(TYPE, rb, q, p.w.ne0, lo, hi);
  }
}

// Elements xo .. xo+7 of x (xo a word index, a multiple of 8 past a row
// start).
void x8_raw(uint xo, out vec4 lo, out vec4 hi) {
  if (X16 != 0u) {
    lo = x_v[xo >> 2u];
    hi = x_v[(xo >> 2u) + 1u];
  } else {
    lo = vec4(x_f[xo], x_f[xo + 1u], x_f[xo + 2u], x_f[xo + 3u]);
    hi = vec4(x_f[xo + 4u], x_f[xo + 5u], x_f[xo + 6u], x_f[xo + 7u]);
  }
}

// Element k of column m as the product reads it: normalised under NORM.
float x_at(uint xo, uint m, uint k) {
  const float v = x_f[xo + k];
  return NORM != 0u ? scale_elem_w(v, inv_rms[m], nw_f[nw_word + k]) : v;
}

// Elements k0 .. k0+7 of column m (row at word xo), as x_at gives them.
void x8(uint xo, uint m, uint k0, out vec4 lo, out vec4 hi) {
  x8_raw(xo + k0, lo, hi);
  if (NORM != 0u) {
    const uint wo = nw_word + k0;
    for (uint j = 0u; j < 4u; ++j) {
      lo[j] = scale_elem_w(lo[j], inv_rms[m], nw_f[wo + j]);
      hi[j] = scale_elem_w(hi[j], inv_rms[m], nw_f[wo + 4u + j]);
    }
  }
}

// NAME(xo, n, eps): 1 / rms of the n elements of ARR from word xo, summed
// as norm.comp sums them with NORM_B invocations (lane l stands for
// invocations l, l + 128, ...: their partial sums of squares in the same
// order, then the same shared-memory tree). Every lane calls it.
#define DEFINE_INV_RMS(NAME, ARR)                                                  \
  float NAME(uint xo, uint n, float eps) {                                         \
    const uint tid = gl_LocalInvocationID.x;                                      \
    for (uint v = tid; v < NORM_B; v += WG) {                                     \
      float ss = 0.0;                                                             \
      for (uint i = v; i < n; i += NORM_B) ss = add_square(ss, ARR[xo + i]);      \
      norm_tree[v] = ss;                                                          \
    }                                                                             \
    barrier();                                                                    \
    for (uint s = NORM_B / 2u; s > 0u; s >>= 1u) {                                \
      for (uint v = tid; v < s; v += WG) norm_tree[v] += norm_tree[v + s];        \
      barrier();                                                                  \
    }                                                                             \
    const float inv = rms_inv(norm_tree[0], n, eps);                              \
    barrier(); /* the tree is reused next */                                      \
    return inv;                                                                   \
  }
DEFINE_INV_RMS(x_inv_rms, x_f)
#ifdef MUL_MAT_VEC_Q8
DEFINE_INV_RMS(out_inv_rms, d_f)  // TAIL: of the output
#endif

// NORM: 1 / rms of column m (x row at word xo, K elements) into inv_rms[m].
void column_norm(uint m, uint xo, uint K) { inv_rms[m] = x_inv_rms(xo, K, p.eps); }

// Adds the whole piece (a, b) at element k0 times each column to s (the
// chunk partials), in ascending k.
#define ACCUMULATE_PIECE(a, b, k0)        \
  for (uint m = 0u; m < NCOLS; ++m) {     \
    vec4 xa, xb;                          \
    x8(xcol[m], m, (k0), xa, xb);         \
    s[m] = s[m] + (a).x * xa.x;           \
    s[m] = s[m] + (a).y * xa.y;           \
    s[m] = s[m] + (a).z * xa.z;           \
    s[m] = s[m] + (a).w * xa.w;           \
    s[m] = s[m] + (b).x * xb.x;           \
    s[m] = s[m] + (b).y * xb.y;           \
    s[m] = s[m] + (b).z * xb.z;           \
    s[m] = s[m] + (b).w * xb.w;           \
  }

void product() {
  const uint RPW = WG / TPR;
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % TPR;
  const uint K = p.w.ne0;
  // Output rows: N, or F = N / 2 of them for a GLU (OPW per workgroup).
  const uint N = GLU != 0u ? p.w.ne1 / 2u : p.w.ne1;
  const uint OPW = GLU != 0u ? RPW / 2u : RPW;
  const uint n_blocks = (N + OPW - 1u) / OPW;
  const uint g = group_index();
  const uint batch = g / n_blocks;
  const uint slot = tid / TPR;
  const bool up_slot = GLU != 0u && slot >= OPW;
  const uint n = (g % n_blocks) * OPW + (up_slot ? slot - OPW : slot);  // output row
  // Its weight row: the second half's for up (GLU = 1) or gate (GLU = 2).
  const uint wrow = GLU != 0u && (up_slot == (GLU == kMatGluGateFirst)) ? n + N : n;
  const uint n_batches = ID == 0u ? p.x.ne2 * p.x.ne3 : p.ids.ne0 * p.ids.ne1;
  if (batch >= n_batches) return;  // whole workgroup

  uint wbase = 0u;
  uint xcol[MAX_COLS];  // word index of each column's x row (Q8: of its block 0)
  uint dcol[MAX_COLS];  // word index of each column's dst row
  bool valid = true;
#ifdef MUL_MAT_VEC_Q8
  const uint nb = K / kMatQ8Block;
  const uint col_words = nb * Q8_WORDS;  // a quantized column
#endif
  if (ID == 0u) {
    const uint b2 = batch % p.x.ne2, b3 = batch / p.x.ne2;
    wbase = p.w.off + (b2 / (p.x.ne2 / p.w.ne2)) * p.w.nb2 + (b3 / (p.x.ne3 / p.w.ne3)) * p.w.nb3;
    for (uint m = 0u; m < NCOLS; ++m) {
#ifdef MUL_MAT_VEC_Q8
      xcol[m] = (p.q.off >> 2u) + (batch * NCOLS + m) * col_words;
#else
      xcol[m] = (p.x.off + m * p.x.nb1 + b2 * p.x.nb2 + b3 * p.x.nb3) >> 2u;
#endif
      dcol[m] = (p.d.off + m * p.d.nb1 + b2 * p.d.nb2 + b3 * p.d.nb3) >> 2u;
    }
  } else {
    const uint u = batch % p.ids.ne0, t = batch / p.ids.ne0;
    const int e = ids_i[(p.ids.off + u * p.ids.nb0 + t * p.ids.nb1) >> 2u];
    if (e < 0 || e >= int(p.w.ne2)) {
      valid = false;
      if (tid == 0u) report_error(kErrIdRange, uint(e));
    } else {
      wbase = p.w.off + uint(e) * p.w.nb2;
    }
#ifdef MUL_MAT_VEC_Q8
    xcol[0] = (p.q.off >> 2u) + (t * p.x.ne1 + u % p.x.ne1) * col_words;
#else
    xcol[0] = (p.x.off + (u % p.x.ne1) * p.x.nb1 + t * p.x.nb2) >> 2u;
#endif
    dcol[0] = (p.d.off + u * p.d.nb1 + t * p.d.nb2) >> 2u;
  }

#ifndef MUL_MAT_VEC_Q8  // (Q8: quant_act_q8 normalised x)
  if (NORM != 0u) {
    nw_word = p.nw.off >> 2u;
    for (uint m = 0u; m < NCOLS; ++m) column_norm(m, xcol[m], K);
  }
#endif

  const bool live = valid && n < N;
  const uint rb = wbase + wrow * p.w.nb1;
  const uint n_pieces = (K + 7u) / 8u;
  const uint n_chunks = (K + SUM_CHUNK - 1u) / SUM_CHUNK;
  const uint row_red = tid - lane;  // red index of this row's lane 0

  // Running totals of the columns this lane finishes: column lane + TPR * i
  // in tot[i].
  precise float tot[MAX_COLS];
  for (uint i = 0u; i < MAX_COLS; ++i) tot[i] = 0.0;

  for (uint c0 = 0u; c0 < n_chunks; c0 += TPR) {
    precise float s[MAX_COLS];
    for (uint m = 0u; m < NCOLS; ++m) s[m] = 0.0;
    const uint c = c0 + lane;
#ifdef MUL_MAT_VEC_Q8
    // The chunk's weight blocks first, then each column's x blocks against
    // them in ascending block order.
    uint wc[Q8_CB * 8u];
    float dw[Q8_CB], mw[Q8_CB];
    uint ws[Q8_CB];
    if (W16 != 0u && legacy_type(TYPE) && live && c < n_chunks && 2u * c + 1u < nb) {
      legacy_pair(TYPE, rb, c, wc, dw, mw);  // the chunk's two blocks as whole words
      ws[0] = 0u;
      ws[1] = 0u;
    } else {
      for (uint j = 0u; j < Q8_CB; ++j) {
        const uint b = c * Q8_CB + j;
        uint cj[8];
        dw[j] = 0.0;
        mw[j] = 0.0;
        ws[j] = 0u;
        if (live && c < n_chunks && b < nb) q8_weight_block(TYPE, rb, b, cj, dw[j], mw[j], ws[j]);
        for (uint i = 0u; i < 8u; ++i) wc[8u * j + i] = cj[i];
      }
    }
    if (live && c < n_chunks) {
      for (uint j = 0u; j < Q8_CB; ++j) {
        const uint b = c * Q8_CB + j;
        if (b >= nb) continue;
        for (uint m = 0u; m < NCOLS; ++m) {
          const uint qo = xcol[m] + b * Q8_WORDS;
          uint xc[8], w8[8];
          for (uint i = 0u; i < 8u; ++i) {
            xc[i] = q_w[qo + i];
            w8[i] = wc[8u * j + i];
          }
          const float dx = uintBitsToFloat(q_w[qo + 8u]);
          s[m] = s[m] + q8_block_term(TYPE, w8, xc, int(q_w[qo + 9u]), dw[j], mw[j], ws[j], dx);
        }
      }
    }
#else
    if (W16 != 0u && legacy_type(TYPE) && live && 2u * c + 1u < K / 32u) {
      // The chunk's two blocks as whole words, dequantized as dequant8().
      uint pc[16];
      float pd[2], pm[2];
      legacy_pair(TYPE, rb, c, pc, pd, pm);
      for (uint h = 0u; h < 2u; ++h) {
        for (uint j = 0u; j < 4u; ++j) {
          vec4 a, b;
          legacy_pair8(TYPE, pc, pd, pm, h, j, a, b);
          ACCUMULATE_PIECE(a, b, SUM_CHUNK * c + 32u * h + 8u * j);
        }
      }
    } else if (live && c < n_chunks) {
      const uint q_end = min((c + 1u) * PIECES, n_pieces);
      uint q = c * PIECES;
      // Whole pieces, ILP at a time, then one at a time (K % 8 != 0 leaves a
      // partial last piece).
      const uint q_full = min(q_end, K / 8u);
      for (; q + ILP <= q_full; q += ILP) {
        vec4 wv[2u * ILP];
        for (uint j = 0u; j < ILP; ++j) weights8(rb, q + j, wv[2u * j], wv[2u * j + 1u]);
        for (uint j = 0u; j < ILP; ++j) ACCUMULATE_PIECE(wv[2u * j], wv[2u * j + 1u], 8u * (q + j));
      }
      for (; q < q_full; ++q) {
        vec4 a, b;
        weights8(rb, q, a, b);
        ACCUMULATE_PIECE(a, b, 8u * q);
      }
      if (q < q_end) {  // the partial piece: elements at or past K take no part
        vec4 a, b;
        dequant8(TYPE, rb, q, K, a, b);
        const float wv[8] = float[8](a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w);
        const uint k0 = 8u * q;
        for (uint m = 0u; m < NCOLS; ++m) {
          for (uint i = 0u; k0 + i < K; ++i) s[m] = s[m] + wv[i] * x_at(xcol[m], m, k0 + i);
        }
      }
    }
#endif
    if (TPR == 1u) {  // the lane owns its row: its partial goes straight into the total
      for (uint m = 0u; m < NCOLS; ++m) tot[m] = tot[m] + s[m];
      continue;
    }
    for (uint m = 0u; m < NCOLS; ++m) red[m * WG + tid] = s[m];
    barrier();
    const uint used = min(TPR, n_chunks - c0);
    for (uint i = 0u; i < MAX_COLS; ++i) {
      const uint m = lane + TPR * i;
      if (m < NCOLS) {
        for (uint l = 0u; l < used; ++l) tot[i] = tot[i] + red[m * WG + row_red + l];
      }
    }
    barrier();
  }
  if (GLU != 0u) {
    if (up_slot && n < N) {
      for (uint i = 0u; i < MAX_COLS; ++i) {
        const uint m = lane + TPR * i;
        if (m < NCOLS) up_tot[(slot - OPW) * MAX_COLS + m] = tot[i];
      }
    }
    barrier();
    if (!up_slot && n < N) {
      for (uint i = 0u; i < MAX_COLS; ++i) {
        const uint m = lane + TPR * i;
        if (m < NCOLS) d_f[dcol[m] + n] = activation(GLU_ACT, tot[i]) * up_tot[slot * MAX_COLS + m];
      }
    }
    return;
  }
  if (n < N) {
    for (uint i = 0u; i < MAX_COLS; ++i) {
      const uint m = lane + TPR * i;
      if (m < NCOLS) {
        if (ADD != kMatAddOff) {
          precise float t = tot[i];
          if (ADD == kMatAddGated) {
            const float s = activation(kActSigmoid, nw_f[(p.nw.off + m * p.nw.nb1) >> 2u]);
            t = t * s;
          }
          precise float y = t + r_f[((p.r.off + m * p.r.nb1) >> 2u) + n];
          d_f[dcol[m] + n] = y;
        } else {
          d_f[dcol[m] + n] = tot[i];
        }
      }
    }
  }
}

#ifdef MUL_MAT_VEC_Q8
shared uint tail_last;

// TAIL: the output column at word dof (n elements) into blocks from word
// qo0 of qo, as quant_act_q8.comp quantizes a column (for
// kMatTailNormQuant as its NORM mode normalises it: norm.comp's sums,
// then (x * inv) * nw2[k]). Every lane calls it.
void tail_column(uint dof, uint n, uint qo0) {
  const uint tid = gl_LocalInvocationID.x;
  const float inv = TAIL == kMatTailNormQuant ? out_inv_rms(dof, n, p.eps2) : 0.0;
  const uint nw0 = p.nw2.off >> 2u;
  for (uint kb = tid; kb < n / kMatQ8Block; kb += WG) {
    float v[32];
    for (uint j = 0u; j < 32u; ++j) {
      const uint k = kMatQ8Block * kb + j;
      const float e = d_f[dof + k];
      v[j] = TAIL == kMatTailNormQuant ? scale_elem_w(e, inv, nw2_f[nw0 + k]) : e;
    }
    STORE_Q8_ACT_BLOCK(qo_w, qo0 + kb * Q8_WORDS, v);
  }
}

// TAIL: each workgroup counts itself done on cnt once its outputs are
// visible; the last one (all outputs written) quantizes every column into
// qo and sets cnt back to 0 for the next dispatch.
void tail() {
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    tail_last = atomicAdd(cnt_u[p.cnt.off >> 2u], 1u) == groups - 1u ? 1u : 0u;
  }
  barrier();
  if (tail_last == 0u) return;  // the whole workgroup
  memoryBarrierBuffer();
  const uint N = GLU != 0u ? p.w.ne1 / 2u : p.w.ne1;
  const uint col_words = N / kMatQ8Block * Q8_WORDS;
  for (uint m = 0u; m < NCOLS; ++m) {
    tail_column((p.d.off + m * p.d.nb1) >> 2u, N, (p.qo.off >> 2u) + m * col_words);
  }
  if (gl_LocalInvocationID.x == 0u) cnt_u[p.cnt.off >> 2u] = 0u;
}
#endif

void main() {
  product();
#ifdef MUL_MAT_VEC_Q8
  if (TAIL != kMatTailOff) tail();
#endif
}
