// F16 weights in the F16_X16 layout (quant/repack.h: per panel of 16 rows
// and step of 32 elements of K, 16 vectors of 64 bytes, pair q's dword i =
// row i's elements 2q, 2q + 1; K zero-padded to 32) x F32 activations, for
// the amx tier on CPUs with AMX-BF16. Every output is exactly
// amx/f16_tile_model.h's dot_model (three BF16 products per 32 elements of
// K: ah wh, al wh, ah wl), at every batch size, so a sequence's outputs do
// not depend on the batch it is in.
//
// The packed driver (packed/packed_mul_mat.h) splits each activation row
// once per op into BF16 parts (ActFormat::kBf16Split: ah[kpad], al[kpad]).
// Then:
//   one or two activation rows (decode of one or two sequences; a
//     mul_mat_id expert with one or two tokens): an AVX-512 rows kernel,
//     lanes (weight row, element of a pair), as amx/mul_mat_f16_rows.cc
//     but reading a pair's 64 bytes as they are
//     stored (no transpose): each vector widened (vcvtph2ps keeps a pair in
//     adjacent lanes) and split into wh (truncated to BF16) and wl = w - wh,
//     the activation pair broadcast, six fused chains per 16 rows, then
//     C += E + O per product (the vector plus its pair-swapped self). One
//     activation row steps four (then two) panels at once: four weight
//     streams, each prefetched into L1 one step (kStepBytes) ahead, a line
//     per pair, and 24 chains in flight. MXCSR.DAZ (FTZ clear) gives the
//     model's flushes, the output alone flushed explicitly, the caller's
//     MXCSR restored.
//   kF16X16TileRows (3) to 16 rows (several sequences decoding; the driver
//     sends them to the decode function, several panels per call):
//     TDPBF16PS tiles, two panels at once, each split step by step into
//     B tiles (wh and wl: the high words of the widened values, one word
//     permutation each, already in VNNI pair order) in an L1 ring a few
//     steps ahead of its products, the rows the A operand read in place
//     from the driver's rows (ah, al), one C tile per panel for the whole
//     of K: the split overlaps the tile products, and the two panels' C
//     tiles are two independent chains of products.
//   17 rows and more: the same tiles per panel. Per block of kBlockSteps
//     steps of K, the panel's vectors are split into B tiles once for every
//     group of 16 activation rows. C (16 activation rows x the 16 weight
//     rows) starts at zero and is stored to the output after each block
//     and loaded again for the next (f32 round-trips unchanged). Two groups
//     share each step's B tiles; a last group of fewer rows runs on tiles
//     configured with that many rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/amx/bf16_round.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/drivers/grow_buffer.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/target.h"
#include "quant/repack.h"

namespace folio::cpu {

namespace {

#define FOLIO_INLINE_F16X16 FOLIO_TARGET_AVX512 __attribute__((always_inline)) static inline

using amx_bf16::kStep;
constexpr int kRows = 16;                             // weight rows per panel
constexpr size_t kStepBytes = quant::kF16xStepBytes;  // one step of a panel
constexpr size_t kTileBytes = 1024;
constexpr int64_t kBlockSteps = 16;           // tiles: steps of K per block
constexpr size_t kPrefetchBytes = kStepBytes;  // rows kernel: read-ahead (next step, to L1)
constexpr unsigned kMxcsrDaz = 0x0040;
constexpr unsigned kMxcsrFtzRound = 0xe000;

// Activation rows from which the tiles take a call (fewer: the rows
// kernel, two rows at a time; the same bits either way). Measured with
// folio-test-ops perf (K=2048 N=1024, one thread): the rows kernel's cost
// grows by a column's six multiply-adds per pair, the tiles' stays about
// flat below 16 rows, and they cross between two and three rows.
constexpr int kF16X16TileRows = 3;

thread_local GrowBuffer f16x16_scratch[2];  // [0] rows: f32 planes; [1] tiles: split B

int64_t padded(int64_t k) {
  return (k + kStep - 1) / kStep * kStep;
}

// --- Activation rows: the split (ActFormat::kBf16Split) ----------------------

// Row of k floats -> ah[kpad] then al[kpad] (BF16 bits), zeros past k: the
// reference's bytes (convert_act_row), 16 elements at a time.
FOLIO_TARGET_AVX512 void f16x16_split_act(const float* src, void* dst, int64_t k) {
  const int64_t kpad = padded(k);
  auto* hi = static_cast<uint16_t*>(dst);
  uint16_t* lo = hi + kpad;
  for (int64_t i = 0; i < kpad; i += 16) {
    const int64_t n = std::clamp<int64_t>(k - i, 0, 16);
    const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), src + i);
    __m256i h, l;
    amx_bf16::act_split16(v, h, l);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + i), h);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + i), l);
  }
}

