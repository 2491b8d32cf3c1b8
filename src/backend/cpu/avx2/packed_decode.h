// The decode entry of the AVX2 packed panels (packed_legacy.cc,
// packed_kquant.cc): a MultiPanelFn (packed/packed_mul_mat.h) that runs a
// family's kernel for the call's row count on each of its panels in turn.
// One weight stream at a time, each reading ahead in its own stream: with
// 8-lane registers, the accumulators of several panels (2 halves x rows
// each) no longer fit, and on a Zen 3 EPYC one stream decoded faster than
// two or four (Q4_K_X16 46 / 41 / 38 tok/s, Q4_0_X16 49 / 46 / 46 on a
// 0.66B model, 2 threads).
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

// K is a family's kernel: K::template run<C>(k, panel, x, xs, out, os, nr)
// multiplies one panel with C activation rows (xs bytes apart) and stores
// out(c, r) at (char*)out + c * os + 4 * r for r < nr.
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
