// Flash attention (kFlashAttn) over the traits type (f32x16.h): the tile
// primitives of drivers/flash_attn_tiled.h, which owns the plan, the
// block-table reads, split-K and threads.
//
// K/V elements come from an f32 tile buffer (convert_rows: f16 widened, q8_0
// as int8 -> f32 times the block scale, as the reference) or straight from
// the cache rows through the same conversions in registers (flash_load):
// both give the same floats. The loops run over S::Part, the registers a
// 16-lane vector is made of (AVX-512 one zmm, AVX2 two ymm, NEON four q),
// so each tier keeps the register blocking its register file holds, while
// every element sees the same operations in the same order on every tier:
// the same bytes everywhere. Everything below the five primitives is
// always inlined into them, so that the loops' accumulators stay in
// registers.
// scores   blocks of R rows x B / R keys (B = Part::kLanes scores: 16 on
//          AVX-512, 8 on AVX2, 4 on NEON), R = 4, 2 or 1: one 16-lane FMA
//          chain over the head dimension per score, run one part after the
//          other (B accumulators of one part at a time), then S::hsums
//          reduces the block's B vectors at once in hsum's tree. A score
//          never depends on its block, so neither on its neighbours.
// softmax  the tile's scores in 16-lane groups aligned to the tile; lanes
//          outside [jb, je) are replaced by selection (-inf for the max, 0
//          for p); p = exp(x - m) by the 2-ulp vector exp, 0 where it would
//          be subnormal (exp_normal: a subnormal p would cost a microcode
//          assist in each of pv's FMAs that read it, several times the
//          whole attention's time where scores are spread wide), its sum
//          in one 16-lane accumulator, groups in order, then hsum.
// pv       acc * ms, then p_j v_j for j ascending, one FMA per element, in
//          R rows x C chunks of Part::kLanes columns (at most 16 / kParts
//          Part accumulators, 8 chunks), each V chunk converted once for all
//          rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "backend/cpu/simd/kernels.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace folio::cpu::simd {

// Part::kLanes elements of a packed row from element c on, zeros past d
// (rows are padded to 16, so c may be past d). Q8_0: d % 32 == 0, so c < d.
// No calls: a call inside the loops would make the compiler keep their
// accumulators in memory.
template <class S, DType T>
__attribute__((always_inline)) inline typename S::Part::V flash_load(const void* row, int64_t c,
                                                                     int64_t d) {
  using P = typename S::Part;
  constexpr int kL = P::kLanes;
  if constexpr (T == DType::F32) {
    const float* x = static_cast<const float*>(row) + c;
    if (c + kL <= d) return P::load(x);
    return c < d ? P::load_first(x, d - c) : P::zero();
  } else if constexpr (T == DType::F16) {
    const uint16_t* x = static_cast<const uint16_t*>(row) + c;
    if (c + kL <= d) return P::load_f16(x);
    return c < d ? P::load_f16_first(x, d - c) : P::zero();
  } else {
    const auto* b = static_cast<const quant::BlockQ8_0*>(row) + c / 32;
    uint16_t dh;
    std::memcpy(&dh, &b->d, sizeof(dh));
    return P::mul(P::set1(S::widen_f16(dh)), P::load_i8(b->qs + c % 32));
  }
}

// dst[i * ld + c] = row src[i] as f32 (c < d), zero for d <= c < ld.
template <class S>
void flash_convert_rows(DType dtype, const void* const* src, int n, int64_t d, float* dst,
                        int64_t ld) {
  using P = typename S::Part;
  constexpr int kL = P::kLanes;
  for (int i = 0; i < n; ++i) {
    float* out = dst + i * ld;
    int64_t c = 0;
    if (dtype == DType::F32) {
      std::memcpy(out, src[i], sizeof(float) * static_cast<size_t>(d));
      c = d;
    } else if (dtype == DType::F16) {
      const uint16_t* x = static_cast<const uint16_t*>(src[i]);
      for (; c + kL <= d; c += kL) P::store(out + c, P::load_f16(x + c));
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
        const typename P::V scale = P::set1(S::widen_f16(dh));
        for (int k = 0; k < 32; k += kL)
          P::store(out + c + k, P::mul(scale, P::load_i8(b->qs + k)));
      }
    }
    for (; c < ld; ++c) out[c] = 0.0f;
  }
}

