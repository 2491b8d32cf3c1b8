// 16 x 16 f32 tile transposes for the traits types of f32x16.h. Pure data
// movement, no rounding: the recurrent kernels (simd/gated_delta_net.h,
// simd/ssm_scan.h, simd/ssm_conv.h) use them to turn 16 state rows (or
// channel rows) into vectors whose lanes are the rows, so each row keeps its
// own sequential reduction order.
//   transpose16(S, src, lds, dst, ldd): dst[j * ldd + i] = src[i * lds + j],
//     i, j < 16, memory to memory (leading dimensions in floats). AVX2 moves
//     one 8 x 8 quarter at a time (8 ymm in, 8 out: no spills), AVX-512 the
//     whole tile in registers, NEON one 4 x 4 block at a time.
//   transpose16(r): r[i] holds row i on entry and column i on exit, in
//     registers: worth it where transpose16_in_registers<S>() (AVX-512's 32
//     zmm hold a tile and the work around it; AVX2's 16 ymm and NEON's 32 q
//     would spill: kernels use the memory form there).
//   RegTile16<S> (transpose16_in_registers<S>() tiers): 16 rows for the
//     in-register transpose; get(j) / set(j) / transpose(). A plain array of
//     zmm, which GCC keeps in registers where an array of S::V (a struct
//     around one zmm) goes through the stack.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include "backend/cpu/avx2/transpose.h"
#include "backend/cpu/avx512/transpose.h"
#include "backend/cpu/simd/f32x16_avx2.h"
#include "backend/cpu/simd/f32x16_avx512.h"
#else
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/simd/f32x16_neon.h"
#endif

namespace folio::cpu::simd {

template <class S>
constexpr bool transpose16_in_registers() {
  return S::kTier == KernelTier::kAvx512;
}

#if defined(__x86_64__)

FOLIO_INLINE_AVX2 void transpose16(Avx2, const float* src, int64_t lds, float* dst, int64_t ldd) {
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      __m256 q[8];
      for (int i = 0; i < 8; ++i) q[i] = _mm256_loadu_ps(src + (8 * a + i) * lds + 8 * b);
      avx2::transpose8(q);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (8 * b + j) * ldd + 8 * a, q[j]);
    }
  }
}

FOLIO_INLINE_AVX512 void transpose16(Avx512, const float* src, int64_t lds, float* dst,
                                     int64_t ldd) {
  __m512 q[16];
  for (int i = 0; i < 16; ++i) q[i] = _mm512_loadu_ps(src + i * lds);
  avx512::transpose16(q);
  for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + j * ldd, q[j]);
}

// Row block (rows 8 a .., half b) is the 8 x 8 tile that becomes columns
// 8 b .. of half a.
FOLIO_INLINE_AVX2 void transpose16(Avx2::V r[16]) {
  __m256 t[4][8];
  for (int i = 0; i < 8; ++i) {
    t[0][i] = r[i].lo;
    t[1][i] = r[i].hi;
    t[2][i] = r[8 + i].lo;
    t[3][i] = r[8 + i].hi;
  }
  for (auto& q : t) avx2::transpose8(q);
  for (int j = 0; j < 8; ++j) {
    r[j] = {t[0][j], t[2][j]};
    r[8 + j] = {t[1][j], t[3][j]};
  }
}

FOLIO_INLINE_AVX512 void transpose16(Avx512::V r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; ++i) t[i] = r[i].v;
  avx512::transpose16(t);
  for (int i = 0; i < 16; ++i) r[i].v = t[i];
}

#endif

template <class S>
struct RegTile16;  // transpose16_in_registers<S>() tiers only

#if defined(__x86_64__)
template <>
struct RegTile16<Avx512> {
  __m512 r[16];
  FOLIO_SIMD_AVX512_OP Avx512::V get(int j) const { return {r[j]}; }
  FOLIO_SIMD_AVX512_OP void set(int j, Avx512::V v) { r[j] = v.v; }
  FOLIO_SIMD_AVX512_OP void transpose() { avx512::transpose16(r); }
};
#else

FOLIO_INLINE_NEON void transpose16(Neon, const float* src, int64_t lds, float* dst, int64_t ldd) {
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      float32x4_t q[4];
      for (int i = 0; i < 4; ++i) q[i] = vld1q_f32(src + (4 * a + i) * lds + 4 * b);
      neon::transpose4(q);
      for (int j = 0; j < 4; ++j) vst1q_f32(dst + (4 * b + j) * ldd + 4 * a, q[j]);
    }
  }
}

// Tile (rows 4 a .., q register b) becomes q register a of columns 4 b ..
FOLIO_INLINE_NEON void transpose16(Neon::V r[16]) {
  float32x4_t t[4][4][4];
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      for (int i = 0; i < 4; ++i) t[a][b][i] = r[4 * a + i].q[b];
      neon::transpose4(t[a][b]);
    }
  }
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      for (int j = 0; j < 4; ++j) r[4 * b + j].q[a] = t[a][b][j];
    }
  }
}

#endif

}  // namespace folio::cpu::simd