// --- One activation row: the AVX-512 rows kernel ----------------------------

// 16 F16 values at p widened (each half of a pair vector is read as its
// own 32 bytes, which vcvtph2ps takes from memory: no extract).
FOLIO_INLINE_F16X16 __m512 f16x16_widen_half(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// A pair vector (dword i: row i's pair) widened and split, lanes (row,
// element of the pair): w4[0] wh of rows 0-7, w4[1] their wl, w4[2] and
// w4[3] the same for rows 8-15.
FOLIO_INLINE_F16X16 void f16x16_split_pair(const uint8_t* v, __m512* w4) {
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 lo = f16x16_widen_half(v);
  const __m512 hi = f16x16_widen_half(v + 32);
  const __m512 lo_h = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(lo), top));
  const __m512 hi_h = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(hi), top));
  w4[0] = lo_h;
  w4[1] = _mm512_sub_ps(lo, lo_h);
  w4[2] = hi_h;
  w4[3] = _mm512_sub_ps(hi, hi_h);
}

// The pair (x[0], x[1]) in every 64-bit lane.
FOLIO_INLINE_F16X16 __m512 f16x16_pair(const float* x) {
  double d;
  std::memcpy(&d, x, 8);
  return _mm512_castpd_ps(_mm512_set1_pd(d));
}

// c + (E + O) in both lanes of each row (lane 2i holds E, 2i + 1 O).
FOLIO_INLINE_F16X16 __m512 f16x16_add_pairs(__m512 c, __m512 p) {
  return _mm512_add_ps(c, _mm512_add_ps(p, _mm512_permute_ps(p, 0xb1)));
}

