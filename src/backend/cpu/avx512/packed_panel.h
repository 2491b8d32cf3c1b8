// What the two families of AVX-512 packed panels (packed_legacy.cc,
// packed_kquant.cc) share: the PanelFn that walks a panel in tiles of
// activation rows over a family's steps (32-element blocks or 256-element
// super-blocks), and the decode entry, a MultiPanelFn (packed/
// packed_mul_mat.h) that picks the instance of a family's decode kernel for
// the call's panel and row counts. A prefill family is a type K with
//   K::kCols                      activation rows per tile
//   K::kStepElems, K::kStepBytes  elements of K and panel bytes per step
//   K::XRow, K::x_row(x, k)       an activation row as the step reads it
//   K::template step<C>(blk, xr, b, acc)
//                                 step b (panel bytes at blk) of the 16 rows
//                                 x C activation rows into acc[C] (lane n:
//                                 row n).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/avx512/simd.h"
#include "core/target.h"

namespace folio::cpu::avx512 {

// out(c, r) of panel i = lane r of acc[i][c]; the last panel stores the rows
// of last_mask only.
template <int NP, int C>
FOLIO_INLINE_AVX512 void store_panels(const __m512 (&acc)[NP][C], float* out, size_t os,
                                      __mmask16 last_mask) {
  for (int c = 0; c < C; ++c) {
    auto* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os);
    for (int i = 0; i < NP; ++i)
      _mm512_mask_storeu_ps(o + 16 * i, i == NP - 1 ? last_mask : __mmask16(0xFFFF), acc[i][c]);
  }
}

// C activation rows x the panel's rows (out(c, r) at (char*)out + c * os +
// 4 r, for the rows of mask).
template <typename K, int C>
FOLIO_TARGET_AVX512 void panel_tile(int64_t k, const uint8_t* panel, const uint8_t* x, size_t xs,
                                    float* out, size_t os, __mmask16 mask) {
  const int64_t n = k / K::kStepElems;
  typename K::XRow xr[C];
  __m512 acc[C];
  for (int c = 0; c < C; ++c) {
    xr[c] = K::x_row(x + c * xs, k);
    acc[c] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n; ++b) K::template step<C>(panel + b * K::kStepBytes, xr, b, acc);
  for (int c = 0; c < C; ++c)
    _mm512_mask_storeu_ps(reinterpret_cast<uint8_t*>(out) + c * os, mask, acc[c]);
}

// The last `rest` (< C) activation rows.
template <typename K, int C>
FOLIO_INLINE_AVX512 void tail_tile(int rest, int64_t k, const uint8_t* panel, const uint8_t* x,
                                   size_t xs, float* out, size_t os, __mmask16 mask) {
  if constexpr (C > 1) {
    if (rest == C - 1) {
      panel_tile<K, C - 1>(k, panel, x, xs, out, os, mask);
    } else {
      tail_tile<K, C - 1>(rest, k, panel, x, xs, out, os, mask);
    }
  }
}

// A PanelFn: tiles of K::kCols activation rows and one smaller tile for the rest.
template <typename K>
FOLIO_TARGET_AVX512 void panel_cols(int64_t k, const void* panel, const void* x, size_t xs, int nc,
                                    int nr, float* out, size_t os) {
  constexpr int C = K::kCols;
  const auto* p = static_cast<const uint8_t*>(panel);
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* ob = reinterpret_cast<uint8_t*>(out);
  const __mmask16 mask = static_cast<__mmask16>((1u << nr) - 1);
  int c = 0;
  for (; c + C <= nc; c += C)
    panel_tile<K, C>(k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
  if (c < nc) {
    tail_tile<K, C>(nc - c, k, p, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os), os, mask);
  }
}

// K is a family's kernel: K::template run<NP, C>(k, panels, pb, x, xs, out,
// os, last_mask) multiplies NP consecutive panels (pb bytes apart) with C
// activation rows (xs bytes apart); out(c, r) of panel i at
// (char*)out + c * os + 4 * (16 * i + r); the last panel stores the rows of
// last_mask.
template <typename K>
FOLIO_TARGET_AVX512 void decode_panels(int64_t k, const void* panels, size_t pb, int np,
                                       int nr_last, const void* x, size_t xs, int nc, float* out,
                                       size_t os) {
  const auto* p = static_cast<const uint8_t*>(panels);
  const auto* xb = static_cast<const uint8_t*>(x);
  const __mmask16 mask = static_cast<__mmask16>((1u << nr_last) - 1);
  using Fn =
      void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t, __mmask16);
  static constexpr Fn kTable[2][4] = {
      {K::template run<1, 1>, K::template run<2, 1>, K::template run<3, 1>, K::template run<4, 1>},
      {K::template run<1, 2>, K::template run<2, 2>, K::template run<3, 2>, K::template run<4, 2>},
  };
  kTable[nc - 1][np - 1](k, p, pb, xb, xs, out, os, mask);
}

}  // namespace folio::cpu::avx512
