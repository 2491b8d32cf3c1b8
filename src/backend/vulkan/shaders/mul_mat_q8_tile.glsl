// The int8 tile of mul_mat_q8.comp and mul_mat_id_q8.comp: BN = 64 weight
// rows x BM = 64 activation slots, stepping over K two 32-element blocks (a
// 64-element summation chunk) a stage. Each stage the workgroup's four
// quarters load block 2s's weight rows, its slots, block 2s + 1's weight rows
// and its slots: a weight loader unpacks one row's block (codes, scale,
// minimum, sub-scales; mul_mat_q8.glsl's q8_weight_block()) into shared
// memory, a slot loader copies one slot's quantized block. Every thread then
// forms a 4 x 4 block of outputs (rows tn + 16i, slots tm + 16j) from integer
// dot products of packed bytes (q8_block_term()), holding its four rows'
// codes in registers across the four slots. Shared rows are 9 words apart so
// lanes reading one word of different rows fall in distinct banks. Each
// output keeps the partial of the current chunk (SUM_CHUNK / 32 blocks)
// beside its running total and takes its blocks in ascending order, so the
// sums are mul_mat_q8.glsl's, bit for bit as the matvec shaders' Q8 mode sums
// them: a slot's output depends neither on its place in the tile nor on the
// other slots.
//
// Include after mul_mat_q8.glsl, in a shader of 256 invocations with spec
// constant 0 TYPE (1 is STAGED, below), binding 0 `p` with a field w (the
// weights' shape), buffers q_w (quantized activations, words) and d_f (F32
// output). The including
// file defines the two functions declared below, which say where tile slot
// m's data lie; `at` is what its call of q8_tile() passes through to them.

uint q8_tile_x_block0(uvec4 at, uint m);  // word index of slot m's quantized block 0
uint q8_tile_dst(uvec4 at, uint m);       // word index of slot m's dst column

// Spec constant 1: 1 stages each block's weight rows and slots in shared
// memory (the loads above); 0 has every thread read its own four rows and
// slots from the buffers, with no barrier: on a CPU device (lavapipe),
// whose workgroup runs on one core, the copy gains nothing and every
// barrier switches between the workgroup's SIMD groups, which outweighs
// unpacking each block four times over for the weight types whose blocks
// unpack cheaply (ops_matmul.cc chooses). The same terms in the same order
// either way.
layout(constant_id = 1) const uint STAGED = 1u;

const uint BN = kMatTile, BM = kMatTile;
const uint RS = 9u;  // shared row stride (words)
const uint CHUNK_BLOCKS = SUM_CHUNK / kMatQ8Block;
const uint SB = 2u;  // blocks a stage: a quarter of the workgroup loads each side of each

shared uint wc_s[SB * BN * RS];  // block b's weight row n's codes at (b * BN + n) * RS
shared float wd_s[SB * BN], wm_s[SB * BN];
shared uint ws_s[SB * BN];       // weight row n's packed sub-scales
shared uint xc_s[SB * BM * RS];  // block b's slot m's codes at (b * BM + m) * RS
shared float xd_s[SB * BM];
shared int xs_s[SB * BM];