// Scores of R query rows x (B / R) keys, B = Part::kLanes: s[r * lds + j] =
// q_r . k_j, K rows from an f32 buffer (Packed = false: k[j] are float rows)
// or packed rows of type T converted in registers. Lane i of a score's
// 16-lane accumulator sums the products of the elements c = i (mod 16), c
// ascending; part p holds lanes [p B, p B + B).
template <class S, int R, bool Packed, DType T>
__attribute__((always_inline)) inline void flash_score_block(const float* q, int64_t ld,
                                                             const void* const* k, int64_t d,
                                                             float* s, int lds) {
  using P = typename S::Part;
  using PV = typename P::V;
  constexpr int kB = P::kLanes, kJ = kB / R, kParts = S::kParts;
  PV parts[kB][kParts];
  for (int p = 0; p < kParts; ++p) {
    PV acc[kB];
    for (int b = 0; b < kB; ++b) acc[b] = P::zero();
    for (int64_t c = p * kB; c < ld; c += 16) {
      PV qv[R];
      for (int r = 0; r < R; ++r) qv[r] = P::load(q + r * ld + c);
      for (int j = 0; j < kJ; ++j) {
        PV kv;
        if constexpr (Packed) {
          kv = flash_load<S, T>(k[j], c, d);
        } else {
          kv = P::load(static_cast<const float*>(k[j]) + c);
        }
        for (int r = 0; r < R; ++r) acc[r * kJ + j] = P::fma(qv[r], kv, acc[r * kJ + j]);
      }
    }
    for (int b = 0; b < kB; ++b) parts[b][p] = acc[b];
  }
  typename S::V full[kB];
  for (int b = 0; b < kB; ++b) full[b] = S::join(parts[b]);
  const PV o = S::hsums(full);  // lane r * kJ + j
  if constexpr (R == 1) {
    P::store(s, o);
  } else {
    float t[kB];
    P::store(t, o);
    for (int r = 0; r < R; ++r) std::memcpy(s + r * lds, t + r * kJ, sizeof(float) * kJ);
  }
}

// The aligned key groups of R-row blocks covering [jb, je).
template <class S, int R, bool Packed, DType T>
__attribute__((always_inline)) inline void flash_score_blocks(const float* q, int64_t ld,
                                                              const void* const* k, int64_t d,
                                                              int jb, int je, float* s, int lds) {
  constexpr int kJ = S::Part::kLanes / R;
  for (int j0 = jb / kJ * kJ; j0 < je; j0 += kJ) {
    flash_score_block<S, R, Packed, T>(q, ld, k + j0, d, s + j0, lds);
  }
}

template <class S>
void flash_scores(const float* q, int n_rows, const float* k, int64_t ld, const int* lo,
                  const int* hi, float* s, int lds) {
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
        flash_score_blocks<S, 4, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      } else if (R == 2) {
        flash_score_blocks<S, 2, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      } else {
        flash_score_blocks<S, 1, false, DType::F32>(qb, ld, rows, ld, blo, bhi, sb, lds);
      }
    }
    r0 += R;
  }
}

template <class S, DType T>
__attribute__((always_inline)) inline void flash_scores_packed_t(const float* q, int n_rows,
                                                                 int64_t ld, const void* const* k,
                                                                 int64_t d, int jb, int je,
                                                                 float* s, int lds) {
  if (n_rows == 4) {
    flash_score_blocks<S, 4, true, T>(q, ld, k, d, jb, je, s, lds);
  } else if (n_rows >= 2) {
    flash_score_blocks<S, 2, true, T>(q, ld, k, d, jb, je, s, lds);
    if (n_rows == 3) {
      flash_score_blocks<S, 1, true, T>(q + 2 * ld, ld, k, d, jb, je, s + 2 * lds, lds);
    }
  } else {
    flash_score_blocks<S, 1, true, T>(q, ld, k, d, jb, je, s, lds);
  }
}

