// AVX2 + FMA + F16C flash attention (kFlashAttn): the tile primitives of
// drivers/flash_attn_tiled.h, which owns the plan, the block-table reads,
// split-K and threads. Same structure as avx512/flash_attn.cc with 8 lanes:
//
// K/V elements come from an f32 tile buffer (convert_rows: f16 by vcvtph2ps,
// q8_0 as int8 -> f32 times the block scale) or straight from the cache rows
// through the same conversions in registers (load8<T>, decode).
// scores        blocks of 4 rows x 2 keys (2 x 4, 1 x 8 for the last rows):
//               8 accumulators of 8 lanes, one FMA chain over the head
//               dimension each, reduced together by a transpose-and-add
//               network that gives every score the tree of avx2::hsum
//               (a_i + a_{i+4}, then + 2, + 1), whatever its block.
// softmax       8-lane groups aligned to the tile, lanes outside [jb, je)
//               masked out by selection; p = exp(x - m) by the 2-ulp vector
//               exp.
// pv            acc (4 rows x 2 chunks of 8, 2 x 4, 1 x 8) in registers:
//               acc * ms, then p_j v_j for j ascending, each V chunk
//               converted once for all rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

FOLIO_TARGET_AVX2 void convert_rows_avx2(DType dtype, const void* const* src, int n, int64_t d,
                                         float* dst, int64_t ld) {
  for (int i = 0; i < n; ++i) {
    float* out = dst + i * ld;
    int64_t c = 0;
    if (dtype == DType::F32) {
      std::memcpy(out, src[i], sizeof(float) * static_cast<size_t>(d));
      c = d;
    } else if (dtype == DType::F16) {
      const uint16_t* x = static_cast<const uint16_t*>(src[i]);
      for (; c + 8 <= d; c += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + c));
        _mm256_storeu_ps(out + c, _mm256_cvtph_ps(h));
      }
      for (; c < d; ++c) {
        uint16_t bits;
        std::memcpy(&bits, x + c, sizeof(bits));
        out[c] = f16_to_f32(bits);
      }
    } else {  // Q8_0: d % 32 == 0
      const auto* b = static_cast<const quant::BlockQ8_0*>(src[i]);
      for (; c < d; c += 32, ++b) {
        uint16_t dh;
        std::memcpy(&dh, &b->d, sizeof(dh));
        const __m256 scale = _mm256_set1_ps(f16_to_f32(dh));
        for (int k = 0; k < 32; k += 8) {
          const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + k));
          _mm256_storeu_ps(out + c + k,
                           _mm256_mul_ps(scale, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
        }
      }
    }
    for (; c < ld; ++c) out[c] = 0.0f;
  }
}

// Reduces 8 vectors at once: lane L of the result is the sum of the lanes of
// a[L] in the tree of avx2::hsum. The network's inputs are permuted (v[i] =
// a[4 * (i % 2) + i / 2]) so that its output order is natural.
FOLIO_INLINE_AVX2 __m256 reduce8(const __m256* a) {
  __m256 w[4], r[2];
  for (int k = 0; k < 4; ++k) {
    const __m256 v0 = a[4 * ((2 * k) % 2) + (2 * k) / 2];
    const __m256 v1 = a[4 * ((2 * k + 1) % 2) + (2 * k + 1) / 2];
    w[k] =
        _mm256_add_ps(_mm256_permute2f128_ps(v0, v1, 0x20), _mm256_permute2f128_ps(v0, v1, 0x31));
  }
  for (int k = 0; k < 2; ++k) {
    r[k] = _mm256_add_ps(_mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0x44),
                         _mm256_shuffle_ps(w[2 * k], w[2 * k + 1], 0xEE));
  }
  return _mm256_add_ps(_mm256_shuffle_ps(r[0], r[1], 0x88), _mm256_shuffle_ps(r[0], r[1], 0xDD));
}

// 8 elements of a packed row from element c on (zeros past d; rows are
// padded to 16, so c may be past d).
template <DType T>
FOLIO_INLINE_AVX2 __m256 load8(const void* row, int64_t c, int64_t d) {
  if constexpr (T == DType::F32) {
    const float* x = static_cast<const float*>(row) + c;
    if (c + 8 <= d) return _mm256_loadu_ps(x);
    return c < d ? _mm256_maskload_ps(x, avx2::lanes(d - c)) : _mm256_setzero_ps();
  } else if constexpr (T == DType::F16) {
    const uint16_t* x = static_cast<const uint16_t*>(row) + c;
    if (c + 8 <= d) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    alignas(16) uint16_t tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (c < d) std::memcpy(tail, x, sizeof(uint16_t) * static_cast<size_t>(d - c));
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tail)));
  } else {  // Q8_0: c % 8 == 0 and d % 32 == 0, so c < d
    const auto* b = static_cast<const quant::BlockQ8_0*>(row) + c / 32;
    uint16_t dh;
    std::memcpy(&dh, &b->d, sizeof(dh));
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + c % 32));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(dh)),
                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
}

