// AVX-512 flash attention (kFlashAttn): the tile primitives of
// drivers/flash_attn_tiled.h, which owns the plan, the block-table reads,
// split-K and threads.
//
// K/V elements come from either an f32 tile buffer (convert_rows: f16 by
// vcvtph2ps, q8_0 as int8 -> f32 times the block scale, as the reference) or
// straight from the cache rows through the same conversions in registers
// (load16<T>, decode); both give the same floats.
// scores        blocks of 4 rows x 4 keys (2 x 8 and 1 x 16 for the last
//               rows): 16 accumulators of 16 lanes, one FMA chain over the
//               head dimension each, then one transpose-and-add network that
//               reduces all 16 at once. Every score gets the same tree as
//               hsum() (halves, quarters, pairs, lanes) whatever block it was
//               computed in: a row's scores never depend on its neighbours.
// softmax       the tile's scores in 16-lane groups aligned to the tile;
//               lanes outside [jb, je) are masked out of the max and zeroed
//               by selection; p = exp(x - m) by the 2-ulp vector exp.
// pv            up to 4 rows x 4 chunks of 16 (1-2 rows x 8 chunks) of acc in
//               registers: acc * ms, then p_j v_j for j ascending, one FMA
//               per element, each V chunk converted once for all rows.
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

int64_t pad_to16(int64_t n) {
  return (n + 15) / 16 * 16;
}

FOLIO_INLINE_AVX512 __m256i half(const uint16_t* h) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
}

FOLIO_INLINE_AVX512 __mmask16 lanes(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

FOLIO_TARGET_AVX512 void convert_rows_avx512(DType dtype, const void* const* src, int n, int64_t d,
                                             float* dst, int64_t ld) {
  const int64_t full = d / 16 * 16;  // whole 16-element chunks; then a masked tail, then zeros
  const __mmask16 tail = lanes(d - full);
  for (int i = 0; i < n; ++i) {
    float* out = dst + i * ld;
    if (dtype == DType::F32) {
      const float* x = static_cast<const float*>(src[i]);
      int64_t c = 0;
      for (; c + 64 <= full; c += 64) {
        const __m512 a = _mm512_loadu_ps(x + c), b = _mm512_loadu_ps(x + c + 16);
        const __m512 e = _mm512_loadu_ps(x + c + 32), f = _mm512_loadu_ps(x + c + 48);
        _mm512_storeu_ps(out + c, a);
        _mm512_storeu_ps(out + c + 16, b);
        _mm512_storeu_ps(out + c + 32, e);
        _mm512_storeu_ps(out + c + 48, f);
      }
      for (; c < full; c += 16) _mm512_storeu_ps(out + c, _mm512_loadu_ps(x + c));
      if (full < d) _mm512_storeu_ps(out + full, _mm512_maskz_loadu_ps(tail, x + full));
    } else if (dtype == DType::F16) {
      const uint16_t* x = static_cast<const uint16_t*>(src[i]);
      int64_t c = 0;
      for (; c + 64 <= full; c += 64) {
        const __m512 a = _mm512_cvtph_ps(half(x + c)), b = _mm512_cvtph_ps(half(x + c + 16));
        const __m512 e = _mm512_cvtph_ps(half(x + c + 32)), f = _mm512_cvtph_ps(half(x + c + 48));
        _mm512_storeu_ps(out + c, a);
        _mm512_storeu_ps(out + c + 16, b);
        _mm512_storeu_ps(out + c + 32, e);
        _mm512_storeu_ps(out + c + 48, f);
      }
      for (; c < full; c += 16) _mm512_storeu_ps(out + c, _mm512_cvtph_ps(half(x + c)));
      if (full < d) {
        _mm512_storeu_ps(out + full, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(tail, x + full)));
      }
    } else {  // Q8_0: d % 32 == 0
      const auto* b = static_cast<const quant::BlockQ8_0*>(src[i]);
      for (int64_t c = 0; c < d; c += 32, ++b) {
        uint16_t dh;
        std::memcpy(&dh, &b->d, sizeof(dh));
        const __m512 scale = _mm512_set1_ps(_cvtsh_ss(dh));
        const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
        const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16));
        _mm512_storeu_ps(out + c,
                         _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0))));
        _mm512_storeu_ps(out + c + 16,
                         _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1))));
      }
    }
    for (int64_t c = pad_to16(d); c < ld; c += 16) _mm512_storeu_ps(out + c, _mm512_setzero_ps());
  }
}

