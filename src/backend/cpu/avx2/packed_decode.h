// The decode entry of the AVX2 packed panels (packed_legacy.cc,
// packed_kquant.cc): a MultiPanelFn (packed/packed_mul_mat.h) that picks the
// instance of a family's kernel for the call's panel and row counts. An
// AVX2 register holds 8 lanes, so each 16-row panel is two halves of 8 rows
// (rows 8h .. 8h + 7): acc[i][h][c] is panel i, half h, activation row c.
#pragma once

#include <cstddef>
#include <cstdint>

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

// out(c, r) of panel i = lane r % 8 of acc[i][r / 8][c]; the last panel
// stores its first nr_last rows only.
template <int NP, int C>
FOLIO_INLINE_AVX2 void store_panels(const __m256 (&acc)[NP][2][C], float* out, size_t os,
                                    int nr_last) {
  for (int c = 0; c < C; ++c) {
    auto* o = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(out) + c * os);
    for (int i = 0; i < NP; ++i) {
      const int rows = i == NP - 1 ? nr_last : 16;
      for (int h = 0; h < 2; ++h) store_rows(o + 16 * i + 8 * h, acc[i][h][c], rows - 8 * h);
    }
  }
}

// K is a family's kernel: K::template run<NP, C>(k, panels, pb, x, xs, out,
// os, nr_last) multiplies NP consecutive panels (pb bytes apart) with C
// activation rows (xs bytes apart); out(c, r) of panel i at
// (char*)out + c * os + 4 * (16 * i + r); the last panel stores nr_last rows.
template <typename K>
FOLIO_TARGET_AVX2 void decode_panels(int64_t k, const void* panels, size_t pb, int np, int nr_last,
                                     const void* x, size_t xs, int nc, float* out, size_t os) {
  const auto* p = static_cast<const uint8_t*>(panels);
  const auto* xb = static_cast<const uint8_t*>(x);
  using Fn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t, int);
  static constexpr Fn kTable[2][4] = {
      {K::template run<1, 1>, K::template run<2, 1>, K::template run<3, 1>, K::template run<4, 1>},
      {K::template run<1, 2>, K::template run<2, 2>, K::template run<3, 2>, K::template run<4, 2>},
  };
  kTable[nc - 1][np - 1](k, p, pb, xb, xs, out, os, nr_last);
}

}  // namespace folio::cpu::avx2
