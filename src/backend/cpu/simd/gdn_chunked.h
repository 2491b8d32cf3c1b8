// Chunked gated DeltaNet (kGatedDeltaNet, long sequences) over the traits
// type (f32x16.h): the driver of drivers/gdn_chunked.h with its primitives
// (GdnChunkOps) written once. Not bit-identical to the reference; the
// tolerance and the algorithm are in that header. Every tier gives the same
// bytes (each element sees the same operations in the same order; the one
// exception below), so a sequence's result does not depend on the tier.
//
// gemm: C = beta C + A B with register tiles of kMr rows x kNv vectors of 16
// columns: per step of p, kNv loads of a B row and kMr broadcasts of A feed
// kMr x kNv FMAs, so each element of C is beta c (or 0), then one FMA per p
// in order. Column blocks of kNv vectors outer, row tiles inner, so a B
// panel (p x 16 kNv floats) stays in L1 while the row tiles pass over it.
// AVX-512 (32 zmm): 4 x 4 (16 accumulators, 4 B vectors, a broadcast); AVX2
// (16 ymm, a V is two) and NEON (32 q, a V is four): 6 x 1. The last vector
// of a row is masked where n is not a multiple of 16. lower_a stops a row
// tile's p loop after its last row, so row r also adds the products of its
// zeros a[r][q], r < q < the tile's end; the tile heights differ between
// tiers, which can change only an element that is exactly zero (-0 becoming
// +0) or one where such a b[q][j] is an inf or NaN. lower_c skips the
// vectors right of a row tile's diagonal.
//
// exp: S::exp (2 ulp). L2 norm: x^2 summed in double (exact products, so
// FMA or not gives the same bits) in 16 lane sums, lane l taking elements
// l, l + 16, ..., combined in the traits' reduction order (lanes l and
// l + 8, then l + 4, l + 2, l + 1); then x * (1 / norm) in double, rounded
// once, times the scale. Transposes: 16 x 16 tiles (f32x16_transpose.h),
// element by element at the edges. lower_inverse: row t of (I + A)^{-1} is
// -sum_{m < t} A[t, m] T[m, :] in two chains (even and odd m, added at the
// end), over the 64 columns in passes of gdn_chunk_inverse_vectors<S>()
// vectors.
#pragma once

#include "backend/cpu/drivers/gdn_chunked.h"
#include "backend/cpu/simd/f32x16_transpose.h"

namespace folio::cpu::simd {

// Register tile of the gemm: rows and vectors of 16 columns.
template <class S>
constexpr int gdn_chunk_tile_rows() {
  return S::kTier == KernelTier::kAvx512 ? 4 : 6;
}
template <class S>
constexpr int gdn_chunk_tile_vectors() {
  return S::kTier == KernelTier::kAvx512 ? 4 : 1;
}

// Rows [r0, r0 + MR), vectors [0, NV) from column n0; the last vector's
// live lanes are `tail` when kTail.
template <class S, int MR, int NV, bool kTail>
void gdn_chunk_gemm_tile(const GdnGemm& g, int64_t r0, int64_t n0, typename S::M tail) {
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  auto load = [&](const float* p, int j) {
    if constexpr (kTail) {
      if (j == NV - 1) return S::load(p, tail);
    }
    return S::load(p);
  };
  V acc[MR][NV];
  const V beta = S::set1(g.beta);
  for (int r = 0; r < MR; ++r) {
    const float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < NV; ++j)
      acc[r][j] = g.beta == 0.0f ? S::zero() : load(c + kL * j, j) * beta;
  }
  const int64_t pe = g.lower_a ? std::min(g.p, r0 + MR) : g.p;
  const float* a = g.a + r0 * g.lda;
  const float* b = g.b + n0;
  for (int64_t q = 0; q < pe; ++q) {
    V bq[NV];
    for (int j = 0; j < NV; ++j) bq[j] = load(b + q * g.ldb + kL * j, j);
    for (int r = 0; r < MR; ++r) {
      const V ar = S::set1(a[r * g.lda + q]);
      for (int j = 0; j < NV; ++j) acc[r][j] = S::fma(ar, bq[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < NV; ++j) {
      if (kTail && j == NV - 1) {
        S::store(c + kL * j, acc[r][j], tail);
      } else {
        S::store(c + kL * j, acc[r][j]);
      }
    }
  }
}

// nv <= NV vectors, the last with `tail` live lanes (1..16).
template <class S, int MR, int NV>
void gdn_chunk_gemm_vectors(const GdnGemm& g, int64_t r0, int64_t n0, int nv, int64_t tail) {
  if constexpr (NV > 1) {
    if (nv < NV) return gdn_chunk_gemm_vectors<S, MR, NV - 1>(g, r0, n0, nv, tail);
  }
  if (tail == S::kLanes) return gdn_chunk_gemm_tile<S, MR, NV, false>(g, r0, n0, S::first(tail));
  gdn_chunk_gemm_tile<S, MR, NV, true>(g, r0, n0, S::first(tail));
}

// mr <= MR rows.
template <class S, int MR>
void gdn_chunk_gemm_rows(const GdnGemm& g, int64_t r0, int64_t n0, int mr, int nv, int64_t tail) {
  if constexpr (MR > 1) {
    if (mr < MR) return gdn_chunk_gemm_rows<S, MR - 1>(g, r0, n0, mr, nv, tail);
  }
  gdn_chunk_gemm_vectors<S, MR, gdn_chunk_tile_vectors<S>()>(g, r0, n0, nv, tail);
}

template <class S>
void gdn_chunk_gemm(const GdnGemm& g) {
  constexpr int kMr = gdn_chunk_tile_rows<S>();
  constexpr int64_t kL = S::kLanes, kBlock = kL * gdn_chunk_tile_vectors<S>();
  for (int64_t n0 = 0; n0 < g.n; n0 += kBlock) {
    const int64_t block = std::min(kBlock, g.n - n0);  // columns of this block
    for (int64_t r0 = 0; r0 < g.m; r0 += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, g.m - r0));
      int64_t cols = block;
      if (g.lower_c) {
        const int64_t need = r0 + mr - n0;  // columns n0 .. n0 + need - 1
        if (need <= 0) continue;
        cols = std::min(cols, (need + kL - 1) / kL * kL);
      }
      const int nv = static_cast<int>((cols + kL - 1) / kL);
      gdn_chunk_gemm_rows<S, kMr>(g, r0, n0, mr, nv, cols - kL * (nv - 1));
    }
  }
}

