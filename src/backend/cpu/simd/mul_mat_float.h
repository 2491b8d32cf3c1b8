// mul_mat for float weights (F32, F16, BF16) x F32 activations over the
// traits type (f32x16.h), for the x86 tiers: the tile functions and the
// strip tiles (drivers/float_strip_panel.h) of the mul_mat_tiled driver.
//
// Layout: W rows [K] contiguous (f32, f16 or bf16), X rows [K] f32.
// Accumulation: each output is one 16-lane accumulator, K ascending in
// steps of 16; the K tail (< 16 elements) is one more step on zero-padded
// vectors; the result is S::hsum. Every tier thus gives the same bits, in
// every tile shape, at any M (the batch composition) and thread count.
// F16 widens with vcvtph2ps, BF16 by a 16-bit shift; activations stay f32.
//
// The accumulator is S::kParts registers (S::Part: AVX-512 one zmm, AVX2
// two ymm). The parts are independent chains, so a tile may run them one
// after the other over a block of K that stays in L1 (kSplit), keeping R x C
// registers per pass where both at once need R x C x kParts: AVX2's 4 x 3
// tile. The shapes, given per tier (FloatShapes):
//   decode (M = 1): one weight row per tile where one stream per thread is
//     fastest (decode_streams(), core/cpu_features.h: AMD), without software
//     prefetch, so the contiguous rows stream as one sequential read the
//     hardware prefetcher follows; elsewhere 4 rows, each step prefetching
//     the next tile's rows;
//   narrow (M < kWideMin) and wide: register tiles; each step of 16
//     elements loads (and widens) R weight vectors and C activation vectors
//     for R x C FMAs per part, and prefetches the next tile's rows;
//   panel (F16 / BF16, M >= 16): the strip driver widens each strip of
//     weight rows once per K chunk into an L1 scratch that tiles of
//     activation rows read (the parts in turn, one pass each).
//
// Compiled per tier by simd/tier_kernels.inc where the tier's
// simd_kernels.cc names its FloatShapes (FOLIO_SIMD_FLOAT_SHAPES): its
// float_mul_mat_spec_<suffix> returns float_mul_mat_spec<S, those shapes>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/drivers/dtype_switch.h"
#include "backend/cpu/drivers/float_strip_panel.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "backend/cpu/drivers/quant_tile.h"
#include "core/check.h"
#include "core/cpu_features.h"

namespace folio::cpu::simd {

// A tier's tile shapes (see the file comment): decode rows (M = 1); below
// WideMin activation rows the narrow tile, from there the wide one (Split:
// its parts in turn); from PanelMin rows the strips (F16 / BF16) of
// PanelRows weight rows x PanelCols activation rows.
template <int DecodeRows, int64_t WideMin, int NarrowRows, int NarrowCols, bool NarrowSplit,
          int WideRows, int WideCols, bool WideSplit, int64_t PanelMin, int PanelRows,
          int PanelCols>
struct FloatShapes {
  static constexpr int kDecodeRows = DecodeRows;
  static constexpr int64_t kWideMin = WideMin;
  static constexpr int kNarrowRows = NarrowRows, kNarrowCols = NarrowCols;
  static constexpr bool kNarrowSplit = NarrowSplit;
  static constexpr int kWideRows = WideRows, kWideCols = WideCols;
  static constexpr bool kWideSplit = WideSplit;
  static constexpr int64_t kPanelMin = PanelMin;
  static constexpr int kPanelRows = PanelRows, kPanelCols = PanelCols;
};

template <DType WT>
constexpr size_t kFloatElem = WT == DType::F32 ? 4 : 2;

// Part::kLanes weights from element i of `row`, widened.
template <class S, DType WT>
inline typename S::Part::V float_load_w(const void* row, int64_t i) {
  using P = typename S::Part;
  if constexpr (WT == DType::F32) {
    return P::load(static_cast<const float*>(row) + i);
  } else if constexpr (WT == DType::F16) {
    return P::load_f16(static_cast<const uint16_t*>(row) + i);
  } else {
    return P::load_bf16(static_cast<const uint16_t*>(row) + i);
  }
}

// The last n (< 16) weights of a row from element i, zero-padded to 16 and
// widened, as the kParts parts.
template <class S, DType WT>
inline void float_load_w_tail(const void* row, int64_t i, int64_t n,
                              typename S::Part::V (&v)[S::kParts]) {
  alignas(64) unsigned char buf[16 * 4] = {};
  std::memcpy(buf, static_cast<const unsigned char*>(row) + i * kFloatElem<WT>,
              static_cast<size_t>(n) * kFloatElem<WT>);
  for (int p = 0; p < S::kParts; ++p) v[p] = float_load_w<S, WT>(buf, p * S::Part::kLanes);
}

// The last n (< 16) activations from element i, zero-padded to 16.
template <class S>
inline void float_load_x_tail(const float* row, int64_t i, int64_t n,
                              typename S::Part::V (&v)[S::kParts]) {
  alignas(64) float buf[16] = {};
  std::memcpy(buf, row + i, static_cast<size_t>(n) * 4);
  for (int p = 0; p < S::kParts; ++p) v[p] = S::Part::load(buf + p * S::Part::kLanes);
}

// Asks for [p, p + N) in L1, one prefetch per 64 bytes.
template <class S, size_t N>
inline void float_prefetch(const unsigned char* p) {
  for (size_t off = 0; off < N; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p) + off, _MM_HINT_T0);
  }
}

