// What the two families of AVX2 packed panels (packed_legacy.cc,
// packed_kquant.cc) share: the loops over a panel's steps (32-element blocks
// or 256-element super-blocks), the PanelFn that walks a panel's two halves
// of 8 rows in tiles of activation rows, the MultiPanelFn (decode) that runs
// a family on each of its panels in turn (packed/packed_mul_mat.h), and the
// lookup from a packed type to these. A family is a type K with
//   K::kCols                      activation rows per prefill tile
//   K::kStepElems, K::kStepBytes  elements of K and panel bytes per step
//   K::XRow, K::x_row(x, k)       an activation row as the step reads it
//   K::template step<C, kAhead>(blk, h, xr, b, acc)
//                                 step b (panel bytes at blk) of half h x C
//                                 activation rows into acc[C] (lane n: row
//                                 8h + n); kAhead: also read ahead in the
//                                 panel's stream (decode, half 0).
// Decode takes one weight stream at a time, each reading ahead in its own
// stream: with 8-lane registers, the accumulators of several panels (2
// halves x rows each) no longer fit in registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx2/int_dot.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "backend/cpu/drivers/dtype_switch.h"
#include "core/target.h"

namespace folio::cpu::avx2 {

// Stores lanes [0, rows) of v at o (rows <= 0: nothing).
FOLIO_INLINE_AVX2 void store_rows(float* o, __m256 v, int rows) {
  if (rows >= 8) {
    _mm256_storeu_ps(o, v);
  } else if (rows > 0) {
    _mm256_maskstore_ps(o, lanes(rows), v);
  }
}

FOLIO_INLINE_AVX2 __m256i bcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm256_set1_epi32(v);
}

// out(c, r) for r < nr of a decode kernel's accumulators: rows 0-7 in
// acc[0][c], rows 8-15 in acc[1][c].
template <int C>
FOLIO_INLINE_AVX2 void store_halves(const __m256 (&acc)[2][C], float* out, size_t os, int nr) {
  for (int c = 0; c < C; ++c) {
    auto* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os);
    store_rows(o, acc[0][c], nr);
    store_rows(o + 8, acc[1][c], nr - 8);
  }
}

// C activation rows x half h of the panel (its first `rows` rows): out(c, r)
// of the whole panel at (char*)out + c * os + 4 r.
template <typename K, int C>
FOLIO_TARGET_AVX2 void half_cols(int64_t k, const uint8_t* panel, int h, int rows,
                                 const uint8_t* x, size_t xs, float* out, size_t os) {
  const int64_t n = k / K::kStepElems;
  typename K::XRow xr[C];
  __m256 acc[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = K::x_row(x + c * xs, k);
    acc[c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n; ++b) {
    K::template step<C, false>(panel + b * K::kStepBytes, h, xr, b, acc);
  }
  for (int c = 0; c < C; ++c) {
    store_rows(reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os) + 8 * h, acc[c],
               rows);
  }
}

// Decode: C (<= 2) activation rows x the whole panel (its first nr rows),
// both halves per step.
template <typename K, int C>
FOLIO_TARGET_AVX2 void whole_panel(int64_t k, const uint8_t* panel, const uint8_t* x, size_t xs,
                                   float* out, size_t os, int nr) {
  const int64_t n = k / K::kStepElems;
  typename K::XRow xr[C];
  __m256 acc[2][C];
  for (int c = 0; c < C; ++c) {
    xr[c] = K::x_row(x + c * xs, k);
    acc[0][c] = acc[1][c] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n; ++b) {
    const uint8_t* blk = panel + b * K::kStepBytes;
    K::template step<C, true>(blk, 0, xr, b, acc[0]);
    K::template step<C, false>(blk, 1, xr, b, acc[1]);
  }
  store_halves<C>(acc, out, os, nr);
}

// The last `rest` (< C) activation rows of a half panel.
template <typename K, int C>
FOLIO_INLINE_AVX2 void tail_cols(int rest, int64_t k, const uint8_t* panel, int h, int rows,
                                 const uint8_t* x, size_t xs, float* out, size_t os) {
  if constexpr (C > 1) {
    if (rest == C - 1) {
      half_cols<K, C - 1>(k, panel, h, rows, x, xs, out, os);
    } else {
      tail_cols<K, C - 1>(rest, k, panel, h, rows, x, xs, out, os);
    }
  }
}

// A PanelFn: both halves of the panel (those with rows), each in tiles of
// K::kCols activation rows and one smaller tile for the rest.
template <typename K>
FOLIO_TARGET_AVX2 void panel_cols(int64_t k, const void* panel, const void* x, size_t xs, int nc,
                                  int nr, float* out, size_t os) {
  constexpr int C = K::kCols;
  const auto* p = static_cast<const uint8_t*>(panel);
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* ob = reinterpret_cast<uint8_t*>(out);
  for (int h = 0; h < 2; ++h) {
    const int rows = nr - 8 * h;
    if (rows <= 0) break;
    int c = 0;
    for (; c + C <= nc; c += C) {
      half_cols<K, C>(k, p, h, rows, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os);
    }
    if (c < nc) {
      tail_cols<K, C>(nc - c, k, p, h, rows, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os),
                      os);
    }
  }
}

// A MultiPanelFn: whole_panel on each of the np panels.
template <typename K>
FOLIO_TARGET_AVX2 void decode_panels(int64_t k, const void* panels, size_t pb, int np, int nr_last,
                                     const void* x, size_t xs, int nc, float* out, size_t os) {
  const auto* p = static_cast<const uint8_t*>(panels);
  const auto* xb = static_cast<const uint8_t*>(x);
  for (int i = 0; i < np; ++i) {
    const int nr = i == np - 1 ? nr_last : 16;
    if (nc == 1) {
      whole_panel<K, 1>(k, p + i * pb, xb, xs, out + 16 * i, os, nr);
    } else {
      whole_panel<K, 2>(k, p + i * pb, xb, xs, out + 16 * i, os, nr);
    }
  }
}

// The panel and decode functions of family K<P, D> for the packed types Ps
// (nullptr for another type), with the byte dot policy `dot` names.
template <template <DType, typename> class K, DType... Ps>
struct PanelFamily {
  static PanelFn panel(DType p, Avx2Dot dot) {
    return with_dot(dot, [p](auto d) {
      return dtype_switch<Ps...>(p, [](auto pt) -> PanelFn {
        return &panel_cols<K<decltype(pt)::value, decltype(d)>>;
      });
    });
  }
  static MultiPanelFn decode(DType p, Avx2Dot dot) {
    return with_dot(dot, [p](auto d) {
      return dtype_switch<Ps...>(p, [](auto pt) -> MultiPanelFn {
        return &decode_panels<K<decltype(pt)::value, decltype(d)>>;
      });
    });
  }
};

}  // namespace folio::cpu::avx2