// Scores of R query rows x (8 / R) keys: s[r * lds + j] = q_r . k_j, K rows
// from an f32 buffer (Packed = false) or packed rows of type T.
template <int R, bool Packed, DType T>
FOLIO_INLINE_AVX2 void score_block(const float* q, int64_t ld, const void* const* k, int64_t d,
                                   float* s, int lds) {
  constexpr int J = 8 / R;
  __m256 acc[8];
  for (int i = 0; i < 8; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t c = 0; c < ld; c += 8) {
    __m256 qv[R];
    for (int r = 0; r < R; ++r) qv[r] = _mm256_loadu_ps(q + r * ld + c);
    for (int j = 0; j < J; ++j) {
      const __m256 kv =
          Packed ? load8<T>(k[j], c, d) : _mm256_loadu_ps(static_cast<const float*>(k[j]) + c);
      for (int r = 0; r < R; ++r) acc[r * J + j] = _mm256_fmadd_ps(qv[r], kv, acc[r * J + j]);
    }
  }
  const __m256 o = reduce8(acc);  // lane r * J + j
  if constexpr (R == 1) {
    _mm256_storeu_ps(s, o);
  } else if constexpr (R == 2) {
    _mm_storeu_ps(s, _mm256_castps256_ps128(o));
    _mm_storeu_ps(s + lds, _mm256_extractf128_ps(o, 1));
  } else {
    const __m128 lo = _mm256_castps256_ps128(o), hi = _mm256_extractf128_ps(o, 1);
    _mm_storel_pi(reinterpret_cast<__m64*>(s), lo);
    _mm_storeh_pi(reinterpret_cast<__m64*>(s + lds), lo);
    _mm_storel_pi(reinterpret_cast<__m64*>(s + 2 * lds), hi);
    _mm_storeh_pi(reinterpret_cast<__m64*>(s + 3 * lds), hi);
  }
}

template <int R, bool Packed, DType T>
FOLIO_INLINE_AVX2 void score_blocks(const float* q, int64_t ld, const void* const* k, int64_t d,
                                    int jb, int je, float* s, int lds) {
  constexpr int J = 8 / R;
  for (int j0 = jb / J * J; j0 < je; j0 += J)
    score_block<R, Packed, T>(q, ld, k + j0, d, s + j0, lds);
}

FOLIO_TARGET_AVX2 void scores_avx2(const float* q, int n_rows, const float* k, int64_t ld,
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
FOLIO_INLINE_AVX2 void scores_packed_t(const float* q, int n_rows, int64_t ld, const void* const* k,
                                       int64_t d, int jb, int je, float* s, int lds) {
  if (n_rows == 4) {
    score_blocks<4, true, T>(q, ld, k, d, jb, je, s, lds);
  } else if (n_rows >= 2) {
    score_blocks<2, true, T>(q, ld, k, d, jb, je, s, lds);
    if (n_rows == 3) score_blocks<1, true, T>(q + 2 * ld, ld, k, d, jb, je, s + 2 * lds, lds);
  } else {
    score_blocks<1, true, T>(q, ld, k, d, jb, je, s, lds);
  }
}

FOLIO_TARGET_AVX2 void scores_packed_avx2(const float* q, int n_rows, int64_t ld, DType dtype,
                                          const void* const* k, int64_t d, int jb, int je, float* s,
                                          int lds) {
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

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|).
FOLIO_INLINE_AVX2 __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  const __m256 e = avx2::exp(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  return _mm256_or_ps(t, _mm256_and_ps(sign, x));
}

FOLIO_TARGET_AVX2 float softmax_avx2(const float* s, int jb, int je, const FlashScoreParams& p,
                                     float* m_io, float* l_io, float* pr) {
  constexpr int kGroups = kFlashTile / 8;
  __m256 x[kGroups], mk[kGroups];
  const int g0 = jb / 8, g1 = (je - 1) / 8;
  const __m256 scale = _mm256_set1_ps(p.scale);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 mx = neg_inf;
  for (int g = g0; g <= g1; ++g) {
    const __m256i pos = _mm256_add_epi32(lane, _mm256_set1_epi32(8 * g));
    const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(pos, _mm256_set1_epi32(jb - 1)),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(je), pos));
    __m256 xv = _mm256_mul_ps(_mm256_maskload_ps(s + 8 * g, in), scale);
    if (p.softcap > 0.0f) {
      const __m256 cap = _mm256_set1_ps(p.softcap);
      xv = _mm256_mul_ps(cap, tanh_ps(_mm256_div_ps(xv, cap)));
    }
    mk[g] = _mm256_castsi256_ps(in);
    x[g] = _mm256_blendv_ps(neg_inf, xv, mk[g]);
    mx = _mm256_max_ps(mx, x[g]);
  }
  const float tmax = avx2::hmax(mx);
  float m = *m_io, l = *l_io;
  const float ms = flash_raise_max(tmax, m, l, [](float x) { return std::exp(x); });
  const __m256 mv = _mm256_set1_ps(m);
  __m256 lsum = _mm256_setzero_ps();
  for (int g = g0; g <= g1; ++g) {
    const __m256 pv = _mm256_and_ps(avx2::exp(_mm256_sub_ps(x[g], mv)), mk[g]);
    lsum = _mm256_add_ps(lsum, pv);
    _mm256_storeu_ps(pr + 8 * g, pv);
  }
  *m_io = m;
  *l_io = l + avx2::hsum(lsum);
  return ms;
}

