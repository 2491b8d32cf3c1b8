// The int8 tile of mul_mat_q8.comp and mul_mat_id_q8.comp: BN = 64 weight
// rows x BM = 64 activation slots, stepping over K one 32-element block at a
// time. Each step, threads 0-63 unpack one weight row's block (codes, scale,
// minimum, sub-scales; mul_mat_q8.glsl's q8_weight_block()) into shared
// memory and threads 64-127 copy one slot's quantized block; every thread
// then forms a 4 x 4 block of outputs (rows tn + 16i, slots tm + 16j) from
// integer dot products of packed bytes (q8_block_term()). Shared rows are 9
// words apart so lanes reading one word of different rows fall in distinct
// banks. Each output keeps the partial of the current chunk (SUM_CHUNK / 32
// blocks) beside its running total, so the sums are mul_mat_q8.glsl's, bit
// for bit as the matvec shaders' Q8 mode sums them: a slot's output depends
// neither on its place in the tile nor on the other slots.
//
// Include after mul_mat_q8.glsl, in a shader of 256 invocations with spec
// constant TYPE, binding 0 `p` with a field w (the weights' shape), buffers
// q_w (quantized activations, words) and d_f (F32 output). The including
// file defines the two functions declared below, which say where tile slot
// m's data lie; `at` is what its call of q8_tile() passes through to them.

uint q8_tile_x_block0(uvec4 at, uint m);  // word index of slot m's quantized block 0
uint q8_tile_dst(uvec4 at, uint m);       // word index of slot m's dst column

const uint BN = kMatTile, BM = kMatTile;
const uint RS = 9u;  // shared row stride (words)
const uint CHUNK_BLOCKS = SUM_CHUNK / kMatQ8Block;

shared uint wc_s[BN * RS];  // weight row n's codes at n * RS
shared float wd_s[BN], wm_s[BN];
shared uint ws_s[BN];       // weight row n's packed sub-scales
shared uint xc_s[BM * RS];  // slot m's codes at m * RS
shared float xd_s[BM];
shared int xs_s[BM];

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
  // This thread's loads: weight row n0 + tid (tid < 64) or slot tid - 64.
  const bool w_loader = tid < BN && n0 + tid < N;
  const uint wrow = wbase + (n0 + tid) * p.w.nb1;
  const bool x_loader = tid >= BN && tid < BN + BM && tid - BN < ncols;
  const uint xblk0 = x_loader ? q8_tile_x_block0(at, tid - BN) : 0u;

  precise float acc[4][4];  // the current chunk's partial sums
  precise float tot[4][4];  // the finished chunks' sum
  for (uint i = 0u; i < 4u; ++i) {
    for (uint j = 0u; j < 4u; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint kb = 0u; kb < nb; ++kb) {
    if (w_loader) {
      uint c[8];
      float dw, mw;
      uint ws;
      q8_weight_block(TYPE, wrow, kb, c, dw, mw, ws);
      for (uint i = 0u; i < 8u; ++i) wc_s[tid * RS + i] = c[i];
      wd_s[tid] = dw;
      wm_s[tid] = mw;
      ws_s[tid] = ws;
    } else if (x_loader) {
      const uint m = tid - BN;
      const uint qo = xblk0 + kb * Q8_WORDS;
      for (uint i = 0u; i < 8u; ++i) xc_s[m * RS + i] = q_w[qo + i];
      xd_s[m] = uintBitsToFloat(q_w[qo + 8u]);
      xs_s[m] = int(q_w[qo + 9u]);
    }
    barrier();
    for (uint j = 0u; j < 4u; ++j) {
      if (j >= jmax) continue;
      const uint m = tm + 16u * j;
      uint xc[8];
      for (uint w = 0u; w < 8u; ++w) xc[w] = xc_s[m * RS + w];
      const float dx = xd_s[m];
      const int xs = xs_s[m];
      for (uint i = 0u; i < 4u; ++i) {
        const uint n = tn + 16u * i;
        uint wc[8];
        for (uint w = 0u; w < 8u; ++w) wc[w] = wc_s[n * RS + w];
        acc[i][j] = acc[i][j] + q8_block_term(TYPE, wc, xc, xs, wd_s[n], wm_s[n], ws_s[n], dx);
      }
    }
    // A chunk ends here: its partial joins the total.
    if ((kb + 1u) % CHUNK_BLOCKS == 0u || kb + 1u == nb) {
      for (uint i = 0u; i < 4u; ++i) {
        for (uint j = 0u; j < 4u; ++j) {
          tot[i][j] = tot[i][j] + acc[i][j];
          acc[i][j] = 0.0;
        }
      }
    }
    barrier();
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