// Denormal lanes -> zero of their sign (the model's last flush).
FOLIO_INLINE_F16X16 __m512 f16x16_flush(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __mmask16 tiny = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
  return _mm512_castsi512_ps(
      _mm512_mask_and_epi32(u, tiny, u, _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}

// Activation row (kBf16Split) -> f32 planes ah[kpad], al[kpad].
FOLIO_TARGET_AVX512 void f16x16_widen_act(const uint16_t* x, int64_t kpad, float* planes) {
  for (int64_t i = 0; i < 2 * kpad; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_store_ps(planes + i,
                    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

// NP panels (pb bytes apart; the last one's rows [0, rows_last)) x C
// activation rows (planes + 2 c kpad: ah, then al, kpad each) into out
// (column c at out + c * os, panel i's rows from 16 i): each pair vector
// split once, then the six fused chains of every column. Panels are
// stepped together (NP > 1, one activation row: decode) so that NP weight
// streams are in flight and NP x 6 chains interleave; a single stream per
// thread left the memory idle and one panel's six chains wait on the FMA
// latency.
template <int NP, int C>
FOLIO_TARGET_AVX512 void f16x16_rows_panels(const uint8_t* panels, size_t pb, int64_t steps,
                                            const float* planes, int64_t kpad, int rows_last,
                                            float* out, size_t os) {
  __m512 acc[NP][C][2];
  for (int i = 0; i < NP; ++i)
    for (int c = 0; c < C; ++c) acc[i][c][0] = acc[i][c][1] = _mm512_setzero_ps();
  for (int64_t s = 0; s < steps; ++s) {
    __m512 p1[NP][C], p2[NP][C], p3[NP][C], q1[NP][C], q2[NP][C], q3[NP][C];
    for (int i = 0; i < NP; ++i) {
      for (int c = 0; c < C; ++c) {
        p1[i][c] = p2[i][c] = p3[i][c] = q1[i][c] = q2[i][c] = q3[i][c] = _mm512_setzero_ps();
      }
    }
    for (int q = 0; q < kRows; ++q) {
      __m512 a[C], l[C];
      for (int c = 0; c < C; ++c) {
        const float* ah = planes + 2 * c * kpad + s * kStep + 2 * q;
        a[c] = f16x16_pair(ah);
        l[c] = f16x16_pair(ah + kpad);
      }
      for (int i = 0; i < NP; ++i) {
        const uint8_t* p = panels + i * pb + s * kStepBytes;
        _mm_prefetch(reinterpret_cast<const char*>(p) + kPrefetchBytes + 64 * q, _MM_HINT_T0);
        __m512 w4[4];
        f16x16_split_pair(p + 64 * q, w4);
        for (int c = 0; c < C; ++c) {
          p1[i][c] = _mm512_fmadd_ps(a[c], w4[0], p1[i][c]);  // ah wh
          p2[i][c] = _mm512_fmadd_ps(l[c], w4[0], p2[i][c]);  // al wh
          p3[i][c] = _mm512_fmadd_ps(a[c], w4[1], p3[i][c]);  // ah wl
          q1[i][c] = _mm512_fmadd_ps(a[c], w4[2], q1[i][c]);
          q2[i][c] = _mm512_fmadd_ps(l[c], w4[2], q2[i][c]);
          q3[i][c] = _mm512_fmadd_ps(a[c], w4[3], q3[i][c]);
        }
      }
    }
    for (int i = 0; i < NP; ++i) {
      for (int c = 0; c < C; ++c) {
        acc[i][c][0] = f16x16_add_pairs(
            f16x16_add_pairs(f16x16_add_pairs(acc[i][c][0], p1[i][c]), p2[i][c]), p3[i][c]);
        acc[i][c][1] = f16x16_add_pairs(
            f16x16_add_pairs(f16x16_add_pairs(acc[i][c][1], q1[i][c]), q2[i][c]), q3[i][c]);
      }
    }
  }
  alignas(64) static constexpr int32_t kEvenLanes[16] = {0,  2,  4,  6,  8,  10, 12, 14,
                                                         16, 18, 20, 22, 24, 26, 28, 30};
  const __m512i even = _mm512_load_si512(kEvenLanes);
  for (int c = 0; c < C; ++c) {
    auto* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os);
    for (int i = 0; i < NP; ++i) {
      const __m512 v = _mm512_permutex2var_ps(acc[i][c][0], even, acc[i][c][1]);
      const int rows = i == NP - 1 ? rows_last : kRows;
      _mm512_mask_storeu_ps(o + kRows * i, static_cast<__mmask16>((1u << rows) - 1),
                            f16x16_flush(v));
    }
  }
}

// Without scratch memory: the model on the unpacked rows (the same bits).
void f16x16_model(int64_t k, const uint8_t* panels, size_t panel_bytes, int np, int nr_last,
                  const uint8_t* x, size_t xs, int nc, float* out, size_t os) {
  const int64_t kpad = padded(k);
  std::vector<uint16_t> w(static_cast<size_t>(k));
  for (int c = 0; c < nc; ++c) {
    // dot_model's steps (amx_f16::step_model) on the row's stored parts
    // (ah, al: the driver's split, split_activation's).
    const auto* xr = reinterpret_cast<const uint16_t*>(x + c * xs);
    float* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os);
    for (int i = 0; i < np; ++i) {
      for (int r = 0; r < (i == np - 1 ? nr_last : kRows); ++r) {
        quant::unpack_row(DType::F16_X16, panels + i * panel_bytes, k, r, w.data());
        float acc = 0.0f;
        for (int64_t i0 = 0; i0 < k; i0 += kStep)
          acc = amx_f16::step_model(acc, w.data() + i0, xr + i0, xr + kpad + i0,
                                    std::min<int64_t>(kStep, k - i0));
        o[kRows * i + r] = acc;
      }
    }
  }
}

// np consecutive panels x nc activation rows on the rows kernel (two at a
// time, then one).
FOLIO_TARGET_AVX512 void f16x16_rows_decode(int64_t k, const void* panels, size_t panel_bytes,
                                            int np, int nr_last, const void* x, size_t x_stride,
                                            int nc, float* out, size_t out_stride) {
  const int64_t kpad = padded(k), steps = kpad / kStep;
  const auto* pp = static_cast<const uint8_t*>(panels);
  const auto* xp = static_cast<const uint8_t*>(x);
  auto* planes = static_cast<float*>(f16x16_scratch[0].get(static_cast<size_t>(4 * kpad) * 4));
  if (planes == nullptr) {
    f16x16_model(k, pp, panel_bytes, np, nr_last, xp, x_stride, nc, out, out_stride);
    return;
  }
  const unsigned saved = _mm_getcsr();
  for (int c0 = 0; c0 < nc; c0 += 2) {
    const int cn = std::min(2, nc - c0);
    for (int c = 0; c < cn; ++c) {
      f16x16_widen_act(reinterpret_cast<const uint16_t*>(xp + (c0 + c) * x_stride), kpad,
                       planes + 2 * c * kpad);
    }
    _mm_setcsr((saved & ~kMxcsrFtzRound) | kMxcsrDaz);
    float* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c0 * out_stride);
    const auto* pc = pp;
    int left = np;  // panels to go; the last one has nr_last rows
    if (cn == 1) {  // decode: four (then two) panels at once
      for (; left >= 4; left -= 4, pc += 4 * panel_bytes, o += 4 * kRows) {
        f16x16_rows_panels<4, 1>(pc, panel_bytes, steps, planes, kpad, left == 4 ? nr_last : kRows,
                                 o, out_stride);
      }
      for (; left >= 2; left -= 2, pc += 2 * panel_bytes, o += 2 * kRows) {
        f16x16_rows_panels<2, 1>(pc, panel_bytes, steps, planes, kpad, left == 2 ? nr_last : kRows,
                                 o, out_stride);
      }
    }
    for (; left >= 1; --left, pc += panel_bytes, o += kRows) {
      const int rows = left == 1 ? nr_last : kRows;
      if (cn == 2) {
        f16x16_rows_panels<1, 2>(pc, panel_bytes, steps, planes, kpad, rows, o, out_stride);
      } else {
        f16x16_rows_panels<1, 1>(pc, panel_bytes, steps, planes, kpad, rows, o, out_stride);
      }
    }
    _mm_setcsr(saved);
  }
}

// --- Three rows and more: the tiles -----------------------------------------
//
// Tiles of f16x16_groups: tmm0 / tmm1 ah / al of group 0, tmm6 / tmm7 of
// group 1 (A: `rows` activation rows x 32 BF16), tmm2 / tmm3 wh / wl (B: 16
// pairs x the 16 weight rows), tmm4 / tmm5 C of groups 0 / 1 (`rows` x 16
// f32). f16x16_ring's: tmm6 / tmm7 are the second panel's wh / wl instead.
constexpr unsigned kGroupBTiles = 0b00001100;  // bit t: tmm t holds B (16 rows)
constexpr unsigned kRingBTiles = 0b11001100;

FOLIO_TARGET_AMX void f16x16_configure(int rows, unsigned b_tiles) {
  amx::TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = static_cast<uint8_t>((b_tiles >> t) & 1 ? kRows : rows);
  }
  amx::memory_barrier();
  _tile_loadconfig(&cfg);
  amx::memory_barrier();
}

// Steps [s0, s0 + n) of a panel split into B tiles: step s0 + j's wh tile
// at dst + 2j KB, its wl tile 1 KB after (row q: pair q of the 16 rows, in
// the BF16 words of the widened values).
FOLIO_TARGET_AMX void f16x16_split_block(const uint8_t* panel, int64_t s0, int64_t n,
                                         uint8_t* dst) {
  alignas(64) static constexpr uint16_t kHighWords[32] = {
      1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
      33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i idx = _mm512_load_si512(kHighWords);
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* src = panel + (s0 + j) * kStepBytes;
    uint8_t* hi = dst + 2 * j * kTileBytes;
    for (int q = 0; q < kRows; ++q) {
      const __m512 f0 = f16x16_widen_half(src + 64 * q);
      const __m512 f1 = f16x16_widen_half(src + 64 * q + 32);
      const __m512 l0 =
          _mm512_sub_ps(f0, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f0), top)));
      const __m512 l1 =
          _mm512_sub_ps(f1, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f1), top)));
      _mm512_store_si512(hi + 64 * q, _mm512_permutex2var_epi16(_mm512_castps_si512(f0), idx,
                                                                _mm512_castps_si512(f1)));
      _mm512_store_si512(
          hi + kTileBytes + 64 * q,
          _mm512_permutex2var_epi16(_mm512_castps_si512(l0), idx, _mm512_castps_si512(l1)));
    }
  }
}

