// The x86 SIMD kernel tiers this machine can run (AVX2, AVX-512), lowest
// first: the SIMD kernel tests run each case on every one of them (none on
// ARM, whose tiers the parity harness checks).
#pragma once

#include <vector>

#include "core/cpu_features.h"

namespace folio::backend_testing {

inline std::vector<Isa> simd_isas() {
  std::vector<Isa> v;
  if (active_isa() >= Isa::kAvx2) v.push_back(Isa::kAvx2);
  if (active_isa() >= Isa::kAvx512) v.push_back(Isa::kAvx512);
  return v;
}

}  // namespace folio::backend_testing