// R weight rows x C activation rows over the whole of K. kSplit: the parts
// one after the other over blocks of kFloatSplitBlock elements (the later
// passes find the block in L1); else all at once. kPrefetch: each step
// prefetches the same span of the next tile's rows.
inline constexpr int64_t kFloatSplitBlock = 256;

template <class S, DType WT, int R, int C, bool kPrefetch, bool kSplit>
void float_tile(int64_t k, const void* w, size_t w_stride, const void* x, size_t x_stride,
                float* out, size_t out_stride) {
  using P = typename S::Part;
  using PV = typename P::V;
  constexpr int kParts = S::kParts;
  constexpr int kL = P::kLanes;
  constexpr int kPasses = kSplit ? kParts : 1;
  constexpr int kAtOnce = kSplit ? 1 : kParts;
  constexpr int64_t kBlock = kSplit ? kFloatSplitBlock : INT64_MAX / 2;
  constexpr size_t kElem = kFloatElem<WT>;
  const unsigned char* wr[R];
  const float* xr[C];
  tile_row_ptrs(w, w_stride, wr);
  tile_row_ptrs(x, x_stride, xr);
  const size_t pf = R * w_stride;  // the next tile's rows
  const int64_t full = k / 16 * 16;
  PV part[R][C][kParts];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      for (int p = 0; p < kParts; ++p) part[r][c][p] = P::zero();
    }
  }
  for (int64_t b = 0; b < full; b += kBlock) {
    const int64_t end = std::min(full, b + kBlock);
    for (int q = 0; q < kPasses; ++q) {
      PV acc[R][C][kAtOnce];
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
          for (int h = 0; h < kAtOnce; ++h) acc[r][c][h] = part[r][c][q + h];
        }
      }
      for (int64_t i = b; i < end; i += 16) {
        for (int h = 0; h < kAtOnce; ++h) {
          const int64_t e = i + kL * (q + h);
          PV xv[C];
          for (int c = 0; c < C; ++c) xv[c] = P::load(xr[c] + e);
          for (int r = 0; r < R; ++r) {
            if constexpr (kPrefetch) {
              if (q == 0 && h == 0) float_prefetch<S, 16 * kElem>(wr[r] + i * kElem + pf);
            }
            const PV wv = float_load_w<S, WT>(wr[r], e);
            for (int c = 0; c < C; ++c) acc[r][c][h] = P::fma(wv, xv[c], acc[r][c][h]);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
          for (int h = 0; h < kAtOnce; ++h) part[r][c][q + h] = acc[r][c][h];
        }
      }
    }
  }
  if (full < k) {
    PV xv[C][kParts];
    for (int c = 0; c < C; ++c) float_load_x_tail<S>(xr[c], full, k - full, xv[c]);
    for (int r = 0; r < R; ++r) {
      PV wv[kParts];
      float_load_w_tail<S, WT>(wr[r], full, k - full, wv);
      for (int c = 0; c < C; ++c) {
        for (int p = 0; p < kParts; ++p) part[r][c][p] = P::fma(wv[p], xv[c][p], part[r][c][p]);
      }
    }
  }
  for (int c = 0; c < C; ++c) {
    float* o = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(out) + c * out_stride);
    for (int r = 0; r < R; ++r) o[r] = S::hsum(S::join(part[r][c]));
  }
}