// Reduces 16 vectors at once: lane L of the result is the sum of the lanes
// of a[L], added in the tree of avx512::hsum (a_i + a_{i+8}, then + 4, + 2,
// + 1). A 4 x 4 transpose of the inputs makes the network's output order
// natural.
FOLIO_INLINE_AVX512 __m512 reduce16(const __m512* a) {
  __m512 w[8], u[4], r[2];
  for (int k = 0; k < 8; ++k) {
    // Network inputs v[i] = a[4 * (i % 4) + i / 4], taken in pairs (2k, 2k + 1).
    const __m512 v0 = a[4 * ((2 * k) % 4) + (2 * k) / 4];
    const __m512 v1 = a[4 * ((2 * k + 1) % 4) + (2 * k + 1) / 4];
    w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xEE));
  }
  for (int k = 0; k < 4; ++k) {
    u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], 0xDD));
  }
  for (int k = 0; k < 2; ++k) {
    r[k] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0x44),
                         _mm512_shuffle_ps(u[2 * k], u[2 * k + 1], 0xEE));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(r[0], r[1], 0x88), _mm512_shuffle_ps(r[0], r[1], 0xDD));
}

// 16 elements of a packed row from element c on (zeros past d; c < d, as
// rows are padded to the next multiple of 16).
template <DType T>
FOLIO_INLINE_AVX512 __m512 load16(const void* row, int64_t c, int64_t d) {
  if constexpr (T == DType::F32) {
    const float* x = static_cast<const float*>(row) + c;
    return c + 16 <= d ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(lanes(d - c), x);
  } else if constexpr (T == DType::F16) {
    const uint16_t* x = static_cast<const uint16_t*>(row) + c;
    return _mm512_cvtph_ps(c + 16 <= d ? half(x) : _mm256_maskz_loadu_epi16(lanes(d - c), x));
  } else {  // Q8_0: c % 16 == 0 and d % 32 == 0, so c < d
    const auto* b = static_cast<const quant::BlockQ8_0*>(row) + c / 32;
    uint16_t dh;
    std::memcpy(&dh, &b->d, sizeof(dh));
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + c % 32));
    return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(dh)),
                         _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
  }
}

// Scores of R query rows x (16 / R) keys: s[r * lds + j] = q_r . k_j, K rows
// from an f32 buffer (Packed = false: k[j] are float rows) or packed rows of
// type T converted in registers.
template <int R, bool Packed, DType T>
FOLIO_INLINE_AVX512 void score_block(const float* q, int64_t ld, const void* const* k, int64_t d,
                                     float* s, int lds) {
  constexpr int J = 16 / R;
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t c = 0; c < ld; c += 16) {
    __m512 qv[R];
    for (int r = 0; r < R; ++r) qv[r] = _mm512_loadu_ps(q + r * ld + c);
    for (int j = 0; j < J; ++j) {
      const __m512 kv =
          Packed ? load16<T>(k[j], c, d) : _mm512_loadu_ps(static_cast<const float*>(k[j]) + c);
      for (int r = 0; r < R; ++r) acc[r * J + j] = _mm512_fmadd_ps(qv[r], kv, acc[r * J + j]);
    }
  }
  const __m512 o = reduce16(acc);  // lane r * J + j
  if constexpr (R == 1) {
    _mm512_storeu_ps(s, o);
  } else if constexpr (R == 2) {
    _mm256_storeu_ps(s, _mm512_castps512_ps256(o));
    _mm256_storeu_ps(s + lds, _mm512_extractf32x8_ps(o, 1));
  } else {
    _mm_storeu_ps(s, _mm512_castps512_ps128(o));
    _mm_storeu_ps(s + lds, _mm512_extractf32x4_ps(o, 1));
    _mm_storeu_ps(s + 2 * lds, _mm512_extractf32x4_ps(o, 2));
    _mm_storeu_ps(s + 3 * lds, _mm512_extractf32x4_ps(o, 3));
  }
}

