// AMX mul_mat / mul_mat_id for BF16 and F16 weights (plain rows, the file's
// layout) x F32 activations, through TDPBF16PS tiles.
//
// Accuracy contract, BF16 weights: the activations are rounded to BF16
// (vcvtneps2bf16: nearest even), as llama.cpp's CPU backend rounds them for
// BF16 weights (its vec_dot_type), so results differ from the AVX-512
// kernel's (f32 activations) by that rounding: NMSE about 2e-6 against the
// reference on uniform data, inside the BF16 mul_mat tolerance. Each output
// is exactly amx/bf16_tile_model.h's dot_model of its weight row and
// activation row (one TDPBF16PS per 32 elements of K, ascending, from
// zero).
//
// F16 weights: each weight splits exactly into BF16 parts wh + wl and each
// activation into ah + al (amx/f16_tile_model.h), and three tile products
// per 32 elements of K (ah wh, al wh, ah wl, into one accumulator) give
// NMSE near 1e-11 against the reference: more accurate than llama.cpp's
// F16 path, which rounds the activations to F16. Each output is exactly
// amx/f16_tile_model.h's dot_model. The weights are split as the tiles
// need them (per K block of a strip, or per chunk of steps of a group of
// rows), never held split.
//
// Either way the output does not depend on M, the batch composition, the
// blocking or the thread count, so the tier can take every mul_mat of these
// weights, decode included, and a sequence's logits do not depend on the
// batch it is in. register_amx.cc routes BF16 here; F16 stays on the
// AVX-512 kernel, faster in decode (docs/DESIGN.md, the amx tier), also
// than mul_mat_f16_amx_combined below (one activation row on the AVX-512
// rows kernel of amx/mul_mat_f16_rows.cc, which gives the tiles' bits).
//
// A panel call (a thread's rows, all activation rows of a batch) with up to
// 32 activation rows (decode, small batches, mul_mat_id's tiles) takes the
// weight rows as the A operand (BF16: read in place; F16: split into a ring
// of tiles per chunk of kChunk steps) and the activations as B (see "Few
// activation rows" below). With more, it runs over K in blocks of kKBlock
// elements:
//   the block of every activation row is rounded to BF16 (F16: split into
//     two planes, ah and al) into a scratch of rows padded to a multiple of
//     16 (zero rows) and kKBlock columns: the A tiles (16 rows x 32 elements
//     each) are read from it in place;
//   for each strip of 32 weight rows, the block is repacked into B tiles
//     (per 32 elements of K, two tiles of 16 pairs x 16 rows: the 16 x 16
//     dword transpose of the rows' 64-byte pieces, zero rows past the end;
//     F16: two more for the wl plane);
//   each pair of A groups (32 activation rows) meets the strip's B tiles in
//     four C tiles (16 activation rows x 16 weight rows, f32) loaded from
//     the output (zeroed at the first block) and stored back.
// A C tile whose 16 x 16 outputs are all in range is loaded and stored in
// place (the output's row stride is the tile's); an edge tile goes through
// a 16 x 16 scratch. f32 values round-trip through memory unchanged, so the
// K blocking does not change a bit.
//
// Tiles: tmm0-1 A, tmm2-3 B, tmm4-7 C (all 16 rows x 64 bytes). Each panel
// call configures them (ldtilecfg) and releases them at its end; without
// scratch memory it computes the model itself (the same bits, slowly).
#include <algorithm>
#include <cstring>

#include "backend/cpu/amx/bf16_round.h"
#include "backend/cpu/amx/bf16_tile_model.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/amx/kernels.h"
#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/avx512/transpose.h"
#include "backend/cpu/drivers/grow_buffer.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "core/target.h"

