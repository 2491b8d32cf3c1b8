// 16 x 16 f32 transpose in AVX-512 registers, for kernels that must keep a
// per-row reduction order while vectorising across rows (gated DeltaNet:
// lanes = state rows, the loop over the reduction index stays sequential).
// Four stages of two-source shuffles: pairs of rows (unpack), quads
// (shuffle_ps), then 128-bit lanes twice (shuffle_f32x4). Pure data movement:
// no rounding anywhere.
#pragma once

#include "backend/cpu/avx512/simd.h"

namespace folio::cpu::avx512 {

// r[i] holds row i on entry and column i on exit.
FOLIO_INLINE_AVX512 void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4q + e] holds, per 128-bit lane L, rows 4q..4q+3 of column 4L + e.
  __m512 u[16];
  for (int q = 0; q < 4; ++q) {
    u[4 * q + 0] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
    u[4 * q + 1] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
    u[4 * q + 2] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
    u[4 * q + 3] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
  }
  for (int e = 0; e < 4; ++e) {
    // Lanes (0, 2) and (1, 3) of rows 0-3 / 4-7, then of rows 8-11 / 12-15.
    const __m512 a02 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88);
    const __m512 a13 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xDD);
    const __m512 b02 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88);
    const __m512 b13 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xDD);
    r[e] = _mm512_shuffle_f32x4(a02, b02, 0x88);       // column e      (lane 0)
    r[8 + e] = _mm512_shuffle_f32x4(a02, b02, 0xDD);   // column 8 + e  (lane 2)
    r[4 + e] = _mm512_shuffle_f32x4(a13, b13, 0x88);   // column 4 + e  (lane 1)
    r[12 + e] = _mm512_shuffle_f32x4(a13, b13, 0xDD);  // column 12 + e (lane 3)
  }
}

}  // namespace folio::cpu::avx512
