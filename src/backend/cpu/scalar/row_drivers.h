// Row drivers shared by the SIMD tiers of the row-wise ops (RMS norm, fused
// add + RMS norm, soft_max): parameter decoding, row addressing (mask
// broadcast included) and the split across the thread pool are written
// once here; each tier supplies only the vector loops over one row.
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

struct RmsNormRowFns {
  // s = a + b stored to s when b != nullptr (else s = a); returns sum s^2.
  float (*sum_squares)(const float* a, const float* b, float* s, int64_t n);
  // y = x * inv [* w] (w may be null).
  void (*scale_row)(const float* x, float inv, const float* w, float* y, int64_t n);
};

// rms_norm: y = x * (1 / sqrt(mean(x^2) + eps)) [* w], the inverse root in
// double (one rounding). add_rms_norm: s = a + b -> dst2, then rms_norm(s).
Status rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns);
Status add_rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns);

// One soft_max row: y = softmax(x * scale [+ mask]) over n elements; a row
// with nothing visible (max = -inf) becomes zeros. dst may alias x.
using SoftmaxRowFn = void (*)(const float* x, const float* mask, float scale, float* y, int64_t n);

// soft_max over dim 0; the mask [ne0, ne1, m2, m3] broadcasts over dims 2
// and 3 by modulo, as in the reference.
Status soft_max_rows(const Op& op, const KernelContext& ctx, SoftmaxRowFn row);

}  // namespace folio::cpu