namespace folio::cpu {

namespace {

#define FOLIO_INLINE_BF16_AMX FOLIO_TARGET_AMX __attribute__((always_inline)) static inline

using amx::kGroup;
using amx_bf16::kStep;

// The weight format: BF16 (one tile product per step) or F16 (split in two
// planes, three tile products per step).
enum class WFmt { kBf16, kF16 };

// BF16 planes per operand: hi (and lo for F16).
template <WFmt F>
constexpr int kPlanes = F == WFmt::kF16 ? 2 : 1;

constexpr int64_t kKBlock = 512;  // K elements per block
constexpr int kStrip = 32;        // weight rows per strip: two B tiles
constexpr size_t kBTileBytes = 1024;
constexpr int64_t kSmallRows = 32;  // up to here: the weights as A (see below)
constexpr int64_t kChunk = 8;       // F16, few rows: steps split per chunk

thread_local GrowBuffer bf16_amx_scratch[2];  // [0] activations, [1] B tiles

FOLIO_TARGET_AMX void bf16_configure_tiles() {
  amx::TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = kGroup;
  }
  amx::memory_barrier();
  _tile_loadconfig(&cfg);
  amx::memory_barrier();
}

using amx_bf16::act_split16;
using amx_bf16::bf16_round16;

// 32 F16 weights (the first n of p, zeros past them) -> their exact BF16
// parts (amx_f16::split_weight): wh their f32 values truncated, wl the rest
// (f - wh), both gathered from the high words of the f32 lanes by one word
// permutation each. The fewest vector operations per weight: decode on the
// tiles splits every weight on every call.
FOLIO_INLINE_BF16_AMX void weight_split32(const uint16_t* p, int64_t n, __m512i& hi,
                                          __m512i& lo) {
  alignas(64) static constexpr uint16_t kHighWords[32] = {
      1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
      33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
  const __m512i idx = _mm512_load_si512(kHighWords);
  __m512 f0, f1;
  if (n >= 32) {
    f0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    f1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)));
  } else {
    const __m512i raw =
        _mm512_maskz_loadu_epi16(static_cast<__mmask32>((1u << std::max<int64_t>(n, 0)) - 1), p);
    f0 = _mm512_cvtph_ps(_mm512_castsi512_si256(raw));
    f1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(raw, 1));
  }
  const __m512i top = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 l0 = _mm512_sub_ps(f0, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f0), top)));
  const __m512 l1 = _mm512_sub_ps(f1, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f1), top)));
  hi = _mm512_permutex2var_epi16(_mm512_castps_si512(f0), idx, _mm512_castps_si512(f1));
  lo = _mm512_permutex2var_epi16(_mm512_castps_si512(l0), idx, _mm512_castps_si512(l1));
}

FOLIO_INLINE_BF16_AMX __mmask32 first_n32(int64_t n) {
  return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((1u << std::max<int64_t>(n, 0)) - 1);
}

// Activation rows [0, nc) x elements [k0, k0 + kb) to BF16 at dst (pitch
// `pitch` bytes, kb rounded up to kStep with zeros), rows [nc, rows) zero;
// F16: the lo parts in a second plane at dst + plane bytes.
template <WFmt F>
FOLIO_TARGET_AMX void bf16_convert_block(const unsigned char* x, size_t xs, int64_t nc,
                                         int64_t rows, int64_t k0, int64_t kb, uint16_t* dst,
                                         size_t pitch, size_t plane) {
  const int64_t kbp = (kb + kStep - 1) / kStep * kStep;
  for (int64_t c = 0; c < rows; ++c) {
    auto* d = reinterpret_cast<uint16_t*>(reinterpret_cast<unsigned char*>(dst) + c * pitch);
    auto* dl = reinterpret_cast<uint16_t*>(reinterpret_cast<unsigned char*>(d) + plane);
    if (c >= nc) {
      std::memset(d, 0, static_cast<size_t>(kbp) * 2);
      if constexpr (F == WFmt::kF16) std::memset(dl, 0, static_cast<size_t>(kbp) * 2);
      continue;
    }
    const float* s = reinterpret_cast<const float*>(x + c * xs) + k0;
    for (int64_t i = 0; i < kbp; i += 16) {
      const int64_t n = std::clamp<int64_t>(kb - i, 0, 16);
      const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
      const __m512 v = _mm512_maskz_loadu_ps(m, s + i);
      if constexpr (F == WFmt::kF16) {
        __m256i hi, lo;
        act_split16(v, hi, lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), hi);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dl + i), lo);
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), bf16_round16(v));
      }
    }
  }
}

// Weight rows [0, rr) (rr <= 32) x elements [k0, k0 + kb) as B tiles: per
// step s of 32 elements, plane p (BF16: 0; F16: 0 wh, 1 wl), tile t (rows
// 16t..16t+15) at dst + (2 P s + 2p + t) KB (P planes), row q = the pairs
// (2q, 2q + 1) of its 16 weight rows; rows past rr and elements past kb
// are zero.
template <WFmt F>
FOLIO_TARGET_AMX void bf16_repack_strip(const unsigned char* w, size_t ws, int rr, int64_t k0,
                                        int64_t kb, uint8_t* dst) {
  constexpr int P = kPlanes<F>;
  const int64_t steps = (kb + kStep - 1) / kStep;
  for (int t = 0; t < 2; ++t) {
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t e = k0 + s * kStep;
      const __mmask32 m = first_n32(k0 + kb - e);
      __m512 r[P][16];
      for (int i = 0; i < 16; ++i) {
        const int row = 16 * t + i;
        const auto* src = reinterpret_cast<const uint16_t*>(w + row * ws) + e;
        if (row >= rr) {
          for (int p = 0; p < P; ++p) r[p][i] = _mm512_setzero_ps();
        } else if constexpr (F == WFmt::kF16) {
          __m512i hi, lo;
          weight_split32(src, k0 + kb - e, hi, lo);
          r[0][i] = _mm512_castsi512_ps(hi);
          r[P - 1][i] = _mm512_castsi512_ps(lo);
        } else {
          r[0][i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m, src));
        }
      }
      for (int p = 0; p < P; ++p) {
        avx512::transpose16(r[p]);  // r[p][q]: pair q of the 16 rows
        uint8_t* o = dst + (2 * P * s + 2 * p + t) * kBTileBytes;
        for (int q = 0; q < 16; ++q) _mm512_store_ps(reinterpret_cast<float*>(o + 64 * q), r[p][q]);
      }
    }
  }
}

