// AVX2 mul_mat for float weights (F32, F16, BF16) x F32 activations.
//
// Layout: W rows [K] contiguous (f32, f16 or bf16), X rows [K] f32.
// Accumulation: each output is one 16-lane accumulator held in two ymm (lo:
// elements 16i .. 16i + 7, hi: 16i + 8 .. 16i + 15), K ascending in steps
// of 16; the K tail (< 16 elements) is one more step on zero-padded
// vectors; the result is hsum(lo + hi). That is the AVX-512 tier's
// arithmetic lane for lane (its masked tail loads give the same zeros), so
// the two tiers give the same bits, and a single output runs two FMA chains
// at once: decode, where each output is one row's dot, had been bound by
// the latency of one 8-lane chain (Zen 4, the F16 [1024, 32768] product on
// one thread: 17.6 GB/s against AVX-512's 28).
// F16 widens with vcvtph2ps, BF16 by a 16-bit shift; activations stay f32.
// The lo and hi halves are independent chains, so where registers are
// short the kernels run them one after the other over a block of K that
// stays in L1, keeping the 8-lane kernels' tile shapes:
//   decode (M = 1): both halves at once, one weight row per tile where one
//     stream per thread is fastest (decode_streams(), core/cpu_features.h:
//     AMD), without software prefetch, so the contiguous rows stream as one
//     sequential read (Zen 4: 2 or 4 interleaved rows read half as fast);
//     4 rows elsewhere (the AMX Xeon's memory system idled with one stream);
//   tile (M 2 .. 15): 4 weight rows x 3 activation rows, the halves in turn
//     over blocks of 256 elements (12 accumulators, 7 loads per 12 FMAs;
//     Zen 4, one thread, F16 [1024, 3072] x 8: 80 GFLOP/s against 72 with
//     4 x 2, and the panel's widening store costs more than it saves here);
//   panel (F16 / BF16, M >= 16): the strip driver (scalar/
//     float_strip_panel.h) widens each strip of 4 weight rows once per
//     512-element K chunk into an L1 scratch, and tiles of 4 weight rows x 3
//     activation rows read it, the halves in turn (12 accumulators, 7 loads
//     per 12 FMAs, no conversions).
// Each output's value depends neither on the tile shape or M (the batch
// composition) nor on the thread count.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/float_strip_panel.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "core/cpu_features.h"

