// AVX-512 mul_mat for float weights (F32, F16, BF16) x F32 activations.
//
// Layout: W rows [K] contiguous (f32, f16 or bf16), X rows [K] f32.
// Two tile shapes, picked by the number of activation rows M of the op:
//   narrow (M < 8): up to 4 weight rows x 4 activation rows; each step of 16
//     elements loads (and widens) 4 W vectors and 4 X vectors and issues 16
//     FMAs into 16 independent zmm accumulators, so loads stay at half the
//     FMA count and the FMA latency is hidden without unrolling.
//   decode (M = 1) where one stream per thread is fastest (decode_streams(),
//     core/cpu_features.h: AMD): one weight row per tile, without software
//     prefetch: the rows are contiguous, so the weights stream as one
//     sequential read, which the hardware prefetcher follows best. Zen 4,
//     the F16 [1024, 151936] product, one thread: 12 GB/s with 4 interleaved
//     row streams (each step prefetching the next tile's rows), 17-23 GB/s
//     with one; a 0.66B F16 model decodes 22.6 -> 35.7 tok/s on 2 threads
//     (llama.cpp 37.2). Elsewhere (the AMX Xeon it was tuned on) the narrow
//     tile's 4 row streams.
//   wide (M >= 8): up to 6 weight rows x 4 activation rows, 24 accumulators:
//     batched decode is compute-bound, and the activation rows (M x K f32)
//     stream from L2 once per row tile: 6 rows per tile read them a third as
//     often as 4 x 4 does (1.5-1.65x faster at M = 8 / 32 than 4 x 4 here;
//     3 x 8, which saves conversions instead, read them twice as often and
//     lost to it).
//   panel (F16 / BF16, M >= 16): the wide tile widens each weight vector
//     once per column tile that meets it. Here the driver hands over a
//     thread's whole row range and the strip driver (scalar/
//     float_strip_panel.h) widens each strip of 6 weight rows once per
//     512-element K chunk into an L1 scratch that tiles of 4 activation rows
//     read. Single core, random 1.1B shapes: 1.10-1.20x the wide
//     tile at M = 16 / 32 / 512; at M = 8 the extra store per widened vector
//     ate the gain, so M < 16 keeps the wide tile. Widening inside a loop
//     that also prefetches ran ~1.6x slower than either alone, hence the
//     split between the first two tiles.
// The K tail uses masked loads. F16 widens with vcvtph2ps, BF16 by a 16-bit
// shift: activations stay f32 (no precision lost on X). Each output is one
// accumulator (16 lanes, K ascending) reduced at the end by hsum, in all
// shapes, so its value depends neither on the tile shape (hence not on M or
// the batch composition) nor on the thread count.
#include <algorithm>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/float_strip_panel.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/target.h"

