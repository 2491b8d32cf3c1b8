// F16 weights (plain rows) x F32 activations in AVX-512 vector registers,
// giving exactly the bits of the AMX F16 tile kernel (amx/f16_tile_model.h's
// dot_model), for the batches too small to fill the tiles: with it, decode
// can run here and prefill on the tiles while a sequence's outputs stay the
// same whatever batch it is in (mul_mat_f16_amx_combined in
// amx/mul_mat_bf16_amx.cc). Not registered: per weight it does three fused
// multiply-adds, a split and a share of a transpose where the AVX-512 F16
// kernel does one multiply-add, and decode ran slower (docs/DESIGN.md).
//
// Lanes are (weight row, element of a pair): a group of 16 rows is two
// vectors, rows 0-7 and 8-15, lane 2i running the model's even chains of
// its row and lane 2i + 1 the odd ones. Per step of 32 elements of K:
//   the 16 rows' 64-byte pieces are loaded (zero past K; rows past the end
//     repeat the last, their lanes never stored) and transposed as 16 x 16
//     dwords (vector q: pair q, elements 2q and 2q + 1, of each row), each
//     half widened to f32 (vcvtph2ps keeps the pair in adjacent lanes) and
//     split exactly into wh (truncated to BF16) and wl = w - wh, into a 4 KB
//     buffer;
//   for each activation row, per product (ah wh, al wh, ah wl) and half,
//     one chain vector from zero, one fused multiply-add per pair in
//     ascending order (the activation pair broadcast to every row), then
//     C += E + O per product in that order (E + O: the vector plus its
//     lanes swapped in pairs, so both lanes of a row hold C).
// The activations are split first (amx_bf16::act_split16, the model's
// split) into f32 planes ah, al of kpad elements (K rounded up to 32, zeros
// after K).
//
// Flushing: the model reads every operand with denormals as zero and
// flushes every rounded result. The products run with MXCSR.DAZ set (FTZ
// clear, nearest even), so each operation rounds as the model's does and
// its result, when denormal, is read as zero by the next one, as the
// model's flush gives it; the output alone is flushed explicitly. The
// weight parts and the activation parts are never denormal (an F16 value
// widens to a normal f32; act_to_bf16 flushes), so DAZ changes none of
// them. The caller's MXCSR is restored.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/amx/bf16_round.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/amx/kernels.h"
#include "backend/cpu/avx512/transpose.h"
#include "backend/cpu/drivers/grow_buffer.h"
#include "core/target.h"

namespace folio::cpu {

namespace {

#define FOLIO_INLINE_F16_ROWS FOLIO_TARGET_AVX512 __attribute__((always_inline)) static inline

using amx_bf16::kStep;

constexpr int kLanes = 16;  // weight rows per vector
constexpr unsigned kMxcsrDaz = 0x0040;
constexpr unsigned kMxcsrFtzRound = 0xe000;  // FTZ and the rounding control

thread_local GrowBuffer f16_rows_scratch;  // the activation planes

// Activation rows [0, nc) split into f32 planes: row c's ah at
// planes + 2 c kpad, its al kpad floats after; zeros from k to kpad.
FOLIO_TARGET_AVX512 void f16_rows_split_acts(const unsigned char* x, size_t xs, int64_t nc,
                                             int64_t k, int64_t kpad, float* planes) {
  for (int64_t c = 0; c < nc; ++c) {
    const float* s = reinterpret_cast<const float*>(x + c * xs);
    float* hi = planes + 2 * c * kpad;
    float* lo = hi + kpad;
    for (int64_t i = 0; i < kpad; i += 16) {
      const int64_t n = std::clamp<int64_t>(k - i, 0, 16);
      const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), s + i);
      __m256i h, l;
      amx_bf16::act_split16(v, h, l);
      _mm512_store_ps(hi + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
      _mm512_store_ps(lo + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(l), 16)));
    }
  }
}

// Step s of rows [r0, r0 + 16) (rows < nr, k elements) into r: r[q] pair
// q = elements (32 s + 2q, 32 s + 2q + 1) of each row (dword i: row r0 + i).
FOLIO_INLINE_F16_ROWS void f16_rows_load_step(const unsigned char* w, size_t ws, int64_t nr,
                                              int64_t r0, int64_t k, int64_t s, __m512* r) {
  const int64_t e = s * kStep;
  const int64_t left = k - e;
  const __mmask32 m = left >= kStep ? ~__mmask32{0} : static_cast<__mmask32>((1u << left) - 1);
  for (int i = 0; i < kLanes; ++i) {
    const int64_t row = std::min<int64_t>(r0 + i, nr - 1);
    const auto* p = reinterpret_cast<const uint16_t*>(w + row * ws) + e;
    r[i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m, p));
    // The next group's piece of this step, into L2: the 16 rows are 16
    // short streams, which the hardware prefetchers start late.
    _mm_prefetch(reinterpret_cast<const char*>(p) + kLanes * ws, _MM_HINT_T1);
  }
  avx512::transpose16(r);
}