namespace folio::cpu {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 3;
constexpr int kDecodeRows = 4;  // M = 1 where decode_streams() > 1
constexpr int kPanelRows = 4;
constexpr int kPanelCols = 3;
constexpr int64_t kPanelMinRows = 16;  // activation rows from which F16 / BF16 use the panel

template <DType WT>
constexpr size_t kElem = WT == DType::F32 ? 4 : 2;

// 8 weights from element i of `row`, widened.
template <DType WT>
FOLIO_INLINE_AVX2 __m256 load_w(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + i);
  } else {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    if constexpr (WT == DType::F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

// The last n (< 16) weights of a row from element i, zero-padded to 16
// (what AVX-512's masked load gives), widened: lo, hi.
template <DType WT>
FOLIO_INLINE_AVX2 void load_w_tail(const void* row, int64_t i, int64_t n, __m256 (&v)[2]) {
  alignas(32) unsigned char buf[16 * 4] = {};
  std::memcpy(buf, static_cast<const unsigned char*>(row) + i * kElem<WT>,
              static_cast<size_t>(n) * kElem<WT>);
  v[0] = load_w<WT>(buf, 0);
  v[1] = load_w<WT>(buf, 8);
}

// The last n (< 16) activations from element i, zero-padded to 16.
FOLIO_INLINE_AVX2 void load_x_tail(const float* row, int64_t i, int64_t n, __m256 (&v)[2]) {
  alignas(32) float buf[16] = {};
  std::memcpy(buf, row + i, static_cast<size_t>(n) * 4);
  v[0] = _mm256_load_ps(buf);
  v[1] = _mm256_load_ps(buf + 8);
}

// AVX-512's hsum of the 16-lane accumulator (lo, hi): (lo + hi), then the
// same 8 -> 1 reduction.
FOLIO_INLINE_AVX2 float hsum16(__m256 lo, __m256 hi) {
  return avx2::hsum(_mm256_add_ps(lo, hi));
}

// R weight rows x C activation rows over the whole of K. kSplit: the lo
// and hi halves of the 16-lane accumulators one after the other (R x C
// accumulators in registers, as strip_tile), over blocks of kSplitBlock
// elements so that the second half finds the block in L1; else both halves
// at once (2 R C accumulators: decode, where one row's two chains hide the
// FMA latency).
constexpr int64_t kSplitBlock = 256;

template <DType WT, int R, int C, bool kPrefetch, bool kSplit>
FOLIO_TARGET_AVX2 void float_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                  size_t x_stride, float* out, size_t out_stride) {
  const unsigned char* wr[R];
  const float* xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  constexpr int kPasses = kSplit ? 2 : 1;
  constexpr int kHalves = kSplit ? 1 : 2;
  constexpr int64_t kBlock = kSplit ? kSplitBlock : INT64_MAX / 2;
  const size_t pf = R * w_stride;  // the next tile's rows
  const int64_t full = k / 16 * 16;
  __m256 part[R][C][2];  // the lo, hi accumulators
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) part[r][c][0] = part[r][c][1] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < full; b += kBlock) {
    const int64_t end = std::min(full, b + kBlock);
    for (int p = 0; p < kPasses; ++p) {
      __m256 acc[R][C][kHalves];
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
          for (int h = 0; h < kHalves; ++h) acc[r][c][h] = part[r][c][p + h];
        }
      }
      for (int64_t i = b; i < end; i += 16) {
        for (int h = 0; h < kHalves; ++h) {
          const int64_t e = i + 8 * (p + h);
          __m256 xv[C];
          for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(xr[c] + e);
          for (int r = 0; r < R; ++r) {
            if constexpr (kPrefetch) {
              if (p == 0 && h == 0) {
                avx2::prefetch_span<16 * kElem<WT>>(wr[r] + i * kElem<WT> + pf);
              }
            }
            const __m256 wv = load_w<WT>(wr[r], e);
            for (int c = 0; c < C; ++c) acc[r][c][h] = _mm256_fmadd_ps(wv, xv[c], acc[r][c][h]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
          for (int h = 0; h < kHalves; ++h) part[r][c][p + h] = acc[r][c][h];
        }
      }
    }
  }
  if (full < k) {
    __m256 xv[C][2];
    for (int c = 0; c < C; ++c) load_x_tail(xr[c], full, k - full, xv[c]);
    for (int r = 0; r < R; ++r) {
      __m256 wv[2];
      load_w_tail<WT>(wr[r], full, k - full, wv);
      for (int c = 0; c < C; ++c) {
        for (int h = 0; h < 2; ++h) part[r][c][h] = _mm256_fmadd_ps(wv[h], xv[c][h], part[r][c][h]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = hsum16(part[r][c][0], part[r][c][1]);
  }
}

template <DType WT>
FOLIO_TARGET_AVX2 void float_tile_any(int64_t k, const void* w, size_t w_stride, int nr,
                                      const void* x, size_t x_stride, int nc, float* out,
                                      size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kTileRows][kTileCols] = {
      {float_tile<WT, 1, 1, true, true>, float_tile<WT, 1, 2, true, true>,
       float_tile<WT, 1, 3, true, true>},
      {float_tile<WT, 2, 1, true, true>, float_tile<WT, 2, 2, true, true>,
       float_tile<WT, 2, 3, true, true>},
      {float_tile<WT, 3, 1, true, true>, float_tile<WT, 3, 2, true, true>,
       float_tile<WT, 3, 3, true, true>},
      {float_tile<WT, 4, 1, true, true>, float_tile<WT, 4, 2, true, true>,
       float_tile<WT, 4, 3, true, true>},
  };
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

// Decode (one activation row): nr <= kDecodeRows weight rows per tile; one
// row (kPrefetch false) where decode_streams() is 1.
template <DType WT, bool kPrefetch>
FOLIO_TARGET_AVX2 void float_tile_decode(int64_t k, const void* w, size_t w_stride, int nr,
                                         const void* x, size_t x_stride, int nc, float* out,
                                         size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kDecodeRows] = {
      float_tile<WT, 1, 1, kPrefetch, false>, float_tile<WT, 2, 1, kPrefetch, false>,
      float_tile<WT, 3, 1, kPrefetch, false>, float_tile<WT, 4, 1, kPrefetch, false>};
  kTable[nr - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

// A strip tile (scalar/float_strip_panel.h): R weight rows x C activation
// rows over one chunk, with float_tile's FMAs per accumulator lane in the
// same order (the widening tile zero-pads the last partial 16 in wb), so
// every output is bit-identical to it. The lo and hi halves of the 16-lane
// accumulators are independent chains, so the tile runs them in two passes
// over the chunk (the second reads L1): each pass keeps R x C accumulators,
// 4 x 3 = 12 with 7 loads per 12 FMAs, where both halves at once would
// allow only 3 x 2 (5 loads per 6 FMAs: 62 against 86 GFLOP/s on the F16
// [1024, 3072] x 512 product, one Zen 4 thread). Accumulators travel as 16
// floats: lo, hi.
template <DType WT, int R, int C, StripMode Mode>
FOLIO_TARGET_AVX2 void strip_tile(const StripArgs& a) {
  constexpr bool kWidens = Mode == StripMode::kWiden || Mode == StripMode::kWidenPrefetch;
  constexpr bool kPrefetches =
      Mode == StripMode::kReadPrefetch || Mode == StripMode::kWidenPrefetch;
  // Locals: the vector stores below may alias anything (__m256 is
  // may_alias), so fields read through `a` would be reloaded after each.
  const unsigned char* const w = a.w;
  const unsigned char* const pf = a.pf;
  const size_t ws = a.w_stride;
  float* const wb = a.wb;
  const int64_t kk = a.kk;
  const bool first = a.first, last = a.last;
  float* const ab = a.acc;
  const float* xr[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(a.x) +
                                           c * a.x_stride);
  }
  const int64_t full = kk / 16 * 16;
  for (int h = 0; h < 2; ++h) {
    __m256 acc[R][C];
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        acc[r][c] = first ? _mm256_setzero_ps() : _mm256_load_ps(ab + (r * C + c) * 16 + 8 * h);
      }
    }
    for (int64_t e = 8 * h; e < full; e += 16) {
      __m256 xv[C];
      for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(xr[c] + e);
      for (int r = 0; r < R; ++r) {
        __m256 wv;
        if constexpr (kPrefetches) {
          if (h == 0 && (e * kElem<WT>) % 64 == 0) {
            _mm_prefetch(reinterpret_cast<const char*>(pf + r * ws + e * kElem<WT>), _MM_HINT_T0);
          }
        }
        if constexpr (kWidens) {
          wv = load_w<WT>(w + r * ws, e);
          _mm256_store_ps(wb + r * kStripPitch + e, wv);
        } else {
          wv = _mm256_load_ps(wb + r * kStripPitch + e);
        }
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
      }
    }
    if (full < kk) {
      __m256 xv[C];
      for (int c = 0; c < C; ++c) {
        __m256 t[2];
        load_x_tail(xr[c], full, kk - full, t);
        xv[c] = t[h];
      }
      for (int r = 0; r < R; ++r) {
        __m256 wv;
        if constexpr (kWidens) {
          __m256 t[2];
          load_w_tail<WT>(w + r * ws, full, kk - full, t);
          wv = t[h];
          _mm256_store_ps(wb + r * kStripPitch + full + 8 * h, wv);
        } else {
          wv = _mm256_load_ps(wb + r * kStripPitch + full + 8 * h);
        }
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) _mm256_store_ps(ab + (r * C + c) * 16 + 8 * h, acc[r][c]);
    }
  }
  if (last) {
    auto* out = reinterpret_cast<unsigned char*>(a.out);
    const size_t os = a.out_stride;
    for (int c = 0; c < C; ++c) {
      float* o = reinterpret_cast<float*>(out + c * os);
      for (int r = 0; r < R; ++r) {
        const float* v = ab + (r * C + c) * 16;
        o[r] = hsum16(_mm256_load_ps(v), _mm256_load_ps(v + 8));
      }
    }
  }
}

