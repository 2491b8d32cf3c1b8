// The int8 path of mul_mat (kMulMat and its decode fusions): weights Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, the K-quants Q2_K ... Q6_K, IQ4_NL, IQ4_XS, MXFP4
// and NVFP4, taken a 32-element block at a time (a K-quant / IQ4_XS block
// is one group of a 256-element super-block, an NVFP4 block one half of a
// 64-element block). quant_act_q8.comp quantizes x once into scratch
// memory with q8_act_block(); the products read those blocks: decode
// through mul_mat_vec_q8.comp (mul_mat_vec.glsl's Q8 mode, kMulMatId's
// pairs too), prefill through mul_mat_q8.comp's 64 x 64 tiles and
// mul_mat_id_q8.comp's expert-grouped ones. All sum in the order below, so
// an output has the same bits whichever shader computes it (batch
// invariance).
//
// Activations: each 32-element block of x is quantized as the CPU's Q8_0
// activation rows are (cpu/simd/quantize_act.h, quant_q8_0.glsl: d = amax /
// 127, codes roundf(x / d)), its scale kept as the f16 rounding of d. Every
// weight type uses these blocks (the CPU's K-quant kernels use 256-element
// Q8_K blocks instead); the K-quants' per-16 / per-32 sub-scales are applied
// as integers inside the block, so each block's sum stays exact.
// Weights (q8_weight_block): the block's 32 codes as signed bytes, a scale
// dw, a minimum mw (0 where the type has none; NVFP4: the second half's
// scale) and ws, the integer
// sub-scales s0, s1 and min multipliers m0, m1 of elements 0-15 and 16-31
// (q8_unpack_kquant.glsl; unused by the 32-element legacy types).
// Term of block b of output (n, m), with x codes xq, dot = sum of w code *
// xq (OpSDot on packed bytes: exact), xs = sum of xq (xs0 over elements
// 0-15, xs1 = xs - xs0), dot0 / dot1 the dots of the two halves:
//   Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (off: Q4_0 8, Q5_0 16, else 0):
//     t = float(dot - off * xs) * (dw * dx)
//     t = t + mw * (dx * float(xs))                  Q4_1 / Q5_1 only
//   K-quants, IQ4_NL, IQ4_XS, MXFP4 (isum, msum exact in int32):
//     t = float(s0 * dot0 + s1 * dot1) * (dw * dx)
//     t = t - mw * (dx * float(m0 * xs0 + m1 * xs1))  Q2_K, Q4_K, Q5_K only
//   NVFP4 (dw, mw: the halves' scales, see q8_unpack_fp4.glsl):
//     t = float(dot0) * (dw * dx)
//     t = t + float(dot1) * (mw * dx)
// Sum: as mul_mat_sum.glsl with the block as the unit: a chunk's partial
// starts at 0.0 and takes partial = partial + t for its blocks in ascending
// order; the total starts at 0.0 and takes each chunk's partial in
// ascending chunk order. All `precise` (no fma, no reassociation).
//
// Include after common.glsl, quant_q8_0.glsl, half_convert.glsl and (unless
// Q8_ACT_ONLY is defined: the quantizer, which reads no weights)
// dequant.glsl; the shader enables GL_EXT_spirv_intrinsics.

const uint Q8_WORDS = kMatQ8BlockWords;  // mat_interface.h

// OpSDot (SPV_KHR_integer_dot_product, opcode 4450) of two words of four
// packed signed bytes (PackedVectorFormat4x8Bit = 0): capabilities
// DotProduct (6019) and DotProductInput4x8BitPacked (6018). Debian's glslc
// has no GL_EXT_integer_dot_product, so the instruction is declared here.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int q8_sdot4x8(int a, int b, spirv_literal int fmt);

#ifndef Q8_ACT_ONLY
#include "q8_unpack_kquant.glsl"
#include "q8_unpack_iq4.glsl"
#include "q8_unpack_fp4.glsl"

// Bit i of `bits4` into bit 4 of byte i (i < 4): the fifth bits of Q5 codes.
uint q8_fifth_bits(uint bits4) {
  return ((bits4 & 1u) | ((bits4 & 2u) << 7u) | ((bits4 & 4u) << 14u) | ((bits4 & 8u) << 21u)) << 4u;
}

