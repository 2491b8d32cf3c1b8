// Weight-row dequantization for get_rows / mul_mat / mul_mat_id.
//
// Include after common.glsl and after declaring the weight buffer as
//   layout(std430, binding = N) readonly buffer W { uint wq[]; };
// Rows are addressed by their byte offset `rb` in wq. A row is read in
// chunks of 8 elements: chunk c holds elements 8c .. 8c+7 and lies in 32-
// element unit c / 4 (a legacy block, or group (c / 4) % 8 of a 256-element
// super-block), as part c % 4 of it. dequant8() returns the chunk as two
// vec4 (elements 0-3, 4-7). Plain types (F32, F16, BF16) give 0 for elements
// at or past the row length `ne0`; block types need ne0 % block == 0.
//
// Block layouts: src/quant/blocks.h. Blocks are packed back to back (Q4_0 is
// 18 bytes), so no field is assumed 4-byte aligned: wq_u16 / wq_u32 / wq_u64
// read at any byte offset and never touch a word that holds none of the
// bytes asked for. Values are rounded as the reference dequantizers in
// src/quant/ round them: `precise` keeps scale * q + min from contracting
// to an fma.

const uint T_F32 = 0u;
const uint T_F16 = 1u;
const uint T_Q4_0 = 2u;
const uint T_Q4_1 = 3u;
const uint T_Q5_0 = 6u;
const uint T_Q5_1 = 7u;
const uint T_Q8_0 = 8u;
const uint T_Q2_K = 10u;
const uint T_Q3_K = 11u;
const uint T_Q4_K = 12u;
const uint T_Q5_K = 13u;
const uint T_Q6_K = 14u;
const uint T_Q8_K = 15u;
const uint T_IQ4_NL = 20u;
const uint T_IQ4_XS = 23u;
const uint T_BF16 = 30u;
const uint T_MXFP4 = 39u;
const uint T_NVFP4 = 40u;

// 16 bits at byte b (any alignment).
uint wq_u16(uint b) {
  const uint w = b >> 2u;
  const uint s = (b & 3u) * 8u;
  if (s <= 16u) return (wq[w] >> s) & 0xffffu;
  return (wq[w] >> 24u) | ((wq[w + 1u] & 0xffu) << 8u);
}

// 32 bits at byte b (any alignment).
uint wq_u32(uint b) {
  const uint w = b >> 2u;
  const uint s = (b & 3u) * 8u;
  if (s == 0u) return wq[w];
  return (wq[w] >> s) | (wq[w + 1u] << (32u - s));
}

// 64 bits at byte b (any alignment), low word first.
uvec2 wq_u64(uint b) {
  const uint w = b >> 2u;
  const uint s = (b & 3u) * 8u;
  if (s == 0u) return uvec2(wq[w], wq[w + 1u]);
  const uint a = wq[w], m = wq[w + 1u], z = wq[w + 2u];
  return uvec2((a >> s) | (m << (32u - s)), (m >> s) | (z << (32u - s)));
}