// float_tile's shapes as quant_tile.h's dot_tile_table wants them.
template <class S, DType WT, bool kPrefetch, bool kSplit>
struct FloatTiles {
  template <int R, int C>
  struct Shape {
    static constexpr FixedTileFn run = &float_tile<S, WT, R, C, kPrefetch, kSplit>;
  };
};

// A strip tile (drivers/float_strip_panel.h): R weight rows x C activation
// rows over one chunk, with float_tile's FMAs per accumulator lane in the
// same order (the widening tile zero-pads the last partial 16 in wb), so
// every output is bit-identical to it. The parts run one pass each over
// the chunk (the later ones read it from L1), R x C registers a pass.
// Accumulators travel as 16 floats, part after part.
template <class S, DType WT, int R, int C, StripMode Mode>
void strip_tile(const StripArgs& a) {
  using P = typename S::Part;
  using PV = typename P::V;
  constexpr int kParts = S::kParts;
  constexpr int kL = P::kLanes;
  constexpr size_t kElem = kFloatElem<WT>;
  constexpr bool kWidens = Mode == StripMode::kWiden || Mode == StripMode::kWidenPrefetch;
  constexpr bool kPrefetches =
      Mode == StripMode::kReadPrefetch || Mode == StripMode::kWidenPrefetch;
  // Locals: the vector stores below may alias anything (vector types are
  // may_alias), so fields read through `a` would be reloaded after each.
  const unsigned char* const w = a.w;
  const unsigned char* const pf = a.pf;
  const size_t ws = a.w_stride;
  float* const wb = a.wb;
  const int64_t kk = a.kk;
  const bool first = a.first, last = a.last;
  float* const ab = a.acc;
  const float* xr[C];
  tile_row_ptrs(a.x, a.x_stride, xr);
  const int64_t full = kk / 16 * 16;
  PV acc[R][C];
  for (int q = 0; q < kParts; ++q) {
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) {
        acc[r][c] = first ? P::zero() : P::load(ab + (r * C + c) * 16 + kL * q);
      }
    }
    for (int64_t e = kL * q; e < full; e += 16) {
      PV xv[C];
      for (int c = 0; c < C; ++c) xv[c] = P::load(xr[c] + e);
      for (int r = 0; r < R; ++r) {
        PV wv;
        if constexpr (kPrefetches) {
          if (q == 0 && (e * kElem) % 64 == 0) {
            _mm_prefetch(reinterpret_cast<const char*>(pf + r * ws + e * kElem), _MM_HINT_T0);
          }
        }
        if constexpr (kWidens) {
          wv = float_load_w<S, WT>(w + r * ws, e);
          P::store(wb + r * kStripPitch + e, wv);
        } else {
          wv = P::load(wb + r * kStripPitch + e);
        }
        for (int c = 0; c < C; ++c) acc[r][c] = P::fma(wv, xv[c], acc[r][c]);
      }
    }
    if (full < kk) {
      PV xv[C];
      for (int c = 0; c < C; ++c) {
        PV t[kParts];
        float_load_x_tail<S>(xr[c], full, kk - full, t);
        xv[c] = t[q];
      }
      for (int r = 0; r < R; ++r) {
        PV wv;
        if constexpr (kWidens) {
          PV t[kParts];
          float_load_w_tail<S, WT>(w + r * ws, full, kk - full, t);
          wv = t[q];
          P::store(wb + r * kStripPitch + full + kL * q, wv);
        } else {
          wv = P::load(wb + r * kStripPitch + full + kL * q);
        }
        for (int c = 0; c < C; ++c) acc[r][c] = P::fma(wv, xv[c], acc[r][c]);
      }
    }
    if (kParts == 1 && last) break;  // reduced from the registers below
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < C; ++c) P::store(ab + (r * C + c) * 16 + kL * q, acc[r][c]);
    }
  }
  if (last) {
    auto* out = reinterpret_cast<unsigned char*>(a.out);
    const size_t os = a.out_stride;
    for (int c = 0; c < C; ++c) {
      float* o = reinterpret_cast<float*>(out + c * os);
      for (int r = 0; r < R; ++r) {
        PV v[kParts];
        if constexpr (kParts == 1) {
          v[0] = acc[r][c];
        } else {
          for (int q = 0; q < kParts; ++q) v[q] = P::load(ab + (r * C + c) * 16 + kL * q);
        }
        o[r] = S::hsum(S::join(v));
      }
    }
  }
}

