// The decode entry of the AVX-512 packed panels (packed_legacy.cc,
// packed_kquant.cc): a MultiPanelFn (packed/packed_mul_mat.h) that picks the
// instance of a family's NP-panel kernel for the call's panel count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/avx512/simd.h"
#include "core/target.h"

namespace folio::cpu::avx512 {

// One activation row x NP consecutive panels, pb bytes apart; out(r) of
// panel i at out + 16 * i + r; the last panel stores the rows of last_mask.
using PanelsFn = void (*)(int64_t k, const uint8_t* panels, size_t pb, const uint8_t* x, float* out,
                          __mmask16 last_mask);

template <PanelsFn F1, PanelsFn F2, PanelsFn F3, PanelsFn F4>
FOLIO_TARGET_AVX512 void decode_panels(int64_t k, const void* panels, size_t pb, int np,
                                       int nr_last, const void* x, float* out) {
  const auto* p = static_cast<const uint8_t*>(panels);
  const auto* xb = static_cast<const uint8_t*>(x);
  const __mmask16 mask = static_cast<__mmask16>((1u << nr_last) - 1);
  switch (np) {
    case 4:
      F4(k, p, pb, xb, out, mask);
      break;
    case 3:
      F3(k, p, pb, xb, out, mask);
      break;
    case 2:
      F2(k, p, pb, xb, out, mask);
      break;
    default:
      F1(k, p, pb, xb, out, mask);
      break;
  }
}

}  // namespace folio::cpu::avx512
