// The int8 path's activation block (mul_mat_q8.glsl): 32 values quantized
// as quant_q8_0.glsl does, into packed codes (element 4i + j in byte j of
// word i), the scale dx (the f16 rounding of d, widened) and the codes'
// sum. quant_act_q8.comp, the decode matvec's output tail and flash
// attention's output (mul_mat_vec.glsl, flash_attn.comp) all write these
// blocks with it (STORE_Q8_ACT_BLOCK: the block's words in a buffer).
// Include after quant_q8_0.glsl and half_convert.glsl.

// Quantizes 32 activations: packed codes, the scale dx (f16-rounded d) and
// the codes' sum.
void q8_act_block(float v[32], out uint c[8], out float dx, out int xs) {
  uint amax = 0u;
  for (uint j = 0u; j < 32u; ++j) amax = max(amax, q8_abs_bits(floatBitsToUint(v[j])));
  const uint d = q8_scale(amax);
  const uint id = q8_inverse(d);
  xs = 0;
  for (uint i = 0u; i < 8u; ++i) {
    uint word = 0u;
    for (uint j = 0u; j < 4u; ++j) {
      const int q = q8_code(floatBitsToUint(v[4u * i + j]), id);
      xs += q;
      word |= (uint(q) & 0xffu) << (8u * j);
    }
    c[i] = word;
  }
  dx = unpackHalf2x16(f32_to_f16(d)).x;
}

// Quantizes the 32 floats V (a float[32]) into the block of
// kMatQ8BlockWords words at word O of the uint array BUF: the codes in
// words 0 .. 7, dx's bits in word 8, the codes' sum in word 9.
#define STORE_Q8_ACT_BLOCK(BUF, O, V)                               \
  {                                                                 \
    uint sq_c[8];                                                   \
    float sq_dx;                                                    \
    int sq_xs;                                                      \
    q8_act_block(V, sq_c, sq_dx, sq_xs);                            \
    const uint sq_o = (O);                                          \
    for (uint sq_i = 0u; sq_i < 8u; ++sq_i) BUF[sq_o + sq_i] = sq_c[sq_i]; \
    BUF[sq_o + 8u] = floatBitsToUint(sq_dx);                        \
    BUF[sq_o + 9u] = uint(sq_xs);                                   \
  }