// The C tile of activation rows [c0, c0 + 16) x weight rows [r0, r0 + 16):
// in place when all are in range, else through `edge` (16 x 16 f32).
struct CTile {
  float* at;       // out(r0, c0)
  size_t stride;   // bytes between its rows
  int rows, cols;  // in range: activation rows, weight rows
};

FOLIO_INLINE_BF16_AMX CTile c_tile(float* out, size_t os, int64_t nr, int64_t nc, int64_t r0,
                                   int64_t c0) {
  return {reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c0 * os) + r0, os,
          static_cast<int>(std::min<int64_t>(kGroup, nc - c0)),
          static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(kGroup, nr - r0)))};
}

FOLIO_INLINE_BF16_AMX bool full(const CTile& c) {
  return c.rows == kGroup && c.cols == kGroup;
}

// Copies an edge tile's in-range outputs into edge (zeros elsewhere).
FOLIO_INLINE_BF16_AMX void edge_in(const CTile& c, float* edge) {
  std::memset(edge, 0, kGroup * kGroup * 4);
  for (int i = 0; i < c.rows; ++i) {
    std::memcpy(edge + kGroup * i, reinterpret_cast<const unsigned char*>(c.at) + i * c.stride,
                c.cols * 4);
  }
}

FOLIO_INLINE_BF16_AMX void edge_out(const CTile& c, const float* edge) {
  for (int i = 0; i < c.rows; ++i) {
    std::memcpy(reinterpret_cast<unsigned char*>(c.at) + i * c.stride, edge + kGroup * i,
                c.cols * 4);
  }
}

// The tile intrinsics paste their tile numbers into the assembly text:
// literal numbers only, hence one macro per C tile.
#define FOLIO_BF16_C_LOAD(T, c, edge, first) \
  do {                                       \
    if (first) {                             \
      _tile_zero(T);                         \
    } else if (full(c)) {                    \
      _tile_loadd(T, (c).at, (c).stride);    \
    } else {                                 \
      edge_in(c, edge);                      \
      amx::memory_barrier();                 \
      _tile_loadd(T, edge, 64);              \
    }                                        \
  } while (0)

#define FOLIO_BF16_C_STORE(T, c, edge)     \
  do {                                     \
    if (full(c)) {                         \
      _tile_stored(T, (c).at, (c).stride); \
    } else if ((c).cols > 0) {             \
      _tile_stored(T, edge, 64);           \
      amx::memory_barrier();               \
      edge_out(c, edge);                   \
    }                                      \
  } while (0)

// One step of K on the strip's B tiles (bs: this step's tiles, see
// bf16_repack_strip): A tiles of G groups of 16 activation rows (ah: group
// 0's first row at this step, group 1 16 rows below; al: the F16 lo plane
// likewise), C(g, t) in tmm 4 + 2g + t.
template <int G, WFmt F>
FOLIO_INLINE_BF16_AMX void groups_step(const uint8_t* ah, const uint8_t* al, size_t pitch,
                                       const uint8_t* bs) {
  _tile_loadd(0, ah, pitch);
  _tile_loadd(2, bs, 64);
  _tile_loadd(3, bs + kBTileBytes, 64);
  _tile_dpbf16ps(4, 0, 2);
  _tile_dpbf16ps(5, 0, 3);
  if constexpr (G == 2) {
    _tile_loadd(1, ah + kGroup * pitch, pitch);
    _tile_dpbf16ps(6, 1, 2);
    _tile_dpbf16ps(7, 1, 3);
  }
  if constexpr (F == WFmt::kF16) {
    _tile_loadd(0, al, pitch);  // al x wh
    _tile_dpbf16ps(4, 0, 2);
    _tile_dpbf16ps(5, 0, 3);
    if constexpr (G == 2) {
      _tile_loadd(1, al + kGroup * pitch, pitch);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(7, 1, 3);
    }
    _tile_loadd(0, ah, pitch);  // ah x wl
    _tile_loadd(2, bs + 2 * kBTileBytes, 64);
    _tile_loadd(3, bs + 3 * kBTileBytes, 64);
    _tile_dpbf16ps(4, 0, 2);
    _tile_dpbf16ps(5, 0, 3);
    if constexpr (G == 2) {
      _tile_loadd(1, ah + kGroup * pitch, pitch);
      _tile_dpbf16ps(6, 1, 2);
      _tile_dpbf16ps(7, 1, 3);
    }
  }
}