// The C tile of `rows` activation rows from c0: in the output in place
// when the panel has 16 rows, else through `edge` (16 x 16 f32).
struct F16x16C {
  float* at;      // out(c0, 0)
  size_t stride;  // bytes between activation rows
  int rows, nr;   // activation rows, weight rows in range
};

FOLIO_INLINE_F16X16 void f16x16_edge_in(const F16x16C& c, float* edge) {
  std::memset(edge, 0, kRows * kRows * 4);
  for (int i = 0; i < c.rows; ++i) {
    std::memcpy(edge + kRows * i, reinterpret_cast<const uint8_t*>(c.at) + i * c.stride,
                static_cast<size_t>(c.nr) * 4);
  }
}

FOLIO_INLINE_F16X16 void f16x16_edge_out(const F16x16C& c, const float* edge) {
  for (int i = 0; i < c.rows; ++i) {
    std::memcpy(reinterpret_cast<uint8_t*>(c.at) + i * c.stride, edge + kRows * i,
                static_cast<size_t>(c.nr) * 4);
  }
}

// The tile intrinsics paste their tile numbers into the assembly text:
// literal numbers only, hence macros.
#define FOLIO_F16X16_C_LOAD(T, c, edge, first) \
  do {                                         \
    if (first) {                               \
      _tile_zero(T);                           \
    } else if ((c).nr == kRows) {              \
      _tile_loadd(T, (c).at, (c).stride);      \
    } else {                                   \
      f16x16_edge_in(c, edge);                 \
      amx::memory_barrier();                   \
      _tile_loadd(T, edge, 64);                \
    }                                          \
  } while (0)