// acc_r[c0, c0 + 8 C) = acc_r * ms_r + sum_{j in [jb, je)} p_r[j] v_j, j ascending.
template <int R, int C, DType T>
FOLIO_INLINE_AVX2 void pv_pass(const float* p, int ldp, const float* ms, int jb, int je, float* acc,
                               int64_t lda, const void* const* v, int64_t dv, int64_t c0) {
  __m256 a[R][C];
  for (int r = 0; r < R; ++r) {
    const __m256 msv = _mm256_set1_ps(ms[r]);
    for (int i = 0; i < C; ++i) {
      a[r][i] = _mm256_mul_ps(_mm256_loadu_ps(acc + r * lda + c0 + 8 * i), msv);
    }
  }
  for (int j = jb; j < je; ++j) {
    if constexpr (R == 1) {
      const __m256 pj = _mm256_broadcast_ss(p + j);
      for (int i = 0; i < C; ++i)
        a[0][i] = _mm256_fmadd_ps(pj, load8<T>(v[j], c0 + 8 * i, dv), a[0][i]);
    } else {
      __m256 vv[C];
      for (int i = 0; i < C; ++i) vv[i] = load8<T>(v[j], c0 + 8 * i, dv);
      for (int r = 0; r < R; ++r) {
        const __m256 pj = _mm256_broadcast_ss(p + r * ldp + j);
        for (int i = 0; i < C; ++i) a[r][i] = _mm256_fmadd_ps(pj, vv[i], a[r][i]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < C; ++i) _mm256_storeu_ps(acc + r * lda + c0 + 8 * i, a[r][i]);
  }
}

template <int R, DType T, int MaxC, int C = 1>
FOLIO_INLINE_AVX2 void pv_pass_n(int n, const float* p, int ldp, const float* ms, int jb, int je,
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
FOLIO_INLINE_AVX2 void pv_rows(const float* p, int ldp, const float* ms, int jb, int je, float* acc,
                               int64_t lda, const void* const* v, int64_t dv, int64_t ldv) {
  constexpr int kMaxC = 8 / R;  // 8 accumulators
  for (int64_t c0 = 0; c0 < ldv; c0 += 8 * kMaxC) {
    const int n = static_cast<int>(std::min<int64_t>(kMaxC, (ldv - c0) / 8));
    pv_pass_n<R, T, kMaxC>(n, p, ldp, ms, jb, je, acc, lda, v, dv, c0);
  }
}

template <DType T>
FOLIO_INLINE_AVX2 void pv_t(const float* p, int ldp, const float* ms, int n_rows, int jb, int je,
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

FOLIO_TARGET_AVX2 void pv_avx2(const float* p, int ldp, const float* ms, int n_rows, int jb, int je,
                               float* acc, int64_t lda, DType dtype, const void* const* v,
                               int64_t dv, int64_t ldv) {
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

FOLIO_FLASH_ATTN_KERNEL(avx2)

}  // namespace folio::cpu