template <class S>
void flash_scores_packed(const float* q, int n_rows, int64_t ld, DType dtype, const void* const* k,
                         int64_t d, int jb, int je, float* s, int lds) {
  switch (dtype) {
    case DType::F32:
      flash_scores_packed_t<S, DType::F32>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
    case DType::F16:
      flash_scores_packed_t<S, DType::F16>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
    default:
      flash_scores_packed_t<S, DType::Q8_0>(q, n_rows, ld, k, d, jb, je, s, lds);
      break;
  }
}

// tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|): absolute error a
// few 1e-8, saturates to +-1; NaN stays NaN.
template <class S>
__attribute__((always_inline)) inline typename S::V flash_tanh(typename S::V x) {
  using V = typename S::V;
  const V one = S::set1(1.0f);
  const V e = S::exp(S::abs(x) * S::set1(-2.0f));
  return S::copysign((one - e) / (one + e), x);
}

template <class S>
float flash_softmax(const float* s, int jb, int je, const FlashScoreParams& p, float* m_io,
                    float* l_io, float* pr) {
  using V = typename S::V;
  using M = typename S::M;
  constexpr int kGroups = kFlashTile / 16;
  V x[kGroups];
  M below[kGroups], live[kGroups];  // lanes before jb; lanes before je
  const int g0 = jb / 16, g1 = (je - 1) / 16;
  const V scale = S::set1(p.scale);
  const V neg_inf = S::set1(-std::numeric_limits<float>::infinity());
  V mx = neg_inf;
  for (int g = g0; g <= g1; ++g) {
    below[g] = S::first(std::max(jb - 16 * g, 0));
    live[g] = S::first(std::min(je - 16 * g, 16));
    // Lanes before jb are read from the row's buffer and then replaced.
    V xv = S::load(s + 16 * g, live[g]) * scale;
    if (p.softcap > 0.0f) {
      const V cap = S::set1(p.softcap);
      xv = cap * flash_tanh<S>(xv / cap);
    }
    x[g] = S::select(below[g], neg_inf, S::select(live[g], xv, neg_inf));
    mx = S::max(mx, x[g]);
  }
  const float tmax = S::hmax(mx);
  float m = *m_io, l = *l_io;
  const float ms = flash_raise_max(tmax, m, l, [](float v) { return std::exp(v); });
  const V mv = S::set1(m);
  V lsum = S::zero();
  for (int g = g0; g <= g1; ++g) {
    const V e = S::select(below[g], S::zero(), S::keep(S::exp_normal(x[g] - mv), live[g]));
    lsum = lsum + e;
    S::store(pr + 16 * g, e);
  }
  *m_io = m;
  *l_io = l + S::hsum(lsum);
  return ms;
}

