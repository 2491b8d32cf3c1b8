// The int8 tile of mul_mat_q8.comp and mul_mat_id_q8.comp: BN = 64 weight
// rows x BM = 64 activation slots, stepping over K two 32-element blocks (a
// 64-element summation chunk) a stage. Each stage the workgroup loads the
// stage's two blocks of its 64 weight rows and 64 slots into shared memory
// (256 loads, WG at a time): a weight load unpacks one row's block (codes,
// scale, minimum, sub-scales; mul_mat_q8.glsl's q8_weight_block()), a slot
// load copies one slot's quantized block. Every thread then forms an R x R
// block of outputs (rows tn + (BN / R) i, slots tm + (BM / R) j) from
// integer dot products of packed bytes (q8_block_term()), holding its R
// rows' codes in registers across its slots. Each output keeps the
// partial of the current chunk (SUM_CHUNK / 32 blocks) beside its running
// total and takes its blocks in ascending order, so the sums are
// mul_mat_q8.glsl's, bit for bit as the matvec shaders' Q8 mode sums them:
// a slot's output depends neither on its place in the tile nor on the
// other slots, nor on R.
//
// R (spec constant 1): 4 on a GPU (256 threads); 8 on a CPU device
// (DeviceCaps::tile_rows: 64 threads), where every shared-memory load is a
// loop over the SIMD lanes and twice the outputs a load pays.
//
// Include after mul_mat_q8.glsl, in a shader with spec constant 0 TYPE,
// spec constant 2 WG = (64 / R)^2 as its workgroup size, binding 0 `p`
// with a field w (the weights' shape), buffers q_w (quantized activations,
// words) and d_f (F32 output). The including file defines the two
// functions declared below, which say where tile slot m's data lie; `at`
// is what its call of q8_tile() passes through to them.

uint q8_tile_x_block0(uvec4 at, uint m);  // word index of slot m's quantized block 0
uint q8_tile_dst(uvec4 at, uint m);       // word index of slot m's dst column

layout(constant_id = 1) const uint R = 4u;     // rows (and slots) a thread: 4 or 8
layout(constant_id = 2) const uint WG = 256u;  // the workgroup: (BN / R)^2
const uint BN = kMatTile, BM = kMatTile;
const uint CHUNK_BLOCKS = SUM_CHUNK / kMatQ8Block;
const uint SB = 2u;  // blocks a stage
const uint RT = BN / R;  // threads along the rows (and the slots)
const uint LOADS = SB * (BN + BM);  // a stage's loads

// Block b's weight row n at (b * BN + n) * 3: codes 0-3, codes 4-7, then
// (dw, mw, ws, 0) as bits. Block b's slot m at (b * BM + m) * 3: codes 0-3,
// codes 4-7, then (dx, xs, 0, 0). Whole 16-byte entries, so a thread
// reads a row or slot in three loads, and rows 48 bytes apart put the
// lanes that read consecutive rows in distinct banks.
shared uvec4 wt_s[SB * BN * 3u];
shared uvec4 xt_s[SB * BM * 3u];