// Two groups of 16 activation rows (a: their first row in the block
// scratch, the F16 lo plane `plane` bytes after; G = 1: one group) x the
// strip's B tiles over `steps` steps.
template <int G, WFmt F>
FOLIO_TARGET_AMX void bf16_groups(const uint8_t* a, size_t pitch, size_t plane, const uint8_t* b,
                                  int64_t steps, float* out, size_t os, int64_t nr, int64_t nc,
                                  int64_t r0, int64_t c0, bool first) {
  alignas(64) float edge[4][kGroup * kGroup];
  const CTile c00 = c_tile(out, os, nr, nc, r0, c0);
  const CTile c01 = c_tile(out, os, nr, nc, r0 + kGroup, c0);
  FOLIO_BF16_C_LOAD(4, c00, edge[0], first);
  FOLIO_BF16_C_LOAD(5, c01, edge[1], first);
  CTile c10{}, c11{};
  if constexpr (G == 2) {
    c10 = c_tile(out, os, nr, nc, r0, c0 + kGroup);
    c11 = c_tile(out, os, nr, nc, r0 + kGroup, c0 + kGroup);
    FOLIO_BF16_C_LOAD(6, c10, edge[2], first);
    FOLIO_BF16_C_LOAD(7, c11, edge[3], first);
  }
  for (int64_t s = 0; s < steps; ++s) {
    groups_step<G, F>(a + s * 64, a + plane + s * 64, pitch,
                      b + 2 * kPlanes<F> * s * kBTileBytes);
  }
  FOLIO_BF16_C_STORE(4, c00, edge[0]);
  FOLIO_BF16_C_STORE(5, c01, edge[1]);
  if constexpr (G == 2) {
    FOLIO_BF16_C_STORE(6, c10, edge[2]);
    FOLIO_BF16_C_STORE(7, c11, edge[3]);
  }
}

// --- Few activation rows: the weights are the A operand ---------------------
//
// The models are symmetric in their operands (each product is exact), so
// the tiles may as well take 16 weight rows as A (BF16: read in place from
// the weight matrix with its row stride, no repack; F16: split per chunk
// of kChunk steps into a ring of wh and wl tiles) and up to 32 activation
// rows as B: the whole of K of each group of 16 is rounded (F16: split)
// and turned into VNNI pairs once per call (a 16 x 16 dword transpose per
// 32 elements). Each C tile (16 weight rows x 16 activation rows) then
// stays in its tile over all of K and is transposed into the output at the
// end.

// Activation rows [0, nc) (nc <= 16 * groups) over k as B tiles: step s,
// plane p (F16: 0 ah, 1 al), group g at dst + ((s P + p) groups + g) KB;
// zero rows past nc, zeros past k.
template <WFmt F>
FOLIO_TARGET_AMX void bf16_act_tiles(const unsigned char* x, size_t xs, int64_t nc, int groups,
                                     int64_t k, uint8_t* dst) {
  constexpr int P = kPlanes<F>;
  const int64_t steps = (k + kStep - 1) / kStep;
  for (int g = 0; g < groups; ++g) {
    for (int64_t s = 0; s < steps; ++s) {
      const int64_t e = s * kStep;
      const int64_t n0 = std::clamp<int64_t>(k - e, 0, 16),
                    n1 = std::clamp<int64_t>(k - e - 16, 0, 16);
      const __mmask16 m0 = static_cast<__mmask16>((1u << n0) - 1);
      const __mmask16 m1 = static_cast<__mmask16>((1u << n1) - 1);
      __m512 r[P][16];
      for (int i = 0; i < 16; ++i) {
        const int64_t c = 16 * g + i;
        if (c >= nc) {
          for (int p = 0; p < P; ++p) r[p][i] = _mm512_setzero_ps();
          continue;
        }
        const float* row = reinterpret_cast<const float*>(x + c * xs) + e;
        const __m512 v0 = _mm512_maskz_loadu_ps(m0, row), v1 = _mm512_maskz_loadu_ps(m1, row + 16);
        __m256i h0, h1, l0 = _mm256_setzero_si256(), l1 = _mm256_setzero_si256();
        if constexpr (F == WFmt::kF16) {
          act_split16(v0, h0, l0);
          act_split16(v1, h1, l1);
        } else {
          h0 = bf16_round16(v0);
          h1 = bf16_round16(v1);
        }
        r[0][i] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
        if constexpr (P == 2) {
          r[1][i] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(l0), l1, 1));
        }
      }
      for (int p = 0; p < P; ++p) {
        avx512::transpose16(r[p]);  // r[p][q]: pair q of the 16 activation rows
        uint8_t* o = dst + ((s * P + p) * groups + g) * kBTileBytes;
        for (int q = 0; q < 16; ++q) _mm512_store_ps(reinterpret_cast<float*>(o + 64 * q), r[p][q]);
      }
    }
  }
}

