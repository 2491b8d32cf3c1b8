// AVX-512 chunked gated DeltaNet (kGatedDeltaNet, T >= 64 tokens per
// sequence): the driver of drivers/gdn_chunked.h with AVX-512 primitives.
// Not bit-identical to the reference; the tolerance and the algorithm are in
// that header.
//
// gemm: C = beta C + A B with register tiles of MR = 4 rows x NV <= 4 vectors
// of 16 columns (16 accumulators): per step of p, NV loads of a B row and MR
// broadcasts of A feed MR x NV FMAs. Column blocks of 64 outer, row tiles
// inner, so a B panel (p x 64 floats, at most 32 KB) stays in L1 while the
// row tiles pass over it. n is a multiple of 16 (S_k, S_v multiples of 16;
// the chunk's own matrices are padded). lower_a stops a row tile's p loop at
// its last row; lower_c skips the vectors right of a row tile's diagonal.
// exp: avx512::exp (about 2 ulp). L2 norm: the sum of squares in double, 8
// lanes at a time.
#include <algorithm>
#include <cmath>

#include "backend/cpu/avx512/recurrent_kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/avx512/transpose.h"
#include "backend/cpu/drivers/gdn_chunked.h"

namespace folio::cpu {
namespace {

template <int MR, int NV>
FOLIO_TARGET_AVX512 void gemm_tile(const GdnGemm& g, int64_t r0, int64_t n0) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < NV; ++j) {
      acc[r][j] = g.beta == 0.0f
                      ? _mm512_setzero_ps()
                      : _mm512_mul_ps(_mm512_loadu_ps(c + 16 * j), _mm512_set1_ps(g.beta));
    }
  }
  const int64_t pe = g.lower_a ? std::min(g.p, r0 + MR) : g.p;
  const float* a = g.a + r0 * g.lda;
  const float* b = g.b + n0;
  for (int64_t q = 0; q < pe; ++q) {
    __m512 bq[NV];
    for (int j = 0; j < NV; ++j) bq[j] = _mm512_loadu_ps(b + q * g.ldb + 16 * j);
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r * g.lda + q]);
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(ar, bq[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(c + 16 * j, acc[r][j]);
  }
}

template <int MR>
FOLIO_TARGET_AVX512 void gemm_rows(const GdnGemm& g, int64_t r0, int64_t n0, int nv) {
  switch (nv) {
    case 4:
      return gemm_tile<MR, 4>(g, r0, n0);
    case 3:
      return gemm_tile<MR, 3>(g, r0, n0);
    case 2:
      return gemm_tile<MR, 2>(g, r0, n0);
    default:
      return gemm_tile<MR, 1>(g, r0, n0);
  }
}

FOLIO_TARGET_AVX512 void gemm_avx512(const GdnGemm& g) {
  constexpr int kMr = 4;
  for (int64_t n0 = 0; n0 < g.n; n0 += 64) {
    const int block_nv = static_cast<int>(std::min<int64_t>(64, g.n - n0) / 16);
    for (int64_t r0 = 0; r0 < g.m; r0 += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, g.m - r0));
      int nv = block_nv;
      if (g.lower_c) {
        // Vectors holding a column <= the tile's last row.
        const int64_t need = r0 + mr - n0;  // columns n0 .. n0 + need - 1
        if (need <= 0) continue;
        nv = static_cast<int>(std::min<int64_t>(nv, (need + 15) / 16));
      }
      switch (mr) {
        case 4:
          gemm_rows<4>(g, r0, n0, nv);
          break;
        case 3:
          gemm_rows<3>(g, r0, n0, nv);
          break;
        case 2:
          gemm_rows<2>(g, r0, n0, nv);
          break;
        default:
          gemm_rows<1>(g, r0, n0, nv);
          break;
      }
    }
  }
}