// One pair of the 16 rows (f16_rows_load_step's r[q]) split, lanes (row,
// element of the pair): w4[0] wh of rows 0-7 (lane 2i: row i's even
// element, 2i + 1 its odd one), w4[1] their wl, w4[2] and w4[3] the same
// for rows 8-15.
FOLIO_INLINE_F16_ROWS void f16_rows_split_pair(__m512 pair, __m512* w4) {
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512i v = _mm512_castps_si512(pair);
  const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(v));
  const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1));
  const __m512 lo_h = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(lo), top));
  const __m512 hi_h = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(hi), top));
  w4[0] = lo_h;
  w4[1] = _mm512_sub_ps(lo, lo_h);
  w4[2] = hi_h;
  w4[3] = _mm512_sub_ps(hi, hi_h);
}

// Step s of rows [r0, r0 + 16), split: wb[4q..4q+3] = pair q's
// f16_rows_split_pair.
FOLIO_INLINE_F16_ROWS void f16_rows_split_step(const unsigned char* w, size_t ws, int64_t nr,
                                               int64_t r0, int64_t k, int64_t s, __m512* wb) {
  __m512 r[kLanes];
  f16_rows_load_step(w, ws, nr, r0, k, s, r);
  for (int q = 0; q < kLanes; ++q) f16_rows_split_pair(r[q], wb + 4 * q);
}

// The pair (x[0], x[1]) in every 64-bit lane.
FOLIO_INLINE_F16_ROWS __m512 f16_rows_pair(const float* x) {
  double d;
  std::memcpy(&d, x, 8);
  return _mm512_castpd_ps(_mm512_set1_pd(d));
}

// c + (E + O) in both lanes of each row (lane 2i holds E, 2i + 1 O).
FOLIO_INLINE_F16_ROWS __m512 f16_rows_add_pairs(__m512 c, __m512 p) {
  return _mm512_add_ps(c, _mm512_add_ps(p, _mm512_permute_ps(p, 0xb1)));
}

// One step for one activation row: acc[0] (rows r0..r0+7) and acc[1]
// (r0+8..r0+15), C in both lanes of each row, after the step's three
// products; ah / al this step's 32 activation parts. Each lane runs one of
// the model's chains: lane 2i the even, 2i + 1 the odd products of its row.
FOLIO_INLINE_F16_ROWS void f16_rows_products(const __m512* wb, const float* ah, const float* al,
                                             __m512* acc) {
  __m512 p1 = _mm512_setzero_ps(), p2 = p1, p3 = p1, q1 = p1, q2 = p1, q3 = p1;
  for (int q = 0; q < kLanes; ++q) {
    const __m512 a = f16_rows_pair(ah + 2 * q), l = f16_rows_pair(al + 2 * q);
    p1 = _mm512_fmadd_ps(a, wb[4 * q], p1);      // ah wh
    p2 = _mm512_fmadd_ps(l, wb[4 * q], p2);      // al wh
    p3 = _mm512_fmadd_ps(a, wb[4 * q + 1], p3);  // ah wl
    q1 = _mm512_fmadd_ps(a, wb[4 * q + 2], q1);
    q2 = _mm512_fmadd_ps(l, wb[4 * q + 2], q2);
    q3 = _mm512_fmadd_ps(a, wb[4 * q + 3], q3);
  }
  acc[0] = f16_rows_add_pairs(f16_rows_add_pairs(f16_rows_add_pairs(acc[0], p1), p2), p3);
  acc[1] = f16_rows_add_pairs(f16_rows_add_pairs(f16_rows_add_pairs(acc[1], q1), q2), q3);
}

// f16_rows_products on a step's unsplit pairs (f16_rows_load_step's r),
// each split just before its products.
FOLIO_INLINE_F16_ROWS void f16_rows_products_fused(const __m512* r, const float* ah,
                                                   const float* al, __m512* acc) {
  __m512 p1 = _mm512_setzero_ps(), p2 = p1, p3 = p1, q1 = p1, q2 = p1, q3 = p1;
  for (int q = 0; q < kLanes; ++q) {
    __m512 w4[4];
    f16_rows_split_pair(r[q], w4);
    const __m512 a = f16_rows_pair(ah + 2 * q), l = f16_rows_pair(al + 2 * q);
    p1 = _mm512_fmadd_ps(a, w4[0], p1);
    p2 = _mm512_fmadd_ps(l, w4[0], p2);
    p3 = _mm512_fmadd_ps(a, w4[1], p3);
    q1 = _mm512_fmadd_ps(a, w4[2], q1);
    q2 = _mm512_fmadd_ps(l, w4[2], q2);
    q3 = _mm512_fmadd_ps(a, w4[3], q3);
  }
  acc[0] = f16_rows_add_pairs(f16_rows_add_pairs(f16_rows_add_pairs(acc[0], p1), p2), p3);
  acc[1] = f16_rows_add_pairs(f16_rows_add_pairs(f16_rows_add_pairs(acc[1], q1), q2), q3);
}