// acc_r[c0, c0 + L C) = acc_r * ms_r + sum_{j in [jb, je)} p_r[j] v_j, j
// ascending (L = Part::kLanes).
template <class S, int R, int C, DType T>
__attribute__((always_inline)) inline void flash_pv_pass(const float* p, int ldp, const float* ms,
                                                         int jb, int je, float* acc, int64_t lda,
                                                         const void* const* v, int64_t dv,
                                                         int64_t c0) {
  using P = typename S::Part;
  using PV = typename P::V;
  constexpr int kL = P::kLanes;
  PV a[R][C];
  for (int r = 0; r < R; ++r) {
    const PV msv = P::set1(ms[r]);
    for (int i = 0; i < C; ++i) a[r][i] = P::mul(P::load(acc + r * lda + c0 + kL * i), msv);
  }
  for (int j = jb; j < je; ++j) {
    PV vv[C];
    for (int i = 0; i < C; ++i) vv[i] = flash_load<S, T>(v[j], c0 + kL * i, dv);
    for (int r = 0; r < R; ++r) {
      const PV pj = P::set1(p[r * ldp + j]);
      for (int i = 0; i < C; ++i) a[r][i] = P::fma(pj, vv[i], a[r][i]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < C; ++i) P::store(acc + r * lda + c0 + kL * i, a[r][i]);
  }
}

// flash_pv_pass<S, R, n, T> for a run-time n in [1, MaxC].
template <class S, int R, DType T, int MaxC, int C = 1>
__attribute__((always_inline)) inline void flash_pv_pass_n(int n, const float* p, int ldp,
                                                           const float* ms, int jb, int je,
                                                           float* acc, int64_t lda,
                                                           const void* const* v, int64_t dv,
                                                           int64_t c0) {
  if constexpr (C < MaxC) {
    if (n != C) {
      flash_pv_pass_n<S, R, T, MaxC, C + 1>(n, p, ldp, ms, jb, je, acc, lda, v, dv, c0);
      return;
    }
  }
  flash_pv_pass<S, R, C, T>(p, ldp, ms, jb, je, acc, lda, v, dv, c0);
}

template <class S, int R, DType T>
__attribute__((always_inline)) inline void flash_pv_rows(const float* p, int ldp, const float* ms,
                                                         int jb, int je, float* acc, int64_t lda,
                                                         const void* const* v, int64_t dv,
                                                         int64_t ldv) {
  // At most 16 / kParts Part accumulators (16 zmm on AVX-512, 8 ymm on
  // AVX2, 4 q on NEON), at most 8 chunks.
  constexpr int kL = S::Part::kLanes;
  constexpr int kMaxC = std::min(8, 16 / S::kParts / R);
  for (int64_t c0 = 0; c0 < ldv; c0 += kL * kMaxC) {
    const int n = static_cast<int>(std::min<int64_t>(kMaxC, (ldv - c0) / kL));
    flash_pv_pass_n<S, R, T, kMaxC>(n, p, ldp, ms, jb, je, acc, lda, v, dv, c0);
  }
}

template <class S, DType T>
__attribute__((always_inline)) inline void flash_pv_t(const float* p, int ldp, const float* ms,
                                                      int n_rows, int jb, int je, float* acc,
                                                      int64_t lda, const void* const* v, int64_t dv,
                                                      int64_t ldv) {
  if (n_rows == 4) {
    flash_pv_rows<S, 4, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
  } else if (n_rows >= 2) {
    flash_pv_rows<S, 2, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
    if (n_rows == 3) {
      flash_pv_rows<S, 1, T>(p + 2 * ldp, ldp, ms + 2, jb, je, acc + 2 * lda, lda, v, dv, ldv);
    }
  } else {
    flash_pv_rows<S, 1, T>(p, ldp, ms, jb, je, acc, lda, v, dv, ldv);
  }
}

template <class S>
void flash_pv(const float* p, int ldp, const float* ms, int n_rows, int jb, int je, float* acc,
              int64_t lda, DType dtype, const void* const* v, int64_t dv, int64_t ldv) {
  switch (dtype) {
    case DType::F32:
      flash_pv_t<S, DType::F32>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
    case DType::F16:
      flash_pv_t<S, DType::F16>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
    default:
      flash_pv_t<S, DType::Q8_0>(p, ldp, ms, n_rows, jb, je, acc, lda, v, dv, ldv);
      break;
  }
}

template <class S>
Status flash_attn(const Op& op, const KernelContext& ctx) {
  static constexpr FlashAttnPrimitives kPrims = {flash_convert_rows<S>, flash_scores<S>,
                                                 flash_scores_packed<S>, flash_softmax<S>,
                                                 flash_pv<S>};
  return flash_attn_tiled(op, ctx, kPrims);
}

}  // namespace folio::cpu::simd
