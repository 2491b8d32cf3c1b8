// The per-head scalars of the Mamba-2 selective scan (kSsmScan and its fused
// decode form kSsmScanUpdate, backend/op.h), shared by the reference and the
// SIMD kernels so that every tier computes them with the same libm calls:
// the softplus of the time step (ggml's f32 definition and threshold) and
// the decay exp(softplus(dt) * A); and A[h] read flat from any shape.
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/tensor_view.h"

namespace folio::cpu {

inline float ssm_scan_softplus(float dt) {
  return dt > 20.0f ? dt : std::log(1.0f + std::exp(dt));
}

inline float ssm_scan_decay(float sp, float a) {
  const float e = sp * a;
  return std::exp(e);
}

// A holds H values in any shape ([1, H] in GGUF files): value h, read flat.
inline float ssm_scan_a(const TensorView& a, int64_t h) {
  const int64_t i0 = h % a.ne[0];
  const int64_t i1 = (h / a.ne[0]) % a.ne[1];
  const int64_t i2 = (h / (a.ne[0] * a.ne[1])) % a.ne[2];
  const int64_t i3 = h / (a.ne[0] * a.ne[1] * a.ne[2]);
  return *a.at<const float>(i0, i1, i2, i3);
}

}  // namespace folio::cpu