#define FOLIO_F16X16_C_STORE(T, c, edge)   \
  do {                                     \
    if ((c).nr == kRows) {                 \
      _tile_stored(T, (c).at, (c).stride); \
    } else {                               \
      _tile_stored(T, edge, 64);           \
      amx::memory_barrier();               \
      f16x16_edge_out(c, edge);            \
    }                                      \
  } while (0)

// G (1 or 2) groups of the configured rows from activation row c0 over
// steps [s0, s0 + n) of the B tiles at b (f16x16_split_block's layout):
// per step C = dp(C, ah, wh), dp(C, al, wh), dp(C, ah, wl), the model's
// order.
template <int G>
FOLIO_TARGET_AMX void f16x16_groups(const uint8_t* x, size_t xs, size_t plane, int rows, int64_t c0,
                                    int64_t s0, int64_t n, const uint8_t* b, float* out, size_t os,
                                    int nr, bool first) {
  alignas(64) float edge[2][kRows * kRows];
  const F16x16C c_0{reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c0 * os), os, rows,
                    nr};
  const F16x16C c_1{reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + (c0 + 16) * os), os,
                    rows, nr};
  FOLIO_F16X16_C_LOAD(4, c_0, edge[0], first);
  if constexpr (G == 2) FOLIO_F16X16_C_LOAD(5, c_1, edge[1], first);
  const uint8_t* a0 = x + c0 * xs + s0 * 64;
  const uint8_t* a1 = a0 + 16 * xs;
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* bt = b + 2 * j * kTileBytes;
    _tile_loadd(2, bt, 64);
    _tile_loadd(3, bt + kTileBytes, 64);
    _tile_loadd(0, a0 + 64 * j, xs);
    _tile_loadd(1, a0 + plane + 64 * j, xs);
    _tile_dpbf16ps(4, 0, 2);
    if constexpr (G == 2) {
      _tile_loadd(6, a1 + 64 * j, xs);
      _tile_loadd(7, a1 + plane + 64 * j, xs);
      _tile_dpbf16ps(5, 6, 2);
    }
    _tile_dpbf16ps(4, 1, 2);
    if constexpr (G == 2) _tile_dpbf16ps(5, 7, 2);
    _tile_dpbf16ps(4, 0, 3);
    if constexpr (G == 2) _tile_dpbf16ps(5, 6, 3);
  }
  FOLIO_F16X16_C_STORE(4, c_0, edge[0]);
  if constexpr (G == 2) FOLIO_F16X16_C_STORE(5, c_1, edge[1]);
}