// 16 weight rows as A tiles: the k / 32 whole steps read at base + s * 64
// with `stride`, then (k % 32 != 0) one step from tail with tail_stride.
struct WeightRows {
  const uint8_t* base;
  size_t stride;
  const uint8_t* tail;
  size_t tail_stride;
};

// BF16 weight rows [r0, r0 + 16) of w (nr rows, k elements): in place where
// all 16 exist, the last partial step (k % 32) copied zero-padded into
// tail_buf (16 x 64 bytes); a partial group (rows past nr) copied whole,
// zero-padded to 16 rows and whole steps, into part_buf (16 x kpad bf16),
// its tail step read from there.
FOLIO_TARGET_AMX WeightRows bf16_weight_rows(const unsigned char* w, size_t ws, int64_t nr,
                                             int64_t r0, int64_t k, uint8_t* tail_buf,
                                             uint8_t* part_buf) {
  const int64_t full = k / kStep, rem = k % kStep;
  const int rows = static_cast<int>(std::min<int64_t>(16, nr - r0));
  if (rows == 16) {
    if (rem != 0) {
      std::memset(tail_buf, 0, 16 * 64);
      for (int i = 0; i < 16; ++i) {
        std::memcpy(tail_buf + 64 * i, w + (r0 + i) * ws + full * 64, static_cast<size_t>(rem) * 2);
      }
    }
    return {w + r0 * ws, ws, tail_buf, 64};
  }
  const int64_t kpad = (full + (rem != 0)) * kStep;
  std::memset(part_buf, 0, static_cast<size_t>(16 * kpad) * 2);
  for (int i = 0; i < rows; ++i) {
    std::memcpy(part_buf + i * kpad * 2, w + (r0 + i) * ws, static_cast<size_t>(k) * 2);
  }
  return {part_buf, static_cast<size_t>(kpad) * 2, part_buf + full * 64,
          static_cast<size_t>(kpad) * 2};
}

// F16 weight rows [r0, r0 + 16) of w (nr rows, k elements), steps
// [s0, s0 + n), split: step s0 + j's wh tile at dst + 2j KB, its wl tile at
// dst + (2j + 1) KB (16 rows x 64 bytes; zero rows past nr, zeros past k).
FOLIO_TARGET_AMX void f16_split_rows(const unsigned char* w, size_t ws, int64_t nr, int64_t r0,
                                     int64_t k, int64_t s0, int64_t n, uint8_t* dst) {
  for (int i = 0; i < 16; ++i) {
    const int64_t row = r0 + i;
    for (int64_t j = 0; j < n; ++j) {
      uint8_t* hi = dst + 2 * j * kBTileBytes + 64 * i;
      if (row >= nr) {
        _mm512_store_si512(hi, _mm512_setzero_si512());
        _mm512_store_si512(hi + kBTileBytes, _mm512_setzero_si512());
        continue;
      }
      const int64_t e = (s0 + j) * kStep;
      __m512i h, l;
      weight_split32(reinterpret_cast<const uint16_t*>(w + row * ws) + e, k - e, h, l);
      _mm512_store_si512(hi, h);
      _mm512_store_si512(hi + kBTileBytes, l);
    }
  }
}

// The C tile of weight rows [r0, r0 + 16) x activation rows [c0, c0 + 16),
// stored to cbuf (row i = weight row r0 + i), into out: the rows < nr and
// the activation rows < nc.
FOLIO_INLINE_BF16_AMX void bf16_c_out(float* cbuf, float* out, size_t os, int64_t nr, int64_t nc,
                                      int64_t r0, int64_t c0) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_load_ps(cbuf + 16 * i);
  avx512::transpose16(r);  // r[c]: activation row c0 + c, lanes the weight rows
  const int64_t nrow = std::min<int64_t>(16, nr - r0);
  const __mmask16 m = static_cast<__mmask16>((1u << nrow) - 1);
  for (int c = 0; c < 16 && c0 + c < nc; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + (c0 + c) * os) + r0;
    _mm512_mask_storeu_ps(o, m, r[c]);
  }
}

// C(w, g) += A(w) x B(g) for the A tiles loaded in tmm 0 (and 1) and the B
// tiles of groups 0 (and 1) at bt, bt + kBTileBytes.
template <int W, int G>
FOLIO_INLINE_BF16_AMX void products(const uint8_t* bt) {
  _tile_loadd(2, bt, 64);
  _tile_dpbf16ps(4, 0, 2);
  if constexpr (W == 2) _tile_dpbf16ps(5, 1, 2);
  if constexpr (G == 2) {
    _tile_loadd(3, bt + kBTileBytes, 64);
    _tile_dpbf16ps(6, 0, 3);
    if constexpr (W == 2) _tile_dpbf16ps(7, 1, 3);
  }
}