// The strip tiles of one weight type, as strip_tile_table wants them.
template <DType WT>
struct StripTiles {
  template <int R, int C, StripMode M>
  struct Tile {
    static constexpr StripTileFn fn = &strip_tile<WT, R, C, M>;
  };
};

template <DType WT>
void float_panel(int64_t k, const void* w, size_t w_stride, int64_t nr, const void* x,
                 size_t x_stride, int64_t nc, float* out, size_t out_stride) {
  static constexpr StripShape kShape{
      kPanelRows, kPanelCols, 16,
      &strip_tile_table<StripTiles<WT>::template Tile, kPanelRows, kPanelCols>};
  run_float_strips(kShape, WT == DType::F32 ? 4 : 2, k, w, w_stride, nr, x, x_stride, nc, out,
                   out_stride);
}

template <DType WT>
MatMulSpec float_spec(int64_t m) {
  if (m == 1) {
    // Decode: one row per tile where one stream per thread is fastest (see
    // the file comment).
    if (decode_streams() == 1) return {ActFormat::kF32, 1, 1, &float_tile_decode<WT, false>};
    return {ActFormat::kF32, kDecodeRows, 1, &float_tile_decode<WT, true>};
  }
  MatMulSpec spec{ActFormat::kF32, kTileRows, kTileCols, &float_tile_any<WT>};
  if constexpr (WT != DType::F32) {
    if (m >= kPanelMinRows) spec.panel = &float_panel<WT>;
  }
  return spec;
}

}  // namespace

MatMulSpec float_mul_mat_spec_avx2(DType w, int64_t m) {
  switch (w) {
    case DType::F32:
      return float_spec<DType::F32>(m);
    case DType::F16:
      return float_spec<DType::F16>(m);
    case DType::BF16:
      return float_spec<DType::BF16>(m);
    default:
      break;
  }
  FOLIO_CHECK_MSG(false, "no avx2 float mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