// NP (1 or 2) consecutive panels (pb bytes apart; the last one's rows
// [0, nr_last)) x one group of `rows` (<= 16) activation rows over the
// whole of K, on the ring's tiles (kRingBTiles). Each panel is split step by
// step into a ring of kRingSteps steps that stays in L1, kRingSteps - 1
// steps ahead of its tile products: the split (vector work) runs while the
// products of the steps before it are in the tile unit, and no tile load
// reads bytes still in the store buffer. The panels' C tiles are two
// independent chains of products. Each C is zeroed once and stored once.
constexpr int64_t kRingSteps = 4;

template <int NP>
FOLIO_TARGET_AMX void f16x16_ring(const uint8_t* panels, size_t pb, int64_t steps, const uint8_t* x,
                                  size_t xs, size_t plane, int rows, float* out, size_t os,
                                  int nr_last) {
  static_assert(NP == 1 || NP == 2);
  constexpr size_t kSlot = 2 * kTileBytes;  // one step of one panel: wh, wl
  alignas(64) uint8_t ring[NP][kRingSteps * kSlot];
  alignas(64) float edge[NP][kRows * kRows];  // C of a panel of fewer rows
  constexpr int64_t kLead = kRingSteps - 1;
  auto slot = [&](int i, int64_t s) { return ring[i] + (s % kRingSteps) * kSlot; };
  for (int64_t s = 0; s < kLead && s < steps; ++s) {
    for (int i = 0; i < NP; ++i) f16x16_split_block(panels + i * pb, s, 1, slot(i, s));
  }
  const F16x16C c_0{out, os, rows, NP == 1 ? nr_last : kRows};
  const F16x16C c_1{out + kRows, os, rows, nr_last};
  amx::memory_barrier();
  _tile_zero(4);
  if constexpr (NP == 2) _tile_zero(5);
  for (int64_t s = 0; s < steps; ++s) {
    if (s + kLead < steps) {
      for (int i = 0; i < NP; ++i) {
        f16x16_split_block(panels + i * pb, s + kLead, 1, slot(i, s + kLead));
      }
      amx::memory_barrier();
    }
    _tile_loadd(0, x + 64 * s, xs);
    _tile_loadd(1, x + plane + 64 * s, xs);
    _tile_loadd(2, slot(0, s), 64);
    _tile_loadd(3, slot(0, s) + kTileBytes, 64);
    if constexpr (NP == 2) {
      _tile_loadd(6, slot(1, s), 64);
      _tile_loadd(7, slot(1, s) + kTileBytes, 64);
    }
    _tile_dpbf16ps(4, 0, 2);
    if constexpr (NP == 2) _tile_dpbf16ps(5, 0, 6);
    _tile_dpbf16ps(4, 1, 2);
    if constexpr (NP == 2) _tile_dpbf16ps(5, 1, 6);
    _tile_dpbf16ps(4, 0, 3);
    if constexpr (NP == 2) _tile_dpbf16ps(5, 0, 7);
    amx::memory_barrier();
  }
  FOLIO_F16X16_C_STORE(4, c_0, edge[0]);
  if constexpr (NP == 2) FOLIO_F16X16_C_STORE(5, c_1, edge[1]);
}

// MultiPanelFn on the tiles: np consecutive panels x nc (kF16X16TileRows to
// 16) activation rows, two panels at a time.
FOLIO_TARGET_AMX void f16x16_ring_panels(int64_t k, const uint8_t* panels, size_t pb, int np,
                                         int nr_last, const uint8_t* x, size_t xs, int nc,
                                         float* out, size_t os) {
  const int64_t kpad = padded(k), steps = kpad / kStep;
  const size_t plane = static_cast<size_t>(kpad) * 2;  // ah -> al
  f16x16_configure(nc, kRingBTiles);
  int i = 0;
  for (; i + 2 <= np; i += 2) {
    f16x16_ring<2>(panels + i * pb, pb, steps, x, xs, plane, nc, out + i * kRows, os,
                   i + 2 == np ? nr_last : kRows);
  }
  if (i < np)
    f16x16_ring<1>(panels + i * pb, pb, steps, x, xs, plane, nc, out + i * kRows, os, nr_last);
  _tile_release();
}