// One step of K: W groups of 16 weight rows as A (wh_w with stride hs_w;
// F16: wl_w with stride ls) x G activation groups (bt: this step's B tiles,
// plane p, group g at bt + (p G + g) KB), C(w, g) in tmm 4 + 2g + w.
template <int W, int G, WFmt F>
FOLIO_INLINE_BF16_AMX void rows_step(const uint8_t* wh0, size_t hs0, const uint8_t* wh1,
                                     size_t hs1, const uint8_t* wl0, const uint8_t* wl1,
                                     size_t ls, const uint8_t* bt) {
  _tile_loadd(0, wh0, hs0);
  if constexpr (W == 2) _tile_loadd(1, wh1, hs1);
  products<W, G>(bt);  // wh x ah
  if constexpr (F == WFmt::kF16) {
    products<W, G>(bt + G * kBTileBytes);  // wh x al
    _tile_loadd(0, wl0, ls);               // wl x ah
    if constexpr (W == 2) _tile_loadd(1, wl1, ls);
    products<W, G>(bt);
  }
}

template <int W, int G>
FOLIO_INLINE_BF16_AMX void zero_c() {
  _tile_zero(4);
  if constexpr (W == 2) _tile_zero(5);
  if constexpr (G == 2) _tile_zero(6);
  if constexpr (W == 2 && G == 2) _tile_zero(7);
}

// The C tiles of rows_step into out (weight rows from r0, activation rows
// from 0).
template <int W, int G>
FOLIO_TARGET_AMX void rows_c_out(float* out, size_t os, int64_t nr, int64_t nc, int64_t r0) {
  alignas(64) float cbuf[4][kGroup * kGroup];
  _tile_stored(4, cbuf[0], 64);
  if constexpr (W == 2) _tile_stored(5, cbuf[1], 64);
  if constexpr (G == 2) _tile_stored(6, cbuf[2], 64);
  if constexpr (W == 2 && G == 2) _tile_stored(7, cbuf[3], 64);
  amx::memory_barrier();
  for (int g = 0; g < G; ++g) {
    for (int w = 0; w < W; ++w) {
      bf16_c_out(cbuf[2 * g + w], out, os, nr, nc, r0 + kGroup * w, kGroup * g);
    }
  }
}

// BF16: one weight group (16 rows, wr) x G activation groups (B tiles of
// bt), all of K.
template <int G>
FOLIO_TARGET_AMX void bf16_rows_x_acts(const WeightRows& wr, int64_t k, const uint8_t* bt,
                                       float* out, size_t os, int64_t nr, int64_t nc, int64_t r0) {
  zero_c<1, G>();
  const int64_t full = k / kStep;
  for (int64_t s = 0; s < full; ++s) {
    rows_step<1, G, WFmt::kBf16>(wr.base + s * 64, wr.stride, nullptr, 0, nullptr, nullptr, 0,
                                 bt + s * G * kBTileBytes);
  }
  if (k % kStep != 0) {
    rows_step<1, G, WFmt::kBf16>(wr.tail, wr.tail_stride, nullptr, 0, nullptr, nullptr, 0,
                                 bt + full * G * kBTileBytes);
  }
  rows_c_out<1, G>(out, os, nr, nc, r0);
}

// F16: W weight groups from r0 x G activation groups (B tiles of bt, two
// planes), all of K, the weights split per chunk into ring (W x kChunk x
// 2 KB).
template <int W, int G>
FOLIO_TARGET_AMX void f16_rows_x_acts(const unsigned char* w, size_t ws, int64_t k,
                                      const uint8_t* bt, uint8_t* ring, float* out, size_t os,
                                      int64_t nr, int64_t nc, int64_t r0) {
  zero_c<W, G>();
  const int64_t steps = (k + kStep - 1) / kStep;
  uint8_t* ring1 = ring + 2 * kChunk * kBTileBytes;
  for (int64_t s0 = 0; s0 < steps; s0 += kChunk) {
    const int64_t n = std::min(kChunk, steps - s0);
    f16_split_rows(w, ws, nr, r0, k, s0, n, ring);
    if constexpr (W == 2) f16_split_rows(w, ws, nr, r0 + kGroup, k, s0, n, ring1);
    amx::memory_barrier();
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* h0 = ring + 2 * j * kBTileBytes;
      const uint8_t* h1 = (W == 2 ? ring1 : ring) + 2 * j * kBTileBytes;
      rows_step<W, G, WFmt::kF16>(h0, 64, h1, 64, h0 + kBTileBytes, h1 + kBTileBytes, 64,
                                  bt + (s0 + j) * 2 * G * kBTileBytes);
    }
    amx::memory_barrier();
  }
  rows_c_out<W, G>(out, os, nr, nc, r0);
}