// Denormal lanes -> zero of their sign (the model's last flush).
FOLIO_INLINE_F16_ROWS __m512 f16_rows_flush(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __mmask16 tiny = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
  return _mm512_castsi512_ps(
      _mm512_mask_and_epi32(u, tiny, u, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}

// The model, output by output (no scratch memory: the same bits, slowly).
void f16_rows_model(int64_t k, const unsigned char* w, size_t ws, int64_t nr,
                    const unsigned char* x, size_t xs, int64_t nc, float* out, size_t os) {
  for (int64_t c = 0; c < nc; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * os);
    for (int64_t r = 0; r < nr; ++r) {
      o[r] = amx_f16::dot_model(reinterpret_cast<const uint16_t*>(w + r * ws),
                                reinterpret_cast<const float*>(x + c * xs), k);
    }
  }
}

// Accumulators of up to kMaxCols activation rows stay in a stack array per
// group of 16 weight rows; more rows are taken in passes.
constexpr int64_t kMaxCols = 16;

FOLIO_TARGET_AVX512 void f16_rows_group(int64_t k, const unsigned char* w, size_t ws, int64_t nr,
                                        int64_t r0, const float* planes, int64_t kpad, int64_t c0,
                                        int64_t cn, float* out, size_t os) {
  alignas(64) __m512 wb[4 * kLanes];
  __m512 acc[kMaxCols][2];
  for (int64_t c = 0; c < cn; ++c) acc[c][0] = acc[c][1] = _mm512_setzero_ps();
  const int64_t steps = kpad / kStep;
  if (cn == 1) {
    // One activation row (decode): each pair's split goes straight into
    // its products, no buffer.
    const float* ah = planes + 2 * c0 * kpad;
    for (int64_t s = 0; s < steps; ++s) {
      __m512 r[kLanes];
      f16_rows_load_step(w, ws, nr, r0, k, s, r);
      f16_rows_products_fused(r, ah + s * kStep, ah + kpad + s * kStep, acc[0]);
    }
  } else {
    for (int64_t s = 0; s < steps; ++s) {
      f16_rows_split_step(w, ws, nr, r0, k, s, wb);
      for (int64_t c = 0; c < cn; ++c) {
        const float* ah = planes + 2 * (c0 + c) * kpad + s * kStep;
        f16_rows_products(wb, ah, ah + kpad, acc[c]);
      }
    }
  }
  alignas(64) static constexpr int32_t kEvenLanes[16] = {0,  2,  4,  6,  8,  10, 12, 14,
                                                         16, 18, 20, 22, 24, 26, 28, 30};
  const __m512i even = _mm512_load_si512(kEvenLanes);
  const int64_t rows = std::min<int64_t>(kLanes, nr - r0);
  const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
  for (int64_t c = 0; c < cn; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + (c0 + c) * os) + r0;
    const __m512 v = _mm512_permutex2var_ps(acc[c][0], even, acc[c][1]);
    _mm512_mask_storeu_ps(o, m, f16_rows_flush(v));
  }
}

}  // namespace

FOLIO_TARGET_AVX512 void f16_rows_panel(int64_t k, const void* w, size_t w_stride, int64_t nr,
                                        const void* x, size_t x_stride, int64_t nc, float* out,
                                        size_t out_stride) {
  if (nr <= 0 || nc <= 0) return;
  const auto* wp = static_cast<const unsigned char*>(w);
  const auto* xp = static_cast<const unsigned char*>(x);
  const int64_t kpad = (k + kStep - 1) / kStep * kStep;
  auto* planes = static_cast<float*>(
      f16_rows_scratch.get(static_cast<size_t>(2 * nc * std::max<int64_t>(kpad, 16)) * 4));
  if (planes == nullptr) {
    f16_rows_model(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride);
    return;
  }
  f16_rows_split_acts(xp, x_stride, nc, k, kpad, planes);
  const unsigned saved = _mm_getcsr();
  _mm_setcsr((saved & ~kMxcsrFtzRound) | kMxcsrDaz);
  for (int64_t r0 = 0; r0 < nr; r0 += kLanes) {
    for (int64_t c0 = 0; c0 < nc; c0 += kMaxCols) {
      f16_rows_group(k, wp, w_stride, nr, r0, planes, kpad, c0, std::min(kMaxCols, nc - c0), out,
                     out_stride);
    }
  }
  _mm_setcsr(saved);
}

void f16_rows_tile(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                   size_t x_stride, int nc, float* out, size_t out_stride) {
  f16_rows_panel(k, w, w_stride, nr, x, x_stride, nc, out, out_stride);
}

namespace {

MatMulSpec f16_rows_spec() {
  MatMulSpec spec;
  spec.act = ActFormat::kF32;
  spec.tile_rows = 64;
  spec.tile_cols = 32;
  spec.tile = &f16_rows_tile;
  spec.panel = &f16_rows_panel;
  return spec;
}

}  // namespace

Status mul_mat_f16_rows(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, f16_rows_spec());
}

Status mul_mat_id_f16_rows(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, f16_rows_spec());
}

}  // namespace folio::cpu
