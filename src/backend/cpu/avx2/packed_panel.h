// What the two families of AVX2 packed panels (packed_legacy.cc,
// packed_kquant.cc) share: the PanelFn that walks a panel's two halves of 8
// rows in tiles of activation rows, and the MultiPanelFn (decode) that runs
// a family's decode kernel on each of its panels in turn (packed/
// packed_mul_mat.h). A family is a type K with
//   K::kCols                      activation rows per prefill tile
//   K::template cols<C>(k, panel, h, rows, x, xs, out, os)
//                                 C activation rows x half h of the panel
//                                 (its first `rows` rows; out(c, r) of the
//                                 whole panel at (char*)out + c * os + 4 r)
//   K::template run<C>(k, panel, x, xs, out, os, nr)
//                                 decode: C (<= 2) rows x the whole panel.
// Decode takes one weight stream at a time, each reading ahead in its own stream: with
// 8-lane registers, the accumulators of several panels (2 halves x rows
// each) no longer fit, and on a Zen 3 EPYC one stream decoded faster than
// two or four (Q4_K_X16 46 / 41 / 38 tok/s, Q4_0_X16 49 / 46 / 46 on a
// 0.66B model, 2 threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/avx2/simd.h"
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

// The last `rest` (< C) activation rows of a half panel.
template <typename K, int C>
FOLIO_INLINE_AVX2 void tail_cols(int rest, int64_t k, const uint8_t* panel, int h, int rows,
                                 const uint8_t* x, size_t xs, float* out, size_t os) {
  if constexpr (C > 1) {
    if (rest == C - 1) {
      K::template cols<C - 1>(k, panel, h, rows, x, xs, out, os);
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
      K::template cols<C>(k, p, h, rows, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os),
                          os);
    }
    if (c < nc) {
      tail_cols<K, C>(nc - c, k, p, h, rows, xb + c * xs, xs, reinterpret_cast<float*>(ob + c * os),
                      os);
    }
  }
}

// A MultiPanelFn: K::template run<C> on each of the np panels.
template <typename K>
FOLIO_TARGET_AVX2 void decode_panels(int64_t k, const void* panels, size_t pb, int np, int nr_last,
                                     const void* x, size_t xs, int nc, float* out, size_t os) {
  const auto* p = static_cast<const uint8_t*>(panels);
  const auto* xb = static_cast<const uint8_t*>(x);
  for (int i = 0; i < np; ++i) {
    const int nr = i == np - 1 ? nr_last : 16;
    if (nc == 1) {
      K::template run<1>(k, p + i * pb, xb, xs, out + 16 * i, os, nr);
    } else {
      K::template run<2>(k, p + i * pb, xb, xs, out + 16 * i, os, nr);
    }
  }
}

}  // namespace folio::cpu::avx2
