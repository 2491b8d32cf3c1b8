// The rotation of rope.comp and rope_set_rows.comp, written once so that
// both give the same bits (the rotation `precise`: no contraction into an
// fma that one shader might get and the other not). Include after the
// parameter block `p` (n_dims, sec0..sec3, mscale, coef[], pos, ff), the
// buffers pos_i and ff_f and the spec constants MODE and HAS_FF
// (rope_interface.h: FOLIO_VK_ROPE_TABLE, kRopeMode*).

// Which of the 4 position sections drives pair i (ref rope.cc section_of).
uint section_of(uint i) {
  const uint sector = i % (p.sec0 + p.sec1 + p.sec2 + p.sec3);
  if (MODE == kRopeModeImrope) {
    if (sector % 3u == 0u && sector < 3u * p.sec0) return 0u;
    if (sector % 3u == 1u && sector < 3u * p.sec1) return 1u;
    if (sector % 3u == 2u && sector < 3u * p.sec2) return 2u;
    return 3u;
  }
  if (sector < p.sec0) return 0u;
  if (sector < p.sec0 + p.sec1) return 1u;
  if (sector < p.sec0 + p.sec1 + p.sec2) return 2u;
  return 3u;
}

// theta - k * 2pi for the nearest integer k (Cody-Waite: 2pi in three parts,
// the first with 8 significant bits so k * part is exact for |k| < 2^16).
float reduce_angle(float theta) {
  const float k = round(theta * 0.15915494309189535);
  precise float r = theta - k * 6.28125;
  r = r - k * 1.9353071693331003e-3;
  r = r - k * 1.0253131677018246e-11;
  return r;
}

// Pair i (elements x0, x1) of a row of token `tok` of n_tok, rotated.
void rope_pair(uint i, uint tok, uint n_tok, float x0, float x1, out float d0, out float d1) {
  const uint sec = MODE >= kRopeModeMrope ? section_of(i) : 0u;  // the multi-section modes
  const int ps = pos_i[flat_elem_off(p.pos, sec * n_tok + tok) >> 2];
  float theta = float(ps) * p.coef[i];
  if (HAS_FF) theta /= ff_f[flat_elem_off(p.ff, i) >> 2];
  const float a = reduce_angle(theta);
  const float c = cos(a) * p.mscale;
  const float s = sin(a) * p.mscale;
  precise float r0 = x0 * c - x1 * s;
  precise float r1 = x0 * s + x1 * c;
  d0 = r0;
  d1 = r1;
}