// The aligned key groups of R-row blocks covering [jb, je).
template <int R, bool Packed, DType T>
FOLIO_INLINE_AVX512 void score_blocks(const float* q, int64_t ld, const void* const* k, int64_t d,
                                      int jb, int je, float* s, int lds) {
  constexpr int J = 16 / R;
  for (int j0 = jb / J * J; j0 < je; j0 += J)
    score_block<R, Packed, T>(q, ld, k + j0, d, s + j0, lds);
}

FOLIO_TARGET_AVX512 void scores_avx512(const float* q, int n_rows, const float* k, int64_t ld,
                                       const int* lo, const int* hi, float* s, int lds) {
  const void* rows[kFlashTile];
  for (int j = 0; j < kFlashTile; ++j) rows[j] = k + j * ld;
  for (int r0 = 0; r0 < n_rows;) {
    const int R = n_rows - r0 >= 4 ? 4 : n_rows - r0 >= 2 ? 2 : 1;
    int blo = kFlashTile, bhi = 0;  // the block's keys
    for (int r = r0; r < r0 + R; ++r) {
      if (lo[r] < hi[r]) blo = std::min(blo, lo[r]), bhi = std::max(bhi, hi[r]);
    }
    if (blo < bhi) {
      const float* qb = q + r0 * ld;
      float* sb = s + r0 * lds;
      if (R == 4) {
        score_blocks<4, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      } else if (R == 2) {
        score_blocks<2, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      } else {
        score_blocks<1, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      }
    }
    r0 += R;
  }
}

template <DType T>
FOLIO_INLINE_AVX512 void scores_packed_t(const float* q, int n_rows, int64_t ld,
                                         const void* const* k, int64_t d, int jb, int je, float* s,
                                         int lds) {
  if (n_rows == 4) {
    score_blocks<4, true, T>(q, ld, k, d, jb, je, s, lds);
  } else if (n_rows >= 2) {
    score_blocks<2, true, T>(q, ld, k, d, jb, je, s, lds);
    if (n_rows == 3) score_blocks<1, true, T>(q + 2 * ld, ld, k, d, jb, je, s + 2 * lds, lds);
  } else {
    score_blocks<1, true, T>(q, ld, k, d, jb, je, s, lds);
  }
}

FOLIO_TARGET_AVX512 void scores_packed_avx512(const float* q, int n_rows, int64_t ld, DType dtype,
                                              const void* const* k, int64_t d, int jb, int je,
                                              float* s, int lds) {
  switch (dtype) {
    case DType::F32:
      scores_packed_t<DType::F32>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
    case DType::F16:
      scores_packed_t<DType::F16>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
    default:
      scores_packed_t<DType::Q8_0>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
  }
}

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|): absolute error a
// few 1e-8, saturates to +-1; NaN stays NaN.
FOLIO_INLINE_AVX512 __m512 tanh_ps(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 ax = _mm512_andnot_ps(sign, x);
  const __m512 e = avx512::exp(_mm512_mul_ps(ax, _mm512_set1_ps(-2.0f)));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  return _mm512_or_ps(t, _mm512_and_ps(sign, x));
}

FOLIO_TARGET_AVX512 float softmax_avx512(const float* s, int jb, int je, const FlashScoreParams& p,
                                         float* m_io, float* l_io, float* pr) {
  constexpr int kGroups = kFlashTile / 16;
  __m512 x[kGroups];
  __mmask16 mk[kGroups];
  const int g0 = jb / 16, g1 = (je - 1) / 16;
  const __m512 scale = _mm512_set1_ps(p.scale);
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int g = g0; g <= g1; ++g) {
    const int a = std::max(jb - 16 * g, 0), b = std::min(je - 16 * g, 16);
    const __mmask16 m = static_cast<__mmask16>(((1u << b) - 1) & ~((1u << a) - 1));
    __m512 xv = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + 16 * g), scale);
    if (p.softcap > 0.0f) {
      const __m512 cap = _mm512_set1_ps(p.softcap);
      xv = _mm512_mul_ps(cap, tanh_ps(_mm512_div_ps(xv, cap)));
    }
    x[g] = xv;
    mk[g] = m;
    mx = _mm512_mask_max_ps(mx, m, mx, xv);
  }
  const float tmax = avx512::hmax(mx);
  float m = *m_io, l = *l_io;
  const float ms = flash_raise_max(tmax, m, l, [](float x) { return std::exp(x); });
  const __m512 mv = _mm512_set1_ps(m);
  __m512 lsum = _mm512_setzero_ps();
  for (int g = g0; g <= g1; ++g) {
    const __m512 pv = _mm512_maskz_mov_ps(mk[g], avx512::exp(_mm512_sub_ps(x[g], mv)));
    lsum = _mm512_add_ps(lsum, pv);
    _mm512_storeu_ps(pr + 16 * g, pv);
  }
  *m_io = m;
  *l_io = l + avx512::hsum(lsum);
  return ms;
}

