// The per-head scalars of the Mamba-2 selective scan (kSsmScan, backend/op.h),
// shared by the reference and the SIMD kernels so that every tier computes
// them with the same libm calls: the softplus of the time step (ggml's f32
// definition and threshold) and the decay exp(softplus(dt) * A).
#pragma once

#include <cmath>

namespace folio::cpu {

inline float ssm_scan_softplus(float dt) {
  return dt > 20.0f ? dt : std::log(1.0f + std::exp(dt));
}

inline float ssm_scan_decay(float sp, float a) {
  const float e = sp * a;
  return std::exp(e);
}

}  // namespace folio::cpu