// dst rows n0 .. n0+63 of slots 0 .. ncols-1 against the weight matrix at
// byte wbase (w's K = ne0, N = ne1, row stride nb1). Every invocation of the
// workgroup must call it; its last shared access is followed by a barrier,
// its dst stores by none.
void q8_tile(uint n0, uint wbase, uint ncols, uvec4 at) {
  const uint tid = gl_LocalInvocationID.x;
  const uint N = p.w.ne1;
  const uint nb = p.w.ne0 / kMatQ8Block;
  const uint tn = tid % RT, tm = tid / RT;
  const uint jmax = (ncols + RT - 1u) / RT;

  precise float acc[R][R];  // the current chunk's partial sums
  precise float tot[R][R];  // the finished chunks' sum
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    [[unroll]] for (uint j = 0u; j < R; ++j) {
      acc[i][j] = 0.0;
      tot[i][j] = 0.0;
    }
  }
  for (uint kb0 = 0u; kb0 < nb; kb0 += SB) {
    // Load l of the stage: block sb = l / 128, weight row r (l / 64 even)
    // or slot r (odd), r = l % 64.
    [[unroll]] for (uint round = 0u; round < LOADS / WG; ++round) {
      const uint l = tid + round * WG;
      const uint sb = l / (BN + BM), r = l % 64u, kb = kb0 + sb;
      if ((l / 64u) % 2u == 0u) {
        if (n0 + r < N && kb < nb) {
          uint c[8];
          float dw, mw;
          uint ws;
          q8_weight_block(TYPE, wbase + (n0 + r) * p.w.nb1, kb, c, dw, mw, ws);
          const uint s = (sb * BN + r) * 3u;
          wt_s[s] = uvec4(c[0], c[1], c[2], c[3]);
          wt_s[s + 1u] = uvec4(c[4], c[5], c[6], c[7]);
          wt_s[s + 2u] = uvec4(floatBitsToUint(dw), floatBitsToUint(mw), ws, 0u);
        }
      } else if (r < ncols && kb < nb) {
        const uint s = (sb * BM + r) * 3u;
        const uint qo = q8_tile_x_block0(at, r) + kb * Q8_WORDS;
        xt_s[s] = uvec4(q_w[qo], q_w[qo + 1u], q_w[qo + 2u], q_w[qo + 3u]);
        xt_s[s + 1u] = uvec4(q_w[qo + 4u], q_w[qo + 5u], q_w[qo + 6u], q_w[qo + 7u]);
        xt_s[s + 2u] = uvec4(q_w[qo + 8u], q_w[qo + 9u], 0u, 0u);
      }
    }
    barrier();
    [[unroll]] for (uint b = 0u; b < SB; ++b) {
      if (kb0 + b < nb) {
        // This thread's R weight rows of block kb0 + b, held across its
        // slots (rows past N hold what the stage left there: their outputs
        // are not stored).
        uint wc[R][8];
        float dw[R], mw[R];
        uint ws[R];
        [[unroll]] for (uint i = 0u; i < R; ++i) {
          const uint n = (b * BN + tn + RT * i) * 3u;
          const uvec4 c0 = wt_s[n], c1 = wt_s[n + 1u], meta = wt_s[n + 2u];
          wc[i] = uint[8](c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w);
          dw[i] = uintBitsToFloat(meta.x);
          mw[i] = uintBitsToFloat(meta.y);
          ws[i] = meta.z;
        }
        [[unroll]] for (uint j = 0u; j < R; ++j) {
          if (j < jmax) {
            const uint m = (b * BM + tm + RT * j) * 3u;
            const uvec4 c0 = xt_s[m], c1 = xt_s[m + 1u], meta = xt_s[m + 2u];
            const uint xc[8] = uint[8](c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w);
            const float dx = uintBitsToFloat(meta.x);
            const int xs = int(meta.y);
            [[unroll]] for (uint i = 0u; i < R; ++i) {
              acc[i][j] = acc[i][j] + q8_block_term(TYPE, wc[i], xc, xs, dw[i], mw[i], ws[i], dx);
            }
          }
        }
        // A chunk ends here: its partial joins the total.
        const uint kb_done = kb0 + b + 1u;
        if (kb_done % CHUNK_BLOCKS == 0u || kb_done == nb) {
          [[unroll]] for (uint i = 0u; i < R; ++i) {
            [[unroll]] for (uint j = 0u; j < R; ++j) {
              tot[i][j] = tot[i][j] + acc[i][j];
              acc[i][j] = 0.0;
            }
          }
        }
      }
    }
    barrier();
  }
  [[unroll]] for (uint j = 0u; j < R; ++j) {
    const uint m = tm + RT * j;
    if (m < ncols) {
      const uint dc = q8_tile_dst(at, m);
      [[unroll]] for (uint i = 0u; i < R; ++i) {
        const uint n = n0 + tn + RT * i;
        if (n < N) d_f[dc + n] = tot[i][j];
      }
    }
  }
}
