// The int8 path's weight unpack for the K-quants Q2_K, Q3_K, Q4_K, Q5_K and
// Q6_K (mul_mat_q8.glsl): 32-element group g = blk % 8 of super-block blk / 8
// as packed signed byte codes (element 4i + j in byte j of c[i]; elements
// 0-15 in c[0..3], 16-31 in c[4..7]), the super-block's scale dw (d) and
// minimum scale mw (dmin; 0 where the type has none), and ws: the group's
// integer sub-scales, byte 0 for elements 0-15 and byte 1 for 16-31 (signed),
// bytes 2 and 3 the matching min multipliers (unsigned). A weight is
//   dw * s * code - mw * m   (s, m: the sub-scale and min of its half).
// Layouts: src/quant/blocks.h (and dequant.glsl's dq_* for the same reads).
//
// Include from mul_mat_q8.glsl, after dequant.glsl.

// Each byte b of w minus k, as (b - k) mod 256, for bytes below 128 and k
// at most 128: each byte's top bit is set first, so no byte goes below zero
// and no borrow crosses into the next, then flipped back.
uint q8_bytes_minus(uint w, uint k) {
  return ((w | 0x80808080u) - k * 0x01010101u) ^ 0x80808080u;
}

// ws from the two halves' sub-scales (-128..127) and mins (0..255).
uint q8_pack_ws(int s0, int s1, uint m0, uint m1) {
  return (uint(s0) & 0xffu) | ((uint(s1) & 0xffu) << 8u) | (m0 << 16u) | (m1 << 24u);
}

// Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min per 16
// elements), qs[64] (2 bits: byte 32 (g / 4) + l, shift 2 (g % 4)), d, dmin.
void q8_weight_q2_k(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 84u, g = blk & 7u;
  for (uint i = 0u; i < 8u; ++i) {
    c[i] = (wq_u32(bb + 16u + (g >> 2u) * 32u + 4u * i) >> (2u * (g & 3u))) & 0x03030303u;
  }
  const uint s0 = wq_u8(bb + 2u * g), s1 = wq_u8(bb + 2u * g + 1u);
  ws = q8_pack_ws(int(s0 & 15u), int(s1 & 15u), s0 >> 4u, s1 >> 4u);
  dw = wq_f16(bb + 80u);
  mw = wq_f16(bb + 82u);
}

// Q3_K (110 bytes): hmask[32] (bit g of hmask[l]: set +0, clear -4), qs[64]
// (low 2 bits as Q2_K), scales[12] (16 6-bit scales, offset 32), d. Codes
// low | high << 2, minus 4: -4..3.
void q8_weight_q3_k(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 110u, g = blk & 7u;
  for (uint i = 0u; i < 8u; ++i) {
    const uint lo = (wq_u32(bb + 32u + (g >> 2u) * 32u + 4u * i) >> (2u * (g & 3u))) & 0x03030303u;
    const uint hi = (wq_u32(bb + 4u * i) >> g) & 0x01010101u;
    c[i] = q8_bytes_minus(lo | (hi << 2u), 4u);
  }
  int s[2];
  for (uint h = 0u; h < 2u; ++h) {
    const uint si = 2u * g + h;  // scale index (16 elements each)
    const uint sl = (wq_u8(bb + 96u + (si & 7u)) >> ((si >> 3u) * 4u)) & 15u;
    const uint sh = (wq_u8(bb + 104u + (si & 3u)) >> (2u * (si >> 2u))) & 3u;
    s[h] = int(sl | (sh << 4u)) - 32;
  }
  ws = q8_pack_ws(s[0], s[1], 0u, 0u);
  dw = wq_f16(bb + 108u);
  mw = 0.0;
}

// Q4_K (144 bytes): d, dmin, scales[12] (scale_min_k4), qs[128] (nibble
// g % 2 of qs[32 (g / 2) + l]). Codes 0..15; one (scale, min) per group.
void q8_weight_q4_k(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 144u, g = blk & 7u;
  for (uint i = 0u; i < 8u; ++i) {
    c[i] = (wq_u32(bb + 16u + (g >> 1u) * 32u + 4u * i) >> ((g & 1u) * 4u)) & 0x0f0f0f0fu;
  }
  uint sc, m;
  scale_min_k4(bb + 4u, g, sc, m);
  ws = q8_pack_ws(int(sc), int(sc), m, m);
  dw = wq_f16(bb);
  mw = wq_f16(bb + 2u);
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32] (bit g of qh[l]: bit 4),
// qs[128] as Q4_K. Codes 0..31.
void q8_weight_q5_k(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 176u, g = blk & 7u;
  for (uint i = 0u; i < 8u; ++i) {
    const uint lo = (wq_u32(bb + 48u + (g >> 1u) * 32u + 4u * i) >> ((g & 1u) * 4u)) & 0x0f0f0f0fu;
    c[i] = lo | (((wq_u32(bb + 16u + 4u * i) >> g) & 0x01010101u) << 4u);
  }
  uint sc, m;
  scale_min_k4(bb + 4u, g, sc, m);
  ws = q8_pack_ws(int(sc), int(sc), m, m);
  dw = wq_f16(bb);
  mw = wq_f16(bb + 2u);
}

// Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8), d. Group g of half
// h = g / 4: low 4 bits nibble (g % 4 >= 2) of ql[64h + 32 (g % 2) + l],
// high 2 bits (qh[32h + l] >> 2 (g % 4)) & 3. Codes q - 32: -32..31.
void q8_weight_q6_k(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 210u, g = blk & 7u;
  const uint h = g >> 2u, g4 = g & 3u;
  for (uint i = 0u; i < 8u; ++i) {
    const uint lo = (wq_u32(bb + 64u * h + 32u * (g & 1u) + 4u * i) >> ((g4 >> 1u) * 4u)) & 0x0f0f0f0fu;
    const uint hi = (wq_u32(bb + 128u + 32u * h + 4u * i) >> (2u * g4)) & 0x03030303u;
    c[i] = q8_bytes_minus(lo | (hi << 4u), 32u);
  }
  const int s0 = bitfieldExtract(int(wq_u8(bb + 192u + 2u * g)), 0, 8);
  const int s1 = bitfieldExtract(int(wq_u8(bb + 193u + 2u * g)), 0, 8);
  ws = q8_pack_ws(s0, s1, 0u, 0u);
  dw = wq_f16(bb + 208u);
  mw = 0.0;
}
