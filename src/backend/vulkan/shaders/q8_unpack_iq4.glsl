// The int8 path's weight unpack for IQ4_NL and IQ4_XS (mul_mat_q8.glsl):
// a 32-element block as packed signed byte codes, the levels of
// kIQ4NLValues (src/quant/blocks.h: -127 .. 113) that the 4-bit indices
// select (element 4i + j in byte j of c[i]), the scale dw (d) and ws, the
// integer sub-scale of both 16-element halves (bytes 0 and 1; IQ4_NL 1,
// IQ4_XS its group's ls - 32). A weight is dw * s * code; no minimum.
//
// Include from mul_mat_q8.glsl, after dequant.glsl and q8_unpack_kquant.glsl.

// The 16 levels as bytes, four to a word: level i in byte i % 4 of word i / 4.
const uint kQ8IQ4Levels[4] = uint[4](0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);

// The levels of the 4-bit indices in the low nibble of each byte of q.
uint q8_iq4_levels(uint q) {
  uint r = 0u;
  for (uint j = 0u; j < 4u; ++j) {
    const uint i = (q >> (8u * j)) & 15u;
    r |= ((kQ8IQ4Levels[i >> 2u] >> (8u * (i & 3u))) & 0xffu) << (8u * j);
  }
  return r;
}

// 16 bytes of indices at qs: elements 0-15 the low nibbles, 16-31 the high.
void q8_iq4_codes(uint qs, out uint c[8]) {
  for (uint i = 0u; i < 4u; ++i) {
    const uint q = wq_u32(qs + 4u * i);
    c[i] = q8_iq4_levels(q & 0x0f0f0f0fu);
    c[i + 4u] = q8_iq4_levels((q >> 4u) & 0x0f0f0f0fu);
  }
}

// IQ4_NL (18 bytes): d, qs[16] as Q4_0.
void q8_weight_iq4_nl(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + blk * 18u;
  q8_iq4_codes(bb + 2u, c);
  dw = wq_f16(bb);
  mw = 0.0;
  ws = q8_pack_ws(1, 1, 0u, 0u);
}

// IQ4_XS (136 bytes): d, scales_h (u16), scales_l[4], qs[128]; group g =
// blk % 8: ls = nibble g % 2 of scales_l[g / 2] | ((scales_h >> 2g) & 3) << 4,
// indices qs[16g .. 16g + 15] as IQ4_NL.
void q8_weight_iq4_xs(uint rb, uint blk, out uint c[8], out float dw, out float mw, out uint ws) {
  const uint bb = rb + (blk >> 3u) * 136u, g = blk & 7u;
  q8_iq4_codes(bb + 8u + 16u * g, c);
  const uint ls = ((wq_u8(bb + 4u + (g >> 1u)) >> ((g & 1u) * 4u)) & 15u) |
                  (((wq_u16(bb + 2u) >> (2u * g)) & 3u) << 4u);
  dw = wq_f16(bb);
  mw = 0.0;
  ws = q8_pack_ws(int(ls) - 32, int(ls) - 32, 0u, 0u);
}