template <class S>
void gdn_chunk_exp(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + S::kLanes <= n; i += S::kLanes) S::store(y + i, S::exp(S::load(x + i)));
  if (i < n) {
    const auto m = S::first(n - i);
    S::store(y + i, S::exp(S::load(x + i, m)), m);
  }
}

template <class S>
void gdn_chunk_normalise(const float* x, float* y, int64_t n, float eps, bool l2, float scale) {
  constexpr int kL = S::kLanes;
  if (!l2) {
    const typename S::V s = S::set1(scale);
    int64_t i = 0;
    for (; i + kL <= n; i += kL) S::store(y + i, S::load(x + i) * s);
    if (i < n) {
      const auto m = S::first(n - i);
      S::store(y + i, S::load(x + i, m) * s, m);
    }
    return;
  }
  double lane[kL] = {};
  int64_t i = 0;
  for (; i + kL <= n; i += kL) {
    for (int l = 0; l < kL; ++l) lane[l] += static_cast<double>(x[i + l]) * x[i + l];
  }
  for (int l = 0; i + l < n; ++l) lane[l] += static_cast<double>(x[i + l]) * x[i + l];
  // The steps written out (constant widths), so that they stay in registers.
  static_assert(kL == 16);
  for (int l = 0; l < 8; ++l) lane[l] += lane[l + 8];
  for (int l = 0; l < 4; ++l) lane[l] += lane[l + 4];
  for (int l = 0; l < 2; ++l) lane[l] += lane[l + 2];
  const double ss = lane[0] + lane[1];
  const double inv = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  for (i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * inv) * scale;
}

template <class S>
void gdn_chunk_transpose(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                         int64_t cols) {
  constexpr int64_t kL = S::kLanes;
  const int64_t rf = rows / kL * kL, cf = cols / kL * kL;  // whole tiles
  for (int64_t i0 = 0; i0 < rf; i0 += kL) {
    for (int64_t j0 = 0; j0 < cf; j0 += kL) {
      transpose16(S{}, src + i0 * lds + j0, lds, dst + j0 * ldd + i0, ldd);
    }
  }
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = j < cf ? rf : 0; i < rows; ++i) dst[j * ldd + i] = src[i * lds + j];
  }
}

// Column vectors of T per pass: both chains of a pass stay in registers
// (AVX-512: 8 zmm of 32; AVX2: 8 ymm of 16; NEON: 16 q of 32).
template <class S>
constexpr int gdn_chunk_inverse_vectors() {
  return S::kTier == KernelTier::kAvx512 ? 4 : 2;
}

template <class S>
void gdn_chunk_lower_inverse(const float* a, float* t_inv, int64_t c) {
  using V = typename S::V;
  constexpr int kL = S::kLanes, kNv = gdn_chunk_inverse_vectors<S>();
  static_assert(kGdnChunk % (kL * kNv) == 0);
  for (int64_t t = 0; t < c; ++t) {
    const float* at = a + t * kGdnChunk;
    float* row = t_inv + t * kGdnChunk;
    for (int64_t j0 = 0; j0 < kGdnChunk; j0 += kL * kNv) {
      V s0[kNv], s1[kNv];
      for (int j = 0; j < kNv; ++j) s0[j] = s1[j] = S::zero();
      int64_t m = 0;
      for (; m + 2 <= t; m += 2) {
        const V a0 = S::set1(at[m]), a1 = S::set1(at[m + 1]);
        const float* r0 = t_inv + m * kGdnChunk + j0;
        for (int j = 0; j < kNv; ++j) {
          s0[j] = S::fnma(a0, S::load(r0 + kL * j), s0[j]);
          s1[j] = S::fnma(a1, S::load(r0 + kGdnChunk + kL * j), s1[j]);
        }
      }
      if (m < t) {
        const V a0 = S::set1(at[m]);
        const float* r0 = t_inv + m * kGdnChunk + j0;
        for (int j = 0; j < kNv; ++j) s0[j] = S::fnma(a0, S::load(r0 + kL * j), s0[j]);
      }
      for (int j = 0; j < kNv; ++j) S::store(row + j0 + kL * j, s0[j] + s1[j]);
    }
    row[t] = 1.0f;
  }
}

template <class S>
Status gated_delta_net_chunked(const Op& op, const KernelContext& ctx) {
  static constexpr GdnChunkOps kOps{gdn_chunk_gemm<S>,          gdn_chunk_exp<S>,
                                    gdn_chunk_normalise<S>,     gdn_chunk_transpose<S>,
                                    gdn_chunk_lower_inverse<S>, 1};
  return run_gdn_chunked(op, ctx, kOps);
}

}  // namespace folio::cpu::simd