// Block `blk` of the weight row at byte rb: codes (element 4i + j in byte j
// of c[i]), the scale dw, the minimum mw (0 where the type has none) and
// the packed sub-scales ws (see the top).
void q8_weight_block(uint type, uint rb, uint blk, out uint c[8], out float dw, out float mw,
                     out uint ws) {
  switch (type) {
    case T_Q2_K: q8_weight_q2_k(rb, blk, c, dw, mw, ws); return;
    case T_Q3_K: q8_weight_q3_k(rb, blk, c, dw, mw, ws); return;
    case T_Q4_K: q8_weight_q4_k(rb, blk, c, dw, mw, ws); return;
    case T_Q5_K: q8_weight_q5_k(rb, blk, c, dw, mw, ws); return;
    case T_Q6_K: q8_weight_q6_k(rb, blk, c, dw, mw, ws); return;
    case T_IQ4_NL: q8_weight_iq4_nl(rb, blk, c, dw, mw, ws); return;
    case T_IQ4_XS: q8_weight_iq4_xs(rb, blk, c, dw, mw, ws); return;
    case T_MXFP4: q8_weight_mxfp4(rb, blk, c, dw, mw, ws); return;
    case T_NVFP4: q8_weight_nvfp4(rb, blk, c, dw, mw, ws); return;
    default: break;
  }
  mw = 0.0;
  ws = 0u;
  if (type == T_Q8_0) {
    const uint bb = rb + blk * 34u;
    dw = wq_f16(bb);
    for (uint i = 0u; i < 8u; ++i) c[i] = wq_u32(bb + 2u + 4u * i);
    return;
  }
  uint qs, qh = 0u;
  if (type == T_Q4_0) {
    const uint bb = rb + blk * 18u;
    dw = wq_f16(bb);
    qs = bb + 2u;
  } else if (type == T_Q4_1) {
    const uint bb = rb + blk * 20u;
    dw = wq_f16(bb);
    mw = wq_f16(bb + 2u);
    qs = bb + 4u;
  } else if (type == T_Q5_0) {
    const uint bb = rb + blk * 22u;
    dw = wq_f16(bb);
    qh = wq_u32(bb + 2u);
    qs = bb + 6u;
  } else {  // T_Q5_1
    const uint bb = rb + blk * 24u;
    dw = wq_f16(bb);
    mw = wq_f16(bb + 2u);
    qh = wq_u32(bb + 4u);
    qs = bb + 8u;
  }
  // Elements 0-15: low nibbles of qs[0..15]; 16-31: high nibbles.
  for (uint i = 0u; i < 4u; ++i) {
    const uint q = wq_u32(qs + 4u * i);
    c[i] = q & 0x0f0f0f0fu;
    c[i + 4u] = (q >> 4u) & 0x0f0f0f0fu;
  }
  if (type == T_Q5_0 || type == T_Q5_1) {
    for (uint i = 0u; i < 8u; ++i) c[i] |= q8_fifth_bits((qh >> (4u * i)) & 15u);
  }
}

#endif  // Q8_ACT_ONLY

#include "q8_act_block.glsl"

// The exact integer dot product of two blocks' codes.
int q8_dot(uint w[8], uint x[8]) {
  int s = 0;
  for (uint i = 0u; i < 8u; ++i) s += q8_sdot4x8(int(w[i]), int(x[i]), 0);
  return s;
}

#ifndef Q8_ACT_ONLY
// The block's term t (see the top of this file) from the weight block (codes
// w, dw, mw, ws) and the x block (codes x, their sum xs, scale dx).
float q8_block_term(uint type, uint w[8], uint x[8], int xs, float dw, float mw, uint ws, float dx) {
  if (legacy_type(type)) {  // the legacy term at the top
    const int off = type == T_Q4_0 ? 8 : (type == T_Q5_0 ? 16 : 0);
    precise float t = float(q8_dot(w, x) - off * xs) * (dw * dx);
    if (type == T_Q4_1 || type == T_Q5_1) t = t + mw * (dx * float(xs));
    return t;
  }
  if (type == T_NVFP4) {  // dw, mw: the two halves' float scales
    int dot0 = 0, dot1 = 0;
    for (uint i = 0u; i < 4u; ++i) {
      dot0 += q8_sdot4x8(int(w[i]), int(x[i]), 0);
      dot1 += q8_sdot4x8(int(w[i + 4u]), int(x[i + 4u]), 0);
    }
    precise float t = float(dot0) * (dw * dx);
    t = t + float(dot1) * (mw * dx);
    return t;
  }
  // Q2_K, Q3_K, Q6_K scale each 16-element half on its own; the others
  // have s0 == s1 and m0 == m1, where the whole-block dot and sum give the
  // same integers.
  const bool halves = type == T_Q2_K || type == T_Q3_K || type == T_Q6_K;
  const int s0 = bitfieldExtract(int(ws), 0, 8), s1 = bitfieldExtract(int(ws), 8, 8);
  int isum;
  if (halves) {
    int dot0 = 0, dot1 = 0;
    for (uint i = 0u; i < 4u; ++i) {
      dot0 += q8_sdot4x8(int(w[i]), int(x[i]), 0);
      dot1 += q8_sdot4x8(int(w[i + 4u]), int(x[i + 4u]), 0);
    }
    isum = s0 * dot0 + s1 * dot1;
  } else {
    isum = s0 * q8_dot(w, x);
  }
  precise float t = float(isum) * (dw * dx);
  if (type == T_Q2_K || type == T_Q4_K || type == T_Q5_K) {
    const int m0 = int(bitfieldExtract(ws, 16, 8)), m1 = int(ws >> 24u);
    int msum = m0 * xs;
    if (halves) {
      int xs0 = 0;
      for (uint i = 0u; i < 4u; ++i) xs0 += q8_sdot4x8(int(x[i]), 0x01010101, 0);
      msum = m0 * xs0 + m1 * (xs - xs0);
    }
    t = t - mw * (dx * float(msum));
  }
  return t;
}
#endif  // Q8_ACT_ONLY