// dst rows n0 .. n0+63 of slots 0 .. ncols-1 against the weight matrix at
// byte wbase (w's K = ne0, N = ne1, row stride nb1). Every invocation of the
// workgroup must call it; its last shared access is followed by a barrier,
// its dst stores by none.
void q8_tile(uint n0, uint wbase, uint ncols, uvec4 at) {
  const uint tid = gl_LocalInvocationID.x;
  const uint N = p.w.ne1;
  const uint nb = p.w.ne0 / kMatQ8Block;
  const uint tn = tid % 16u, tm = tid / 16u;
  const uint jmax = (ncols + 15u) / 16u;
  // This thread's loads: quarter q = tid / 64 loads block sb = q / 2 of the
  // stage, weight row n0 + r (q even) or slot r (q odd), r = tid % 64.
  const uint quarter = tid / 64u, r = tid % 64u, sb = quarter / 2u;
  const bool w_loader = quarter % 2u == 0u && n0 + r < N;
  const uint wrow = wbase + (n0 + r) * p.w.nb1;
  const bool x_loader = quarter % 2u == 1u && r < ncols;
  const uint xblk0 = x_loader ? q8_tile_x_block0(at, r) : 0u;
  // Unstaged: block 0 of this thread's four slots (slots past ncols read
  // block 0 of q; their outputs are not stored).
  uint slot_blk0[4];
  for (uint j = 0u; j < 4u; ++j) {
    const uint slot = tm + 16u * j;
    slot_blk0[j] = STAGED == 0u && slot < ncols ? q8_tile_x_block0(at, slot) : 0u;
  }

  precise float acc[4][4];  // the current chunk's partial sums
  precise float tot[4][4];  // the finished chunks' sum
  for (uint i = 0u; i < 4u; ++i) {
    for (uint j = 0u; j < 4u; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint kb0 = 0u; kb0 < nb; kb0 += SB) {
    const uint kb = kb0 + sb;
    if (STAGED != 0u && w_loader && kb < nb) {
      uint c[8];
      float dw, mw;
      uint ws;
      q8_weight_block(TYPE, wrow, kb, c, dw, mw, ws);
      const uint s = sb * BN + r;
      for (uint i = 0u; i < 8u; ++i) wc_s[s * RS + i] = c[i];
      wd_s[s] = dw;
      wm_s[s] = mw;
      ws_s[s] = ws;
    } else if (STAGED != 0u && x_loader && kb < nb) {
      const uint s = sb * BM + r;
      const uint qo = xblk0 + kb * Q8_WORDS;
      for (uint i = 0u; i < 8u; ++i) xc_s[s * RS + i] = q_w[qo + i];
      xd_s[s] = uintBitsToFloat(q_w[qo + 8u]);
      xs_s[s] = int(q_w[qo + 9u]);
    }
    if (STAGED != 0u) barrier();
    for (uint b = 0u; b < SB; ++b) {
      if (kb0 + b >= nb) break;
      // This thread's four weight rows of block kb0 + b, held across its slots.
      uint wc[4][8];
      float dw[4], mw[4];
      uint ws[4];
      for (uint i = 0u; i < 4u; ++i) {
        if (STAGED == 0u) {  // rows past N: zeros (their outputs are not stored)
          const uint row = n0 + tn + 16u * i;
          for (uint w = 0u; w < 8u; ++w) wc[i][w] = 0u;
          dw[i] = 0.0;
          mw[i] = 0.0;
          ws[i] = 0u;
          if (row < N) {
            q8_weight_block(TYPE, wbase + row * p.w.nb1, kb0 + b, wc[i], dw[i], mw[i], ws[i]);
          }
          continue;
        }
        const uint n = b * BN + tn + 16u * i;
        for (uint w = 0u; w < 8u; ++w) wc[i][w] = wc_s[n * RS + w];
        dw[i] = wd_s[n];
        mw[i] = wm_s[n];
        ws[i] = ws_s[n];
      }
      for (uint j = 0u; j < 4u; ++j) {
        if (j >= jmax) continue;
        uint xc[8];
        float dx;
        int xs;
        if (STAGED == 0u) {
          const uint qo = slot_blk0[j] + (tm + 16u * j < ncols ? (kb0 + b) * Q8_WORDS : 0u);
          for (uint w = 0u; w < 8u; ++w) xc[w] = q_w[qo + w];
          dx = uintBitsToFloat(q_w[qo + 8u]);
          xs = int(q_w[qo + 9u]);
        } else {
          const uint m = b * BM + tm + 16u * j;
          for (uint w = 0u; w < 8u; ++w) xc[w] = xc_s[m * RS + w];
          dx = xd_s[m];
          xs = xs_s[m];
        }
        for (uint i = 0u; i < 4u; ++i) {
          acc[i][j] = acc[i][j] + q8_block_term(TYPE, wc[i], xc, xs, dw[i], mw[i], ws[i], dx);
        }
      }
      // A chunk ends here: its partial joins the total.
      const uint kb_done = kb0 + b + 1u;
      if (kb_done % CHUNK_BLOCKS == 0u || kb_done == nb) {
        for (uint i = 0u; i < 4u; ++i) {
          for (uint j = 0u; j < 4u; ++j) {
            tot[i][j] = tot[i][j] + acc[i][j];
            acc[i][j] = 0.0;
          }
        }
      }
    }
    if (STAGED != 0u) barrier();
  }
  for (uint j = 0u; j < 4u; ++j) {
    const uint m = tm + 16u * j;
    if (m >= ncols) continue;
    const uint dc = q8_tile_dst(at, m);
    for (uint i = 0u; i < 4u; ++i) {
      const uint n = n0 + tn + 16u * i;
      if (n < N) d_f[dc + n] = tot[i][j];
    }
  }
}