// Without scratch memory: the model, output by output (the same bits).
template <WFmt F>
void bf16_panel_model(int64_t k, const unsigned char* w, size_t ws, int64_t nr,
                      const unsigned char* x, size_t xs, int64_t nc, float* out, size_t os) {
  for (int64_t c = 0; c < nc; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * os);
    for (int64_t r = 0; r < nr; ++r) {
      const auto* wr = reinterpret_cast<const uint16_t*>(w + r * ws);
      const auto* xr = reinterpret_cast<const float*>(x + c * xs);
      o[r] = F == WFmt::kF16 ? amx_f16::dot_model(wr, xr, k) : amx_bf16::dot_model(wr, xr, k);
    }
  }
}

// nc <= kSmallRows activation rows, BF16 (false: no scratch memory).
FOLIO_TARGET_AMX bool bf16_panel_small(int64_t k, const unsigned char* w, size_t ws, int64_t nr,
                                       const unsigned char* x, size_t xs, int64_t nc, float* out,
                                       size_t os) {
  const int groups = nc > kGroup ? 2 : 1;
  const int64_t steps = (k + kStep - 1) / kStep;
  auto* bt = static_cast<uint8_t*>(
      bf16_amx_scratch[0].get(static_cast<size_t>(steps * groups) * kBTileBytes));
  auto* part = static_cast<uint8_t*>(
      bf16_amx_scratch[1].get(static_cast<size_t>(steps) * kBTileBytes + 16 * 64));
  if (bt == nullptr || part == nullptr) return false;
  uint8_t* tail = part + steps * kBTileBytes;  // a 16 x 64-byte tail step
  bf16_act_tiles<WFmt::kBf16>(x, xs, nc, groups, k, bt);
  bf16_configure_tiles();
  // One group of 16 weight rows at a time: 16 read streams per thread, which
  // the prefetchers follow better than two groups' 32 (BENCHMARKS.md); the
  // C tiles are independent, so the bits are the same.
  for (int64_t r0 = 0; r0 < nr; r0 += kGroup) {
    const WeightRows wr = bf16_weight_rows(w, ws, nr, r0, k, tail, part);
    amx::memory_barrier();
    if (groups == 2) {
      bf16_rows_x_acts<2>(wr, k, bt, out, os, nr, nc, r0);
    } else {
      bf16_rows_x_acts<1>(wr, k, bt, out, os, nr, nc, r0);
    }
  }
  _tile_release();
  return true;
}

// nc <= kSmallRows activation rows, F16 (false: no scratch memory).
FOLIO_TARGET_AMX bool f16_panel_small(int64_t k, const unsigned char* w, size_t ws, int64_t nr,
                                      const unsigned char* x, size_t xs, int64_t nc, float* out,
                                      size_t os) {
  const int groups = nc > kGroup ? 2 : 1;
  const int64_t steps = (k + kStep - 1) / kStep;
  auto* bt = static_cast<uint8_t*>(
      bf16_amx_scratch[0].get(static_cast<size_t>(steps * 2 * groups) * kBTileBytes));
  auto* ring = static_cast<uint8_t*>(
      bf16_amx_scratch[1].get(static_cast<size_t>(2 * 2 * kChunk) * kBTileBytes));
  if (bt == nullptr || ring == nullptr) return false;
  bf16_act_tiles<WFmt::kF16>(x, xs, nc, groups, k, bt);
  bf16_configure_tiles();
  for (int64_t r0 = 0; r0 < nr; r0 += 2 * kGroup) {
    const bool two = r0 + kGroup < nr;
    if (two && groups == 2) {
      f16_rows_x_acts<2, 2>(w, ws, k, bt, ring, out, os, nr, nc, r0);
    } else if (two) {
      f16_rows_x_acts<2, 1>(w, ws, k, bt, ring, out, os, nr, nc, r0);
    } else if (groups == 2) {
      f16_rows_x_acts<1, 2>(w, ws, k, bt, ring, out, os, nr, nc, r0);
    } else {
      f16_rows_x_acts<1, 1>(w, ws, k, bt, ring, out, os, nr, nc, r0);
    }
  }
  _tile_release();
  return true;
}