// MultiPanelFn (up to 16 activation rows): fewer than kF16X16TileRows rows
// on the rows kernel, the others on the tiles.
void f16x16_decode(int64_t k, const void* panels, size_t panel_bytes, int np, int nr_last,
                   const void* x, size_t x_stride, int nc, float* out, size_t out_stride) {
  if (nc < kF16X16TileRows) {
    f16x16_rows_decode(k, panels, panel_bytes, np, nr_last, x, x_stride, nc, out, out_stride);
  } else {
    f16x16_ring_panels(k, static_cast<const uint8_t*>(panels), panel_bytes, np, nr_last,
                       static_cast<const uint8_t*>(x), x_stride, nc, out, out_stride);
  }
}

// PanelFn: one panel x up to 16 activation rows (a panel call the driver
// does not send to f16x16_decode).
void f16x16_small(int64_t k, const void* panel, const void* x, size_t x_stride, int nc, int nr,
                  float* out, size_t out_stride) {
  f16x16_decode(k, panel, quant::packed_panel_bytes(DType::F16_X16, k), 1, nr, x, x_stride, nc, out,
                out_stride);
}

// PanelFn on the tiles: one panel x nc (>= 1) activation rows.
FOLIO_TARGET_AMX void f16x16_tiles(int64_t k, const void* panel, const void* x, size_t x_stride,
                                   int nc, int nr, float* out, size_t out_stride) {
  if (nc <= 0 || nr <= 0) return;
  const auto* pp = static_cast<const uint8_t*>(panel);
  const auto* xp = static_cast<const uint8_t*>(x);
  const int64_t kpad = padded(k), steps = kpad / kStep;
  if (steps == 0) {
    for (int c = 0; c < nc; ++c) {
      std::memset(reinterpret_cast<uint8_t*>(out) + c * out_stride, 0, static_cast<size_t>(nr) * 4);
    }
    return;
  }
  const size_t plane = static_cast<size_t>(kpad) * 2;  // ah -> al
  auto* b = static_cast<uint8_t*>(
      f16x16_scratch[1].get(static_cast<size_t>(2 * std::min(kBlockSteps, steps)) * kTileBytes));
  if (b == nullptr) {
    f16x16_model(k, pp, 0, 1, nr, xp, x_stride, nc, out, out_stride);
    return;
  }
  const int64_t full = nc / 16 * 16;                   // rows in groups of 16
  const int rest = nc - static_cast<int>(full);
  int configured = 0;
  bool rest_first = false;  // alternate the order: one reconfiguration per block
  for (int64_t s0 = 0; s0 < steps; s0 += kBlockSteps) {
    const int64_t n = std::min(kBlockSteps, steps - s0);
    f16x16_split_block(pp, s0, n, b);
    amx::memory_barrier();
    const bool first = s0 == 0;
    for (int part = 0; part < 2; ++part) {
      if ((part == 0) != rest_first) {
        if (full == 0) continue;
        if (configured != 16) f16x16_configure(configured = 16, kGroupBTiles);
        int64_t c0 = 0;
        for (; c0 + 32 <= full; c0 += 32) {
          f16x16_groups<2>(xp, x_stride, plane, 16, c0, s0, n, b, out, out_stride, nr, first);
        }
        if (c0 < full) {
          f16x16_groups<1>(xp, x_stride, plane, 16, c0, s0, n, b, out, out_stride, nr, first);
        }
      } else {
        if (rest == 0) continue;
        if (configured != rest) f16x16_configure(configured = rest, kGroupBTiles);
        f16x16_groups<1>(xp, x_stride, plane, rest, full, s0, n, b, out, out_stride, nr, first);
      }
    }
    rest_first = !rest_first;
    amx::memory_barrier();
  }
  _tile_release();
}

PackedSpec f16x16_spec() {
  PackedSpec spec;
  spec.act = ActFormat::kBf16Split;
  spec.convert = &f16x16_split_act;
  spec.panel = &f16x16_tiles;
  spec.small_panel = &f16x16_small;
  spec.decode = &f16x16_decode;
  spec.decode_rows = kRows;
  spec.min_panel_rows = kRows + 1;
  // Rows of 4 bytes per element: blocks of 2 MB keep 128 rows of K = 4096
  // per panel call, over which each panel's split is spread.
  spec.act_block_bytes = 2 << 20;
  return spec;
}

}  // namespace

Status mul_mat_f16x16_amx(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat(op, ctx, f16x16_spec());
}

Status mul_mat_id_f16x16_amx(const Op& op, const KernelContext& ctx) {
  return packed_mul_mat_id(op, ctx, f16x16_spec());
}

}  // namespace folio::cpu