FOLIO_TARGET_AVX512 void exp_avx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, avx512::exp(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, avx512::exp(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

FOLIO_TARGET_AVX512 void normalise_avx512(const float* x, float* y, int64_t n, float eps, bool l2,
                                          float scale) {
  const __m512 s = _mm512_set1_ps(scale);
  if (!l2) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), s));
    for (; i < n; ++i) y[i] = x[i] * scale;
    return;
  }
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
    const __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8));
    s0 = _mm512_fmadd_pd(a, a, s0);
    s1 = _mm512_fmadd_pd(b, b, s1);
  }
  double ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  for (int64_t j = i; j < n; ++j) ss += static_cast<double>(x[j]) * x[j];
  const double inv_d = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  const __m512d inv = _mm512_set1_pd(inv_d);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 r = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), inv));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(r, _mm512_castps512_ps256(s)));
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * inv_d) * scale;
}

// 16 x 16 tiles through registers (a partial block of rows: zero rows in,
// masked stores out).
FOLIO_TARGET_AVX512 void transpose_avx512(const float* src, int64_t lds, float* dst, int64_t ldd,
                                          int64_t rows, int64_t cols) {
  __m512 r[16];
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int64_t rb = std::min<int64_t>(16, rows - i0);
    const __mmask16 keep = static_cast<__mmask16>((1u << rb) - 1);
    int64_t j0 = 0;
    for (; j0 + 16 <= cols; j0 += 16) {
      for (int i = 0; i < 16; ++i) {
        r[i] = i < rb ? _mm512_loadu_ps(src + (i0 + i) * lds + j0) : _mm512_setzero_ps();
      }
      avx512::transpose16(r);
      for (int j = 0; j < 16; ++j) _mm512_mask_storeu_ps(dst + (j0 + j) * ldd + i0, keep, r[j]);
    }
    for (; j0 < cols; ++j0) {
      for (int64_t i = 0; i < rb; ++i) dst[j0 * ldd + i0 + i] = src[(i0 + i) * lds + j0];
    }
  }
}

// Row t of T = (I + A)^{-1}: -sum_{m < t} A[t, m] T[m, :] over the 64
// columns in 4 vectors (rows of T are zero right of their diagonal), two
// accumulator sets for even and odd m; then T[t, t] = 1.
FOLIO_TARGET_AVX512 void lower_inverse_avx512(const float* a, float* t_inv, int64_t c) {
  static_assert(kGdnChunk == 64);
  for (int64_t t = 0; t < c; ++t) {
    __m512 s0[4], s1[4];
    for (int j = 0; j < 4; ++j) s0[j] = s1[j] = _mm512_setzero_ps();
    const float* at = a + t * kGdnChunk;
    int64_t m = 0;
    for (; m + 2 <= t; m += 2) {
      const __m512 a0 = _mm512_set1_ps(at[m]), a1 = _mm512_set1_ps(at[m + 1]);
      const float* r0 = t_inv + m * kGdnChunk;
      for (int j = 0; j < 4; ++j) {
        s0[j] = _mm512_fnmadd_ps(a0, _mm512_load_ps(r0 + 16 * j), s0[j]);
        s1[j] = _mm512_fnmadd_ps(a1, _mm512_load_ps(r0 + kGdnChunk + 16 * j), s1[j]);
      }
    }
    if (m < t) {
      const __m512 a0 = _mm512_set1_ps(at[m]);
      const float* r0 = t_inv + m * kGdnChunk;
      for (int j = 0; j < 4; ++j) s0[j] = _mm512_fnmadd_ps(a0, _mm512_load_ps(r0 + 16 * j), s0[j]);
    }
    float* row = t_inv + t * kGdnChunk;
    for (int j = 0; j < 4; ++j) _mm512_store_ps(row + 16 * j, _mm512_add_ps(s0[j], s1[j]));
    row[t] = 1.0f;
  }
}

}  // namespace

bool supports_gated_delta_net_chunked_avx512(const Op& op) {
  return supports_gated_delta_net_chunked(op) && op.src[0].ne[0] % 16 == 0 &&
         op.src[2].ne[0] % 16 == 0;
}

Status gated_delta_net_chunked_avx512(const Op& op, const KernelContext& ctx) {
  static constexpr GdnChunkOps kOps{gemm_avx512,      exp_avx512,           normalise_avx512,
                                    transpose_avx512, lower_inverse_avx512, 16};
  return run_gdn_chunked(op, ctx, kOps);
}

}  // namespace folio::cpu