// The strip tiles of one weight type, as strip_tile_table wants them.
template <class S, DType WT>
struct StripTiles {
  template <int R, int C, StripMode M>
  struct Tile {
    static constexpr StripTileFn fn = &strip_tile<S, WT, R, C, M>;
  };
};

template <class S, class F, DType WT>
void float_panel(int64_t k, const void* w, size_t w_stride, int64_t nr, const void* x,
                 size_t x_stride, int64_t nc, float* out, size_t out_stride) {
  static constexpr StripShape kShape{
      F::kPanelRows, F::kPanelCols, 16,
      &strip_tile_table<StripTiles<S, WT>::template Tile, F::kPanelRows, F::kPanelCols>};
  run_float_strips(kShape, kFloatElem<WT>, k, w, w_stride, nr, x, x_stride, nc, out,
                   out_stride);
}

template <class S, class F, DType WT>
MatMulSpec float_spec(int64_t m) {
  if (m == 1) {
    // Decode: one row per tile where one stream per thread is fastest.
    if (decode_streams() == 1) {
      return {ActFormat::kF32, 1, 1,
              &dot_tile_table<FloatTiles<S, WT, false, false>::template Shape, 1, 1>};
    }
    return {ActFormat::kF32, F::kDecodeRows, 1,
            &dot_tile_table<FloatTiles<S, WT, true, false>::template Shape, F::kDecodeRows, 1>};
  }
  if (m < F::kWideMin) {
    return {ActFormat::kF32, F::kNarrowRows, F::kNarrowCols,
            &dot_tile_table<FloatTiles<S, WT, true, F::kNarrowSplit>::template Shape,
                            F::kNarrowRows, F::kNarrowCols>};
  }
  MatMulSpec spec{ActFormat::kF32, F::kWideRows, F::kWideCols,
                  &dot_tile_table<FloatTiles<S, WT, true, F::kWideSplit>::template Shape,
                                  F::kWideRows, F::kWideCols>};
  if constexpr (WT != DType::F32) {
    if (m >= F::kPanelMin) spec.panel = &float_panel<S, F, WT>;
  }
  return spec;
}

// The spec of a float weight type with shapes F (a FloatShapes; CHECKs the
// type).
template <class S, class F>
MatMulSpec float_mul_mat_spec(DType w, int64_t m) {
  const MatMulSpec spec = dtype_switch<DType::F32, DType::F16, DType::BF16>(
      w, [m](auto wt) { return float_spec<S, F, decltype(wt)::value>(m); });
  FOLIO_CHECK_MSG(spec.tile != nullptr, "no {} float mul_mat tile for {}", S::kName,
                  dtype_name(w));
  return spec;
}

}  // namespace folio::cpu::simd
