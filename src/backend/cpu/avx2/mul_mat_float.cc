// AVX2 mul_mat for float weights (F32, F16, BF16) x F32 activations.
//
// Layout: W rows [K] contiguous (f32, f16 or bf16), X rows [K] f32.
// Tile: up to 4 weight rows x 2 activation rows; each step of 8 elements
// loads (and widens) 4 W vectors and 2 X vectors and issues 8 FMAs into 8
// independent ymm accumulators (11 of the 16 registers, no spills). F16
// widens with vcvtph2ps, BF16 by a 16-bit shift; activations stay f32. The
// K tail (< 8 elements) is summed in scalar code (fused multiply-adds, K
// ascending) and added after the lanes.
// Panel (F16 / BF16, M >= 16): the strip driver (scalar/float_strip_panel.h)
// widens each strip of 4 weight rows once per 512-element K chunk into an L1
// scratch, and tiles of 4 weight rows x 3 activation rows (12 accumulators,
// 7 loads per 12 FMAs, no conversions) read it, where the plain tile
// converts each weight vector for 2 FMAs. Zen 3, one thread, the F16 [1024,
// 3072] x 512 prefill product: 75 ms plain, 70 ms with 6 x 2 strips, 59 ms
// with 4 x 3.
// Decode (M = 1) where one stream per thread is fastest (decode_streams(),
// core/cpu_features.h: AMD) takes one weight row per tile, without software prefetch:
// the rows are contiguous, so the weights stream as one sequential read,
// which the hardware prefetcher follows best. Zen 4, the F16 [1024, 151936]
// product: 12 GB/s with 4 interleaved row streams, 17-23 GB/s with one
// (one thread); a 0.66B F16 model decodes 22.6 -> 35.7 tok/s on 2 threads.
// Each output is one accumulator (K ascending, then hsum, then the tail), in
// the tile and the panel alike, so its value depends neither on the shape
// or M (the batch composition) nor on the thread count.
#include <cmath>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/float_strip_panel.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/fp16.h"

namespace folio::cpu {

namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 2;
constexpr int kPanelRows = 4;
constexpr int kPanelCols = 3;
constexpr int64_t kPanelMinRows = 16;  // activation rows from which F16 / BF16 use the panel

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

template <DType WT>
FOLIO_INLINE_AVX2 float w_scalar(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (WT == DType::F16) {
    return _cvtsh_ss(static_cast<const uint16_t*>(row)[i]);
  } else {
    return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX2 void float_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                  size_t x_stride, float* out, size_t out_stride) {
  const unsigned char* wr[R];
  const float* xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  }
  constexpr size_t kElem = WT == DType::F32 ? 4 : 2;
  const size_t pf = R * w_stride;  // the next tile's rows
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      if constexpr (R > 1) avx2::prefetch_span<8 * kElem>(wr[r] + i * kElem + pf);
      const __m256 wv = load_w<WT>(wr[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) {
      float tail = 0.0f;
      for (int64_t j = i; j < k; ++j) tail = std::fma(w_scalar<WT>(wr[r], j), xr[c][j], tail);
      o[r] = avx2::hsum(acc[r][c]) + tail;
    }
  }
}

template <DType WT>
FOLIO_TARGET_AVX2 void float_tile_any(int64_t k, const void* w, size_t w_stride, int nr,
                                      const void* x, size_t x_stride, int nc, float* out,
                                      size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kTileRows][kTileCols] = {
      {float_tile<WT, 1, 1>, float_tile<WT, 1, 2>},
      {float_tile<WT, 2, 1>, float_tile<WT, 2, 2>},
      {float_tile<WT, 3, 1>, float_tile<WT, 3, 2>},
      {float_tile<WT, 4, 1>, float_tile<WT, 4, 2>},
  };
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

// A strip tile (scalar/float_strip_panel.h): R weight rows x C activation
// rows over one chunk. The widening tile also widens the tail elements (<
// 8, last chunk only) into wb, one by one; the last chunk sums them as
// float_tile does.
template <DType WT, int R, int C, StripMode Mode>
FOLIO_TARGET_AVX2 void strip_tile(const StripArgs& a) {
  constexpr bool kWidens = Mode == StripMode::kWiden || Mode == StripMode::kWidenPrefetch;
  constexpr bool kPrefetches =
      Mode == StripMode::kReadPrefetch || Mode == StripMode::kWidenPrefetch;
  constexpr size_t kElem = WT == DType::F32 ? 4 : 2;
  // Locals: the vector stores below may alias anything (__m256 is
  // may_alias), so fields read through `a` would be reloaded after each.
  const unsigned char* const w = a.w;
  const unsigned char* const pf = a.pf;
  const size_t ws = a.w_stride;
  float* const wb = a.wb;
  const int64_t kk = a.kk;
  const float* xr[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(reinterpret_cast<const unsigned char*>(a.x) +
                                           c * a.x_stride);
  }
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      acc[r][c] = a.first ? _mm256_setzero_ps() : _mm256_load_ps(a.acc + (r * C + c) * 8);
    }
  }
  int64_t i = 0;
  for (; i + 8 <= kk; i += 8) {
    __m256 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm256_loadu_ps(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      __m256 wv;
      if constexpr (kPrefetches) {
        if ((i * kElem) % 64 == 0) {
          _mm_prefetch(reinterpret_cast<const char*>(pf + r * ws + i * kElem), _MM_HINT_T0);
        }
      }
      if constexpr (kWidens) {
        wv = load_w<WT>(w + r * ws, i);
        _mm256_store_ps(wb + r * kStripPitch + i, wv);
      } else {
        wv = _mm256_load_ps(wb + r * kStripPitch + i);
      }
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if constexpr (kWidens) {
    for (int r = 0; r < R; ++r) {
      for (int64_t j = i; j < kk; ++j) wb[r * kStripPitch + j] = w_scalar<WT>(w + r * ws, j);
    }
  }
  if (a.last) {
    auto* out = reinterpret_cast<unsigned char*>(a.out);
    const size_t os = a.out_stride;
    for (int c = 0; c < C; ++c) {
      float* o = reinterpret_cast<float*>(out + c * os);
      for (int r = 0; r < R; ++r) {
        float tail = 0.0f;
        for (int64_t j = i; j < kk; ++j) tail = std::fma(wb[r * kStripPitch + j], xr[c][j], tail);
        o[r] = avx2::hsum(acc[r][c]) + tail;
      }
    }
  } else {
    float* const ab = a.acc;
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) _mm256_store_ps(ab + (r * C + c) * 8, acc[r][c]);
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
      kPanelRows, kPanelCols, 8,
      &strip_tile_table<StripTiles<WT>::template Tile, kPanelRows, kPanelCols>};
  run_float_strips(kShape, WT == DType::F32 ? 4 : 2, k, w, w_stride, nr, x, x_stride, nc, out,
                   out_stride);
}

template <DType WT>
MatMulSpec float_spec(int64_t m) {
  // Decode where one stream per thread is fastest (core/cpu_features.h
  // decode_streams): one weight row per tile (see the file comment).
  if (m == 1 && decode_streams() == 1) return {ActFormat::kF32, 1, 1, &float_tile_any<WT>};
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