uint wq_u8(uint b) { return (wq[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu; }

float wq_f16(uint b) { return unpackHalf2x16(wq_u16(b)).x; }

// The 8 bytes of q as unsigned values (byte 0 first).
void bytes_u(uvec2 q, out vec4 lo, out vec4 hi) {
  lo = vec4(float(q.x & 0xffu), float((q.x >> 8u) & 0xffu), float((q.x >> 16u) & 0xffu),
            float(q.x >> 24u));
  hi = vec4(float(q.y & 0xffu), float((q.y >> 8u) & 0xffu), float((q.y >> 16u) & 0xffu),
            float(q.y >> 24u));
}

// The 8 bytes of q as signed values.
void bytes_s(uvec2 q, out vec4 lo, out vec4 hi) {
  const ivec2 s = ivec2(q);
  lo = vec4(float(bitfieldExtract(s.x, 0, 8)), float(bitfieldExtract(s.x, 8, 8)),
            float(bitfieldExtract(s.x, 16, 8)), float(bitfieldExtract(s.x, 24, 8)));
  hi = vec4(float(bitfieldExtract(s.y, 0, 8)), float(bitfieldExtract(s.y, 8, 8)),
            float(bitfieldExtract(s.y, 16, 8)), float(bitfieldExtract(s.y, 24, 8)));
}

// Bit `bit` of each of the 8 bytes of q, as 0 / 1 in each byte.
uvec2 byte_bits(uvec2 q, uint bit) { return (q >> bit) & 0x01010101u; }

// Bit i of `bits8` into byte i (i < 8).
uvec2 spread_bits(uint bits8) {
  const uint lo = (bits8 & 1u) | ((bits8 & 2u) << 7u) | ((bits8 & 4u) << 14u) | ((bits8 & 8u) << 21u);
  const uint b = bits8 >> 4u;
  const uint hi = (b & 1u) | ((b & 2u) << 7u) | ((b & 4u) << 14u) | ((b & 8u) << 21u);
  return uvec2(lo, hi);
}

// ---------------------------------------------------------------- plain types

void dq_f32(uint rb, uint c, uint ne0, out vec4 lo, out vec4 hi) {
  const uint k0 = 8u * c;
  if (k0 + 8u <= ne0) {
    const uvec2 a = wq_u64(rb + 4u * k0), b = wq_u64(rb + 4u * k0 + 8u);
    const uvec2 e = wq_u64(rb + 4u * k0 + 16u), f = wq_u64(rb + 4u * k0 + 24u);
    lo = uintBitsToFloat(uvec4(a, b));
    hi = uintBitsToFloat(uvec4(e, f));
    return;
  }
  float v[8];
  for (uint i = 0u; i < 8u; ++i) {
    v[i] = k0 + i < ne0 ? uintBitsToFloat(wq_u32(rb + 4u * (k0 + i))) : 0.0;
  }
  lo = vec4(v[0], v[1], v[2], v[3]);
  hi = vec4(v[4], v[5], v[6], v[7]);
}

// F16 (bf = false) or BF16 (bf = true).
void dq_half(uint rb, uint c, uint ne0, bool bf, out vec4 lo, out vec4 hi) {
  const uint k0 = 8u * c;
  uint h[8];
  if (k0 + 8u <= ne0) {
    const uvec2 a = wq_u64(rb + 2u * k0);
    const uvec2 b = wq_u64(rb + 2u * k0 + 8u);
    h = uint[8](a.x & 0xffffu, a.x >> 16u, a.y & 0xffffu, a.y >> 16u, b.x & 0xffffu, b.x >> 16u,
                b.y & 0xffffu, b.y >> 16u);
  } else {
    for (uint i = 0u; i < 8u; ++i) h[i] = k0 + i < ne0 ? wq_u16(rb + 2u * (k0 + i)) : 0u;
  }
  float v[8];
  for (uint i = 0u; i < 8u; ++i) {
    v[i] = bf ? uintBitsToFloat(h[i] << 16u) : unpackHalf2x16(h[i]).x;
  }
  lo = vec4(v[0], v[1], v[2], v[3]);
  hi = vec4(v[4], v[5], v[6], v[7]);
}

// -------------------------------------------------------- 32-element blocks

// Q4_0 (18 bytes): d, qs[16]; element e: nibble (e >= 16) of qs[e % 16]; d * (q - 8).
void dq_q4_0(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 18u;
  const uint j = c & 3u;
  const float d = wq_f16(bb);
  const uvec2 q = (wq_u64(bb + 2u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu;
  bytes_u(q, lo, hi);
  lo = d * (lo - 8.0);
  hi = d * (hi - 8.0);
}

// Q4_1 (20 bytes): d, m, qs[16]; d * q + m.
void dq_q4_1(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 20u;
  const uint j = c & 3u;
  const float d = wq_f16(bb);
  const float m = wq_f16(bb + 2u);
  const uvec2 q = (wq_u64(bb + 4u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu;
  vec4 a, b;
  bytes_u(q, a, b);
  precise vec4 ra = d * a + m;
  precise vec4 rb2 = d * b + m;
  lo = ra;
  hi = rb2;
}

// Q5_0 (22 bytes): d, qh (u32: bit e = 5th bit of element e), qs[16]; d * (q - 16).
void dq_q5_0(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 22u;
  const uint j = c & 3u;
  const float d = wq_f16(bb);
  const uint qh = wq_u32(bb + 2u);
  const uvec2 q = ((wq_u64(bb + 6u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu) |
                  (spread_bits((qh >> (8u * j)) & 0xffu) << 4u);
  bytes_u(q, lo, hi);
  lo = d * (lo - 16.0);
  hi = d * (hi - 16.0);
}

// Q5_1 (24 bytes): d, m, qh, qs[16]; d * q + m.
void dq_q5_1(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 24u;
  const uint j = c & 3u;
  const float d = wq_f16(bb);
  const float m = wq_f16(bb + 2u);
  const uint qh = wq_u32(bb + 4u);
  const uvec2 q = ((wq_u64(bb + 8u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu) |
                  (spread_bits((qh >> (8u * j)) & 0xffu) << 4u);
  vec4 a, b;
  bytes_u(q, a, b);
  precise vec4 ra = d * a + m;
  precise vec4 rb2 = d * b + m;
  lo = ra;
  hi = rb2;
}

// Q8_0 (34 bytes): d, qs[32] (int8); d * q.
void dq_q8_0(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 34u;
  const float d = wq_f16(bb);
  bytes_s(wq_u64(bb + 2u + (c & 3u) * 8u), lo, hi);
  lo *= d;
  hi *= d;
}

// IQ4_NL (18 bytes): d, qs[16] as Q4_0; d * level[q].
const float kIQ4Levels[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0,
                                       1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0);

void levels(uvec2 q, out vec4 lo, out vec4 hi) {
  lo = vec4(kIQ4Levels[q.x & 15u], kIQ4Levels[(q.x >> 8u) & 15u], kIQ4Levels[(q.x >> 16u) & 15u],
            kIQ4Levels[(q.x >> 24u) & 15u]);
  hi = vec4(kIQ4Levels[q.y & 15u], kIQ4Levels[(q.y >> 8u) & 15u], kIQ4Levels[(q.y >> 16u) & 15u],
            kIQ4Levels[(q.y >> 24u) & 15u]);
}

void dq_iq4_nl(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 18u;
  const uint j = c & 3u;
  const float d = wq_f16(bb);
  levels((wq_u64(bb + 2u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu, lo, hi);
  lo *= d;
  hi *= d;
}

// FP4 (E2M1) codes, doubled as in kFP4Values (src/quant/blocks.h); the
// scales below are halved to match, so half_scale * level is the value
// (one exact product: <= 4 significant bits times a power of two or a
// 4-bit UE4M3 mantissa).
const float kFP4Levels[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0,
                                       -3.0, -4.0, -6.0, -8.0, -12.0);

void fp4_levels(uvec2 q, out vec4 lo, out vec4 hi) {
  lo = vec4(kFP4Levels[q.x & 15u], kFP4Levels[(q.x >> 8u) & 15u], kFP4Levels[(q.x >> 16u) & 15u],
            kFP4Levels[(q.x >> 24u) & 15u]);
  hi = vec4(kFP4Levels[q.y & 15u], kFP4Levels[(q.y >> 8u) & 15u], kFP4Levels[(q.y >> 16u) & 15u],
            kFP4Levels[(q.y >> 24u) & 15u]);
}

// MXFP4 (17 bytes): e (E8M0), qs[16] as Q4_0; 2^(e - 128) * level[q]
// (e = 0, 1: the subnormals 2^-128, 2^-127).
void dq_mxfp4(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 2u) * 17u;
  const uint j = c & 3u;
  const uint e = wq_u8(bb);
  const float d = uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23u);
  fp4_levels((wq_u64(bb + 1u + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu, lo, hi);
  lo *= d;
  hi *= d;
}

// Half an NVFP4 UE4M3 scale x (as the CPU's ue4m3_half_to_f32): 0 for 0x00
// and 0x7F; exponent field 0: mantissa * 2^-10; else (8 + mantissa) *
// 2^(exponent - 11); bit 7 ignored.
float nvfp4_half_scale(uint x) {
  const uint ex = (x >> 3u) & 15u, man = x & 7u;
  const float d = ex == 0u ? float(man) * uintBitsToFloat(117u << 23u)
                           : float(8u + man) * uintBitsToFloat((ex + 116u) << 23u);
  return x == 0x7fu ? 0.0 : d;
}

// NVFP4 (36 bytes, 64 elements): d[4] (UE4M3 per 16 elements), qs[32]; chunk
// c is half c % 2 of sub-block s = (c / 2) % 4: the low (first half) or high
// nibbles of qs[8s .. 8s+7].
void dq_nvfp4(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 3u) * 36u;
  const uint s = (c >> 1u) & 3u;
  const float d = nvfp4_half_scale(wq_u8(bb + s));
  fp4_levels((wq_u64(bb + 4u + 8u * s) >> ((c & 1u) * 4u)) & 0x0f0f0f0fu, lo, hi);
  lo *= d;
  hi *= d;
}

// ------------------------------------------------- 256-element super-blocks
// Chunk c: super-block c / 32, group g = (c / 4) % 8 (elements 32g .. 32g+31
// of the super-block), part j = c % 4 (elements 32g + 8j .. 32g + 8j + 7).

// Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min per 16
// elements), qs[64] (2 bits: byte (e/128)*32 + e%32, shift 2*((e%128)/32)),
// d, dmin; (d * sc) * q - dmin * m.
void dq_q2_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 84u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  const uint sc = wq_u8(bb + 2u * g + (j >> 1u));
  const float dl = wq_f16(bb + 80u) * float(sc & 15u);
  const float ml = wq_f16(bb + 82u) * float(sc >> 4u);
  const uvec2 q = (wq_u64(bb + 16u + (g >> 2u) * 32u + 8u * j) >> (2u * (g & 3u))) & 0x03030303u;
  vec4 a, b;
  bytes_u(q, a, b);
  precise vec4 ra = dl * a - ml;
  precise vec4 rb2 = dl * b - ml;
  lo = ra;
  hi = rb2;
}

// Q3_K (110 bytes): hmask[32] (bit e/32 of hmask[e%32]: set +0, clear -4),
// qs[64] (low 2 bits as Q2_K), scales[12] (16 6-bit scales, offset 32), d;
// (d * scale) * q.
void dq_q3_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 110u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  const uint s = 2u * g + (j >> 1u);  // scale index (16 elements each)
  const uint sl = (wq_u8(bb + 96u + (s & 7u)) >> ((s >> 3u) * 4u)) & 15u;
  const uint sh = (wq_u8(bb + 96u + 8u + (s & 3u)) >> (2u * (s >> 2u))) & 3u;
  const float dl = wq_f16(bb + 108u) * float(int(sl | (sh << 4u)) - 32);
  const uvec2 q2 = (wq_u64(bb + 32u + (g >> 2u) * 32u + 8u * j) >> (2u * (g & 3u))) & 0x03030303u;
  const uvec2 hm = byte_bits(wq_u64(bb + 8u * j), g);
  // q2 + 4 * hm - 4 in 0..7 - 4: bytes hold q2 | hm << 2, then shift down by 4.
  vec4 a, b;
  bytes_u(q2 | (hm << 2u), a, b);
  lo = dl * (a - 4.0);
  hi = dl * (b - 4.0);
}

// Q4_K / Q5_K (6-bit scale, min) pair of group g from the 12 scale bytes at sb.
void scale_min_k4(uint sb, uint g, out uint sc, out uint m) {
  if (g < 4u) {
    sc = wq_u8(sb + g) & 63u;
    m = wq_u8(sb + g + 4u) & 63u;
  } else {
    const uint b = wq_u8(sb + g + 4u);
    sc = (b & 15u) | ((wq_u8(sb + g - 4u) >> 6u) << 4u);
    m = (b >> 4u) | ((wq_u8(sb + g) >> 6u) << 4u);
  }
}

// Q4_K (144 bytes): d, dmin, scales[12], qs[128] (nibble g%2 of
// qs[(g/2)*32 + l]); (d * sc) * q - dmin * m.
void dq_q4_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 144u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  uint sc, m;
  scale_min_k4(bb + 4u, g, sc, m);
  const float d1 = wq_f16(bb) * float(sc);
  const float m1 = wq_f16(bb + 2u) * float(m);
  const uvec2 q = (wq_u64(bb + 16u + (g >> 1u) * 32u + 8u * j) >> ((g & 1u) * 4u)) & 0x0f0f0f0fu;
  vec4 a, b;
  bytes_u(q, a, b);
  precise vec4 ra = d1 * a - m1;
  precise vec4 rb2 = d1 * b - m1;
  lo = ra;
  hi = rb2;
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32] (bit g of qh[l]), qs[128] as Q4_K.
void dq_q5_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 176u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  uint sc, m;
  scale_min_k4(bb + 4u, g, sc, m);
  const float d1 = wq_f16(bb) * float(sc);
  const float m1 = wq_f16(bb + 2u) * float(m);
  const uvec2 q = ((wq_u64(bb + 48u + (g >> 1u) * 32u + 8u * j) >> ((g & 1u) * 4u)) & 0x0f0f0f0fu) |
                  (byte_bits(wq_u64(bb + 16u + 8u * j), g) << 4u);
  vec4 a, b;
  bytes_u(q, a, b);
  precise vec4 ra = d1 * a - m1;
  precise vec4 rb2 = d1 * b - m1;
  lo = ra;
  hi = rb2;
}

// Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8), d. Element e = 32g + l
// of half h = g / 4: low 4 bits nibble (g%4 >= 2) of ql[64h + 32(g%2) + l],
// high 2 bits (qh[32h + l] >> 2(g%4)) & 3; (d * scale[e/16]) * (q - 32).
void dq_q6_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 210u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  const uint h = g >> 2u, g4 = g & 3u;
  const int sc = bitfieldExtract(int(wq_u8(bb + 192u + 2u * g + (j >> 1u))), 0, 8);
  const float ds = wq_f16(bb + 208u) * float(sc);
  const uvec2 ql = (wq_u64(bb + 64u * h + 32u * (g & 1u) + 8u * j) >> ((g4 >> 1u) * 4u)) & 0x0f0f0f0fu;
  const uvec2 qh = (wq_u64(bb + 128u + 32u * h + 8u * j) >> (2u * g4)) & 0x03030303u;
  vec4 a, b;
  bytes_u(ql | (qh << 4u), a, b);
  lo = ds * (a - 32.0);
  hi = ds * (b - 32.0);
}

// Q8_K (292 bytes): d (f32), qs[256] (int8), bsums; d * q.
void dq_q8_k(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 292u;
  const float d = uintBitsToFloat(wq_u32(bb));
  bytes_s(wq_u64(bb + 4u + 8u * (c & 31u)), lo, hi);
  lo *= d;
  hi *= d;
}

// IQ4_XS (136 bytes): d, scales_h (u16), scales_l[4], qs[128]; group g: 6-bit
// scale ls = nibble g%2 of scales_l[g/2] | ((scales_h >> 2g) & 3) << 4, qs[16g
// .. 16g+15] as IQ4_NL; (d * (ls - 32)) * level[q].
void dq_iq4_xs(uint rb, uint c, out vec4 lo, out vec4 hi) {
  const uint bb = rb + (c >> 5u) * 136u;
  const uint g = (c >> 2u) & 7u, j = c & 3u;
  const uint ls = ((wq_u8(bb + 4u + (g >> 1u)) >> ((g & 1u) * 4u)) & 15u) |
                  (((wq_u16(bb + 2u) >> (2u * g)) & 3u) << 4u);
  const float dl = wq_f16(bb) * float(int(ls) - 32);
  levels((wq_u64(bb + 8u + 16u * g + (j & 1u) * 8u) >> ((j >> 1u) * 4u)) & 0x0f0f0f0fu, lo, hi);
  lo *= dl;
  hi *= dl;
}

// ------------------------------------------- two legacy blocks as words

// Whether `type` is a 32-element legacy block type (Q4_0 .. Q8_0: the ones
// legacy_pair() reads, and the int8 path's legacy block term).
bool legacy_type(uint type) {
  return type == T_Q4_0 || type == T_Q4_1 || type == T_Q5_0 || type == T_Q5_1 || type == T_Q8_0;
}

// 32 bits at byte b of the words w (any alignment; b + 4 within them).
uint pair_u32(uint w[17], uint b) {
  const uint i = b >> 2u;
  const uint s = (b & 3u) * 8u;
  return s == 0u ? w[i] : (w[i] >> s) | (w[i + 1u] << (32u - s));
}

// Blocks 2p and 2p + 1 of a legacy-type row at byte rb, both inside the
// row, the pair starting 4-byte aligned (rb % 4 == 0: a pair's bytes are a
// multiple of 4 in every legacy type), read as the pair's 9-17 whole words
// rather than field by field. Block h's codes: element 4i + j in byte j of
// c[8h + i], as unsigned nibbles (Q5: with the fifth bit as bit 4) or Q8_0's
// signed bytes; d[h] its scale, m[h] its minimum (Q4_1, Q5_1; else 0).
void legacy_pair(uint type, uint rb, uint p, out uint c[16], out float d[2], out float m[2]) {
  const uint bb = type == T_Q4_0 ? 18u : type == T_Q4_1 ? 20u : type == T_Q5_0 ? 22u
                : type == T_Q5_1 ? 24u : 34u;
  const uint nw = bb / 2u;  // words of the pair
  const uint w0 = (rb + 2u * p * bb) >> 2u;
  uint w[17];
  for (uint i = 0u; i < 17u; ++i) w[i] = i < nw ? wq[w0 + i] : 0u;
  for (uint h = 0u; h < 2u; ++h) {
    const uint o = h * bb;  // block h's first byte in w
    d[h] = unpackHalf2x16(pair_u32(w, o)).x;
    m[h] = 0.0;
    if (type == T_Q8_0) {
      for (uint i = 0u; i < 8u; ++i) c[8u * h + i] = pair_u32(w, o + 2u + 4u * i);
      continue;
    }
    uint qs = o + 2u, qh = 0u;
    if (type == T_Q4_1) {
      m[h] = unpackHalf2x16(pair_u32(w, o + 2u)).x;
      qs = o + 4u;
    } else if (type == T_Q5_0) {
      qh = pair_u32(w, o + 2u);
      qs = o + 6u;
    } else if (type == T_Q5_1) {
      m[h] = unpackHalf2x16(pair_u32(w, o + 2u)).x;
      qh = pair_u32(w, o + 4u);
      qs = o + 8u;
    }
    // Elements 0-15: low nibbles of qs[0..15]; 16-31: high nibbles.
    for (uint i = 0u; i < 4u; ++i) {
      const uint q = pair_u32(w, qs + 4u * i);
      c[8u * h + i] = q & 0x0f0f0f0fu;
      c[8u * h + i + 4u] = (q >> 4u) & 0x0f0f0f0fu;
    }
    if (type == T_Q5_0 || type == T_Q5_1) {
      for (uint i = 0u; i < 8u; ++i) {
        c[8u * h + i] |= spread_bits((qh >> (4u * i)) & 15u).x << 4u;
      }
    }
  }
}

// Elements 8j .. 8j + 7 of block h of a legacy_pair() read, dequantized as
// dequant8() gives them (bit for bit: the same expressions).
void legacy_pair8(uint type, uint c[16], float d[2], float m[2], uint h, uint j, out vec4 lo,
                  out vec4 hi) {
  const uvec2 q = uvec2(c[8u * h + 2u * j], c[8u * h + 2u * j + 1u]);
  if (type == T_Q8_0) {
    bytes_s(q, lo, hi);
    lo *= d[h];
    hi *= d[h];
    return;
  }
  vec4 a, b;
  bytes_u(q, a, b);
  if (type == T_Q4_1 || type == T_Q5_1) {
    precise vec4 ra = d[h] * a + m[h];
    precise vec4 rb2 = d[h] * b + m[h];
    lo = ra;
    hi = rb2;
    return;
  }
  const float off = type == T_Q4_0 ? 8.0 : 16.0;
  lo = d[h] * (a - off);
  hi = d[h] * (b - off);
}

// Chunk c (elements 8c .. 8c+7) of the row of dtype `type` at byte rb.
void dequant8(uint type, uint rb, uint c, uint ne0, out vec4 lo, out vec4 hi) {
  switch (type) {
    case T_F32: dq_f32(rb, c, ne0, lo, hi); break;
    case T_F16: dq_half(rb, c, ne0, false, lo, hi); break;
    case T_BF16: dq_half(rb, c, ne0, true, lo, hi); break;
    case T_Q4_0: dq_q4_0(rb, c, lo, hi); break;
    case T_Q4_1: dq_q4_1(rb, c, lo, hi); break;
    case T_Q5_0: dq_q5_0(rb, c, lo, hi); break;
    case T_Q5_1: dq_q5_1(rb, c, lo, hi); break;
    case T_Q8_0: dq_q8_0(rb, c, lo, hi); break;
    case T_Q2_K: dq_q2_k(rb, c, lo, hi); break;
    case T_Q3_K: dq_q3_k(rb, c, lo, hi); break;
    case T_Q4_K: dq_q4_k(rb, c, lo, hi); break;
    case T_Q5_K: dq_q5_k(rb, c, lo, hi); break;
    case T_Q6_K: dq_q6_k(rb, c, lo, hi); break;
    case T_Q8_K: dq_q8_k(rb, c, lo, hi); break;
    case T_IQ4_NL: dq_iq4_nl(rb, c, lo, hi); break;
    case T_IQ4_XS: dq_iq4_xs(rb, c, lo, hi); break;
    case T_MXFP4: dq_mxfp4(rb, c, lo, hi); break;
    case T_NVFP4: dq_nvfp4(rb, c, lo, hi); break;
    default: lo = vec4(0.0); hi = vec4(0.0); break;
  }
}