namespace folio::cpu {

namespace {

constexpr int kNarrowRows = 4;
constexpr int kNarrowCols = 4;
constexpr int kWideRows = 6;
constexpr int kWideCols = 4;
constexpr int64_t kWideMinRows = 8;    // activation rows from which the wide tile is used
constexpr int64_t kPanelMinRows = 16;  // ... and the panel path (F16 / BF16)
// Panel path (scalar/float_strip_panel.h): strips of kPanelRows weight rows
// widened kStripChunk elements at a time (12 KiB of f32, L1-resident) and
// met by tiles of kPanelCols activation rows.
constexpr int kPanelRows = 6;
constexpr int kPanelCols = 4;

template <DType WT>
FOLIO_TARGET_AVX512 inline __m512 load_w(const void* row, int64_t i) {
  if constexpr (WT == DType::F32) {
    return _mm512_loadu_ps(static_cast<const float*>(row) + i);
  } else {
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(row) + i));
    if constexpr (WT == DType::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType WT>
FOLIO_TARGET_AVX512 inline __m512 load_w_masked(const void* row, int64_t i, __mmask16 mask) {
  if constexpr (WT == DType::F32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(row) + i);
    if constexpr (WT == DType::F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType WT, int R, int C>
FOLIO_TARGET_AVX512 void float_tile(int64_t k, const void* w, size_t w_stride, const void* x,
                                    size_t x_stride, float* out, size_t out_stride) {
  const unsigned char* wr[R];
  const float* xr[C];
  for (int r = 0; r < R; ++r) wr[r] = static_cast<const unsigned char*>(w) + r * w_stride;
  for (int c = 0; c < C; ++c) {
    xr[c] = reinterpret_cast<const float*>(static_cast<const unsigned char*>(x) + c * x_stride);
  }
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  constexpr size_t kElem = WT == DType::F32 ? 4 : 2;
  const size_t pf = R * w_stride;  // the next tile's rows
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_loadu_ps(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      if constexpr (R > 1) avx512::prefetch_span<16 * kElem>(wr[r] + i * kElem + pf);
      const __m512 wv = load_w<WT>(wr[r], i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if (i < k) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_maskz_loadu_ps(mask, xr[c] + i);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = load_w_masked<WT>(wr[r], i, mask);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = avx512::hsum(acc[r][c]);
  }
}

template <DType WT>
FOLIO_TARGET_AVX512 void float_tile_narrow(int64_t k, const void* w, size_t w_stride, int nr,
                                           const void* x, size_t x_stride, int nc, float* out,
                                           size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kNarrowRows][kNarrowCols] = {
      {float_tile<WT, 1, 1>, float_tile<WT, 1, 2>, float_tile<WT, 1, 3>, float_tile<WT, 1, 4>},
      {float_tile<WT, 2, 1>, float_tile<WT, 2, 2>, float_tile<WT, 2, 3>, float_tile<WT, 2, 4>},
      {float_tile<WT, 3, 1>, float_tile<WT, 3, 2>, float_tile<WT, 3, 3>, float_tile<WT, 3, 4>},
      {float_tile<WT, 4, 1>, float_tile<WT, 4, 2>, float_tile<WT, 4, 3>, float_tile<WT, 4, 4>},
  };
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

template <DType WT>
FOLIO_TARGET_AVX512 void float_tile_wide(int64_t k, const void* w, size_t w_stride, int nr,
                                         const void* x, size_t x_stride, int nc, float* out,
                                         size_t out_stride) {
  using Fn = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);
  static constexpr Fn kTable[kWideRows][kWideCols] = {
      {float_tile<WT, 1, 1>, float_tile<WT, 1, 2>, float_tile<WT, 1, 3>, float_tile<WT, 1, 4>},
      {float_tile<WT, 2, 1>, float_tile<WT, 2, 2>, float_tile<WT, 2, 3>, float_tile<WT, 2, 4>},
      {float_tile<WT, 3, 1>, float_tile<WT, 3, 2>, float_tile<WT, 3, 3>, float_tile<WT, 3, 4>},
      {float_tile<WT, 4, 1>, float_tile<WT, 4, 2>, float_tile<WT, 4, 3>, float_tile<WT, 4, 4>},
      {float_tile<WT, 5, 1>, float_tile<WT, 5, 2>, float_tile<WT, 5, 3>, float_tile<WT, 5, 4>},
      {float_tile<WT, 6, 1>, float_tile<WT, 6, 2>, float_tile<WT, 6, 3>, float_tile<WT, 6, 4>},
  };
  kTable[nr - 1][nc - 1](k, w, w_stride, x, x_stride, out, out_stride);
}

// --- Panel path (F16 / BF16, M >= 16): weights widened once per strip -----

// A strip tile (scalar/float_strip_panel.h): the widening tile zero-pads
// the last partial vector, as the masked load gives. The FMAs per
// accumulator are those of float_tile in the same order, so every output is
// bit-identical to it.
template <DType WT, int R, int C, StripMode Mode>
FOLIO_TARGET_AVX512 void strip_tile(const StripArgs& a) {
  constexpr bool kWidens = Mode == StripMode::kWiden || Mode == StripMode::kWidenPrefetch;
  constexpr bool kPrefetches =
      Mode == StripMode::kReadPrefetch || Mode == StripMode::kWidenPrefetch;
  constexpr size_t kElem = WT == DType::F32 ? 4 : 2;
  // Locals: the vector stores below may alias anything (__m512 is
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
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      acc[r][c] = a.first ? _mm512_setzero_ps() : _mm512_load_ps(a.acc + (r * C + c) * 16);
    }
  }
  int64_t i = 0;
  for (; i + 16 <= kk; i += 16) {
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_loadu_ps(xr[c] + i);
    for (int r = 0; r < R; ++r) {
      __m512 wv;
      if constexpr (kPrefetches) avx512::prefetch_span<16 * kElem>(pf + r * ws + i * kElem);
      if constexpr (kWidens) {
        wv = load_w<WT>(w + r * ws, i);
        _mm512_store_ps(wb + r * kStripPitch + i, wv);
      } else {
        wv = _mm512_load_ps(wb + r * kStripPitch + i);
      }
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if (i < kk) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (kk - i)) - 1);
    __m512 xv[C];
    for (int c = 0; c < C; ++c) xv[c] = _mm512_maskz_loadu_ps(mask, xr[c] + i);
    for (int r = 0; r < R; ++r) {
      __m512 wv;
      if constexpr (kWidens) {
        wv = load_w_masked<WT>(w + r * ws, i, mask);
        _mm512_store_ps(wb + r * kStripPitch + i, wv);
      } else {
        wv = _mm512_load_ps(wb + r * kStripPitch + i);
      }
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
    }
  }
  if (a.last) {
    auto* out = reinterpret_cast<unsigned char*>(a.out);
    const size_t os = a.out_stride;
    for (int c = 0; c < C; ++c) {
      float* o = reinterpret_cast<float*>(out + c * os);
      for (int r = 0; r < R; ++r) o[r] = avx512::hsum(acc[r][c]);
    }
  } else {
    float* const ab = a.acc;
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) _mm512_store_ps(ab + (r * C + c) * 16, acc[r][c]);
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
  if (m >= kWideMinRows) {
    MatMulSpec spec{ActFormat::kF32, kWideRows, kWideCols, &float_tile_wide<WT>};
    if constexpr (WT != DType::F32) {
      if (m >= kPanelMinRows) spec.panel = &float_panel<WT>;
    }
    return spec;
  }
  // Decode where one stream per thread is fastest (core/cpu_features.h
  // decode_streams): one weight row per tile (see the file comment).
  if (m == 1 && decode_streams() == 1) return {ActFormat::kF32, 1, 1, &float_tile_narrow<WT>};
  return {ActFormat::kF32, kNarrowRows, kNarrowCols, &float_tile_narrow<WT>};
}

}  // namespace

MatMulSpec float_mul_mat_spec_avx512(DType w, int64_t m) {
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
  FOLIO_CHECK_MSG(false, "no avx512 float mul_mat tile for {}", dtype_name(w));
  return {};
}

}  // namespace folio::cpu
