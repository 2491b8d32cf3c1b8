// The decode entry of the AVX-512 packed panels (packed_legacy.cc,
// packed_kquant.cc): a MultiPanelFn (packed/packed_mul_mat.h) that picks the
// instance of a family's kernel for the call's panel and row counts.
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