// acc_r[c0, c0 + 16 C) = acc_r * ms_r + sum_{j in [jb, je)} p_r[j] v_j, j ascending.
template <int R, int C, DType T>
FOLIO_INLINE_AVX512 void pv_pass(const float* p, int ldp, const float* ms, int jb, int je,
                                 float* acc, int64_t lda, const void* const* v, int64_t dv,
                                 int64_t c0) {
  __m512 a[R][C];
  for (int r = 0; r < R; ++r) {
    const __m512 msv = _mm512_set1_ps(ms[r]);
    for (int i = 0; i < C; ++i) {
      a[r][i] = _mm512_mul_ps(_mm512_loadu_ps(acc + r * lda + c0 + 16 * i), msv);
    }
  }
  for (int j = jb; j < je; ++j) {
    __m512 vv[C];
    for (int i = 0; i < C; ++i) vv[i] = load16<T>(v[j], c0 + 16 * i, dv);
    for (int r = 0; r < R; ++r) {
      const __m512 pj = _mm512_set1_ps(p[r * ldp + j]);
      for (int i = 0; i < C; ++i) a[r][i] = _mm512_fmadd_ps(pj, vv[i], a[r][i]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < C; ++i) _mm512_storeu_ps(acc + r * lda + c0 + 16 * i, a[r][i]);
  }
}

// pv_pass<R, n, T> for a run-time n in [1, MaxC].
template <int R, DType T, int MaxC, int C = 1>
FOLIO_INLINE_AVX512 void pv_pass_n(int n, const float* p, int ldp, const float* ms, int jb, int je,
                                   float* acc, int64_t lda, const void* const* v, int64_t dv,
                                   int64_t c0) {
  if constexpr (C < MaxC) {
    if (n != C) {
      pv_pass_n<R, T, MaxC, C + 1>(n, p, ldp, ms, jb, je, acc, lda, v, dv, c0);
      return;
    }
  }
  pv_pass<R, C, T>(p, ldp, ms, jb, je, acc, lda, v, dv, c0);
}

template <int R, DType T>
FOLIO_INLINE_AVX512 void pv_rows(const float* p, int ldp, const float* ms, int jb, int je,
                                 float* acc, int64_t lda, const void* const* v, int64_t dv,
                                 int64_t ldv) {
  constexpr int kMaxC = R == 4 ? 4 : 8;  // at most 16 accumulators
  for (int64_t c0 = 0; c0 < ldv; c0 += 16 * kMaxC) {
    const int n = static_cast<int>(std::min<int64_t>(kMaxC, (ldv - c0) / 16));
    pv_pass_n<R, T, kMaxC>(n, p, ldp, ms, jb, je, acc, lda, v, dv, c0);
  }
}

template <DType T>
FOLIO_INLINE_AVX512 void pv_t(const float* p, int ldp, const float* ms, int n_rows, int jb, int je,
                              float* acc, int64_t lda, const void* const* v, int64_t dv,
                              int64_t ldv) {
  if (n_rows == 4) {
    pv_rows<4, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
  } else if (n_rows >= 2) {
    pv_rows<2, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
    if (n_rows == 3) {
      pv_rows<1, T>(p + 2 * ldp, ldp, ms + 2, jb, je, acc + 2 * lda, lda, v, dv, ldv);
    }
  } else {
    pv_rows<1, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
  }
}

FOLIO_TARGET_AVX512 void pv_avx512(const float* p, int ldp, const float* ms, int n_rows, int jb,
                                   int je, float* acc, int64_t lda, DType dtype,
                                   const void* const* v, int64_t dv, int64_t ldv) {
  switch (dtype) {
    case DType::F32:
      pv_t<DType::F32>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
    case DType::F16:
      pv_t<DType::F16>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
    default:
      pv_t<DType::Q8_0>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
  }
}

}  // namespace

FOLIO_FLASH_ATTN_KERNEL(avx512)

}  // namespace folio::cpu