template <WFmt F>
FOLIO_TARGET_AMX void bf16_panel(int64_t k, const void* w, size_t w_stride, int64_t nr,
                                 const void* x, size_t x_stride, int64_t nc, float* out,
                                 size_t out_stride) {
  constexpr int P = kPlanes<F>;
  const auto* wp = static_cast<const unsigned char*>(w);
  const auto* xp = static_cast<const unsigned char*>(x);
  if (nr <= 0 || nc <= 0) return;
  if (k == 0) {
    bf16_panel_model<F>(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride);
    return;
  }
  if (nc <= kSmallRows) {
    const bool ran = F == WFmt::kF16
                         ? f16_panel_small(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride)
                         : bf16_panel_small(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride);
    if (!ran) bf16_panel_model<F>(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride);
    return;
  }
  const int64_t rows = (nc + kGroup - 1) / kGroup * kGroup;
  const int64_t kb_max = std::min<int64_t>(kKBlock, (k + kStep - 1) / kStep * kStep);
  const size_t pitch = static_cast<size_t>(kb_max) * 2;
  const size_t plane = pitch * static_cast<size_t>(rows);
  auto* a = static_cast<uint8_t*>(bf16_amx_scratch[0].get(plane * P));
  auto* b = static_cast<uint8_t*>(
      bf16_amx_scratch[1].get(static_cast<size_t>(kb_max / kStep) * 2 * P * kBTileBytes));
  if (a == nullptr || b == nullptr) {
    bf16_panel_model<F>(k, wp, w_stride, nr, xp, x_stride, nc, out, out_stride);
    return;
  }
  bf16_configure_tiles();
  for (int64_t k0 = 0; k0 < k; k0 += kKBlock) {
    const int64_t kb = std::min(kKBlock, k - k0);
    const int64_t steps = (kb + kStep - 1) / kStep;
    bf16_convert_block<F>(xp, x_stride, nc, rows, k0, kb, reinterpret_cast<uint16_t*>(a), pitch,
                          plane);
    for (int64_t r0 = 0; r0 < nr; r0 += kStrip) {
      const int rr = static_cast<int>(std::min<int64_t>(kStrip, nr - r0));
      bf16_repack_strip<F>(wp + r0 * w_stride, w_stride, rr, k0, kb, b);
      amx::memory_barrier();
      int64_t c0 = 0;
      for (; c0 + 2 * kGroup <= rows; c0 += 2 * kGroup) {
        bf16_groups<2, F>(a + c0 * pitch, pitch, plane, b, steps, out, out_stride, nr, nc, r0, c0,
                          k0 == 0);
      }
      if (c0 < rows) {
        bf16_groups<1, F>(a + c0 * pitch, pitch, plane, b, steps, out, out_stride, nr, nc, r0, c0,
                          k0 == 0);
      }
      amx::memory_barrier();
    }
  }
  _tile_release();
}

// mul_mat_id's tiles: the panel on one tile's rows and activation rows.
template <WFmt F>
FOLIO_TARGET_AMX void bf16_tile(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                                size_t x_stride, int nc, float* out, size_t out_stride) {
  bf16_panel<F>(k, w, w_stride, nr, x, x_stride, nc, out, out_stride);
}

// Tiles of 64 weight rows x 32 activation rows (the panel does the blocking
// for mul_mat).
template <WFmt F>
MatMulSpec bf16_amx_spec() {
  MatMulSpec spec;
  spec.act = ActFormat::kF32;
  spec.tile_rows = 2 * kStrip;
  spec.tile_cols = 2 * kGroup;
  spec.tile = &bf16_tile<F>;
  spec.panel = &bf16_panel<F>;
  return spec;
}

}  // namespace

Status mul_mat_bf16_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, bf16_amx_spec<WFmt::kBf16>());
}

Status mul_mat_id_bf16_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, bf16_amx_spec<WFmt::kBf16>());
}

Status mul_mat_f16_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, bf16_amx_spec<WFmt::kF16>());
}

Status mul_mat_id_f16_amx(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, bf16_amx_spec<WFmt::kF16>());
}

namespace {

// F16 at any batch size: fewer than kF16AmxMinRows activation rows on the
// AVX-512 rows kernel (amx/mul_mat_f16_rows.cc), the same bits.
void f16_combined_panel(int64_t k, const void* w, size_t w_stride, int64_t nr, const void* x,
                        size_t x_stride, int64_t nc, float* out, size_t out_stride) {
  if (nc < kF16AmxMinRows) {
    f16_rows_panel(k, w, w_stride, nr, x, x_stride, nc, out, out_stride);
  } else {
    bf16_panel<WFmt::kF16>(k, w, w_stride, nr, x, x_stride, nc, out, out_stride);
  }
}

void f16_combined_tile(int64_t k, const void* w, size_t w_stride, int nr, const void* x,
                       size_t x_stride, int nc, float* out, size_t out_stride) {
  f16_combined_panel(k, w, w_stride, nr, x, x_stride, nc, out, out_stride);
}

MatMulSpec f16_combined_spec() {
  MatMulSpec spec = bf16_amx_spec<WFmt::kF16>();
  spec.tile = &f16_combined_tile;
  spec.panel = &f16_combined_panel;
  return spec;
}

}  // namespace

Status mul_mat_f16_amx_combined(const Op& op, const KernelContext& ctx) {
  return mul_mat_tiled(op, ctx, f16_combined_spec());
}

Status mul_mat_id_f16_amx_combined(const Op& op, const KernelContext& ctx) {
  return mul_mat_id_tiled(op, ctx, f16_combined_spec());
}

}  // namespace folio::cpu
