// The int8 path's weight unpack for MXFP4 and NVFP4 (mul_mat_q8.glsl): a
// 32-element block as packed signed byte codes, the doubled E2M1 values of
// kFP4Values (src/quant/blocks.h: -12 .. 12) that the 4-bit codes select
// (element 4i + j in byte j of c[i]).
//   MXFP4: dw half the E8M0 scale (undoing the doubling: dw * code is the
//          value, exact), ws sub-scale 1 for both halves, no minimum.
//   NVFP4: the block is half h = blk % 2 of a 64-element block; dw and mw
//          are the halves' own scales (half their UE4M3 scales, as the
//          CPU's kUE4M3Half), applied to each 16-element half's dot in
//          float (q8_block_term): two UE4M3 scales need not share an
//          exponent, so no integer sub-scales carry both exactly.
//
// Include from mul_mat_q8.glsl, after dequant.glsl and q8_unpack_kquant.glsl.

// The 16 doubled E2M1 values as bytes: value i in byte i % 4 of word i / 4.
const uint kQ8FP4Values[4] = uint[4](0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu);

// The values of the codes in the low nibble of each byte of q.
uint q8_fp4_values(uint q) {
  uint r = 0u;
  for (uint j = 0u; j < 4u; ++j) {
    const uint i = (q >> (8u * j)) & 15u;
    r |= ((kQ8FP4Values[i >> 2u] >> (8u * (i & 3u))) & 0xffu) << (8u * j);
  }
  return r;
}

// MXFP4 (17 bytes): e (E8M0), qs[16] as Q4_0; half scale 2^(e - 128) (e = 0,
// 1: the subnormals 2^-128, 2^-127), as dequant.glsl's dq_mxfp4.
void q8_weight_mxfp4(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + blk * 17u;
  const uint e = wq_u8(bb);
  for (uint i = 0u; i < 4u; ++i) {
    const uint q = wq_u32(bb + 1u + 4u * i);
    c[i] = q8_fp4_values(q & 0x0f0f0f0fu);
    c[i + 4u] = q8_fp4_values((q >> 4u) & 0x0f0f0f0fu);
  }
  dw = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23u);
  mw = 0.0;
  ws = q8_pack_ws(1, 1, 0u, 0u);
}

// NVFP4 (36 bytes, 64 elements): d[4] (UE4M3 per 16 elements), qs[32]; element
// j of sub-block s is the low nibble of qs[8s + j] for j < 8, else the high
// nibble of qs[8s + j - 8]. Block blk takes sub-blocks 2h and 2h + 1.
void q8_weight_nvfp4(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 1u) * 36u;
  const uint s0 = 2u * (blk & 1u);
  for (uint i = 0u; i < 2u; ++i) {  // sub-block s0 + i: codes c[4i .. 4i + 3]
    const uint q0 = wq_u32(bb + 4u + 8u * (s0 + i)), q1 = wq_u32(bb + 8u + 8u * (s0 + i));
    c[4u * i] = q8_fp4_values(q0 & 0x0f0f0f0fu);
    c[4u * i + 1u] = q8_fp4_values(q1 & 0x0f0f0f0fu);
    c[4u * i + 2u] = q8_fp4_values((q0 >> 4u) & 0x0f0f0f0fu);
    c[4u * i + 3u] = q8_fp4_values((q1 >> 4u) & 0x0f0f0f0fu);
  }
  dw = nvfp4_half_scale(wq_u8(bb + s0));
  mw = nvfp4_half_scale(wq_u8(bb + s0 + 1u));
  ws = 0u;
}
