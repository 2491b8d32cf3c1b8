// Chunked (WY / UT-transform) form of the gated DeltaNet recurrence
// (kGatedDeltaNet) for long prefills, as in the Gated DeltaNet paper (Yang et
// al., 2024) and flash-linear-attention's chunk_gated_delta_rule: the same
// maths as the token-by-token form (ref/gated_delta_net.cc), regrouped so
// that nearly all the work is matrix products.
//
// Per (sequence, value head), chunks of C = 64 tokens (the last one may be
// shorter). With the state S [S_v x S_k] at the chunk start, G_t the log
// decay summed from the chunk start to token t (double), gamma_t = e^{G_t},
// b_t = beta, rows k_t, q_t (normalised, q scaled), v_t:
//   A[t, j] = b_t e^{G_t - G_j} k_t.k_j    (j < t; strictly lower C x C)
//   T = (I + A)^{-1}                       (forward substitution)
//   U = T diag(b) V,  W = T diag(b gamma) K
//   D = U - W S^T                          (the rows d_t of the delta rule)
//   out_t = gamma_t S q_t + sum_{j <= t} e^{G_t - G_j} (q_t.k_j) d_j
//   S <- gamma_{C-1} S + sum_j e^{G_{C-1} - G_j} d_j k_j^T
// Every decay factor is an exp of a non-positive difference taken within one
// chunk (computed in double, rounded once), so nothing overflows however
// strong the decay. The state lives transposed (St [S_k][S_v]) while a head
// is processed, so every product is C[m][n] (+)= sum_p A[m][p] B[p][n] with
// B and C read along rows (GdnGemm); the S_k x S_v products (W St, Q St and
// the state update) are 3 S_k S_v multiply-adds per token, as many as the
// token-by-token form, but as FMAs on register tiles instead of latency-bound
// sequential reductions. The intra-chunk terms add about 2.5 C S per token.
//
// Rounding differs from the token-by-token form (sums in other orders, FMA,
// the inverse, exp to about 2 ulp): NOT bit-identical. Tolerance, asserted
// by the parity harness on both outputs (out and the new state) against the
// reference: NMSE <= kGdnChunkMaxNmse = 1e-10 (tests/parity/
// cases_recurrent.cc: S 64 and 128, grouped key heads under both head maps,
// T 64 .. 1000 with partial last chunks, 1 to 3 sequences, decays from
// e^-8 to e^0 per token, strongly correlated keys with beta near 1, without
// the L2 norm). Measured: 6e-14 .. 3e-12 (the worst: correlated keys), on
// every tier. The bound is stated for a stable recurrence (L2-normalised
// keys, or beta |k|^2 < 2; unnormalised keys with beta |k|^2 near 7, whose
// state grows to 1e18, measured 2e-10). Not being bit-identical, the
// kernels take only ops with T >= kGdnChunkMinTokens tokens per sequence
// (AVX2: 256, where it overtakes its token-by-token kernel;
// simd/recurrent_kernels.h) and
// params.allow_chunked (supports_gated_delta_net_chunked): decode steps,
// short ops, ops that ask for bit-identity and the fused decode ops keep the
// bit-identical token-by-token kernels.
//
// Speed (one thread, 16 heads of 128, 2048 tokens, CPU time on the dev
// machine's Xeon): AVX-512 2.3x the token-by-token AVX-512 kernel, AVX2 1.9x
// its AVX2 one, the portable kernel 2.9x the reference (2.4x at 64 tokens).
//
// This file: the driver (threading over (sequence, value head) units, chunk
// loop, scalar bookkeeping) and the portable kernel. The products, exp, the
// L2 norm, transposes and the triangular inverse go through GdnChunkOps so
// that the SIMD tiers plug theirs in (simd/gdn_chunked.h, written once for
// every tier).
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

inline constexpr int64_t kGdnChunk = 64;           // tokens per chunk
inline constexpr int64_t kGdnChunkMinTokens = 64;  // tokens per sequence to choose the chunked form
inline constexpr double kGdnChunkMaxNmse = 1e-10;  // vs the token-by-token reference, both outputs

// C = beta C + A B, row-major blocks. A [m][p], B [p][n], C [m][n] with
// leading dimensions in floats.
struct GdnGemm {
  int64_t m = 0, n = 0, p = 0;
  const float* a = nullptr;  // [m][lda]
  int64_t lda = 0;
  const float* b = nullptr;  // [p][ldb]
  int64_t ldb = 0;
  float* c = nullptr;  // [m][ldc]
  int64_t ldc = 0;
  float beta = 0.0f;     // 0: C is written without being read
  bool lower_a = false;  // a[r][j] == 0 for r < j < p: row r may stop its p loop early
  bool lower_c = false;  // only c[r][j] for j <= r is needed; others may be left as they are
};

struct GdnChunkOps {
  void (*gemm)(const GdnGemm& g);
  // y[i] = e^{x[i]} (x may be -inf: 0); x and y may be the same array.
  void (*exp)(const float* x, float* y, int64_t n);
  // y = l2_norm(x) if l2 (x / max(sqrt(sum x^2), eps), the sum in double),
  // else x; then y *= scale.
  void (*normalise)(const float* x, float* y, int64_t n, float eps, bool l2, float scale);
  // dst[j][i] = src[i][j] for i < rows, j < cols (leading dimensions in
  // floats); nothing else is written.
  void (*transpose)(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                    int64_t cols);
  // t = (I + a)^{-1} for strictly lower a [c][kGdnChunk] (zero on and above
  // the diagonal): lower, unit diagonal, zero above, rows of kGdnChunk.
  void (*lower_inverse)(const float* a, float* t, int64_t c);
  int64_t n_multiple;  // every gemm n and ldb/ldc is a multiple of this (SIMD width)
};

// T >= kGdnChunkMinTokens and params.allow_chunked.
bool supports_gated_delta_net_chunked(const Op& op);

// Runs a kGatedDeltaNet op in chunked form with `ops`. S_k and S_v must be
// multiples of ops.n_multiple.
Status run_gdn_chunked(const Op& op, const KernelContext& ctx, const GdnChunkOps& ops);

// The portable primitives (plain loops the compiler vectorises), for SIMD
// tiers to start from, and the portable kernel (tier kScalar) built on them.
const GdnChunkOps& gdn_chunk_portable_ops();
Status gated_delta_net_chunked_scalar(const Op& op, const KernelContext& ctx);

}  // namespace folio::cpu
