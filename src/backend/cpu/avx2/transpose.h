// 8 x 8 f32 transpose in AVX2 registers, for kernels that vectorise across
// rows while keeping each row's sequential reduction order (gated DeltaNet,
// the Mamba-2 scan: lanes = state rows) and for the conv's window loads.
// Three stages of two-source shuffles: pairs of rows (unpack), quads
// (shuffle_ps), then 128-bit lanes (permute2f128). Pure data movement: no
// rounding anywhere.
#pragma once

#include "backend/cpu/avx2/simd.h"

namespace folio::cpu::avx2 {

// r[i] holds row i on entry and column i on exit.
FOLIO_INLINE_AVX2 void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4 q + e]: per 128-bit lane L, rows 4q..4q+3 of column 4L + e.
  for (int q = 0; q < 2; ++q) {
    u[4 * q + 0] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
    u[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
    u[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
    u[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
  }
  for (int e = 0; e < 4; ++e) {
    r[e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x20);      // column e
    r[4 + e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x31);  // column 4 + e
  }
}

}  // namespace folio::cpu::avx2
