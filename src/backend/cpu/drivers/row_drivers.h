// Row drivers shared by the SIMD tiers of the row-wise ops (RMS norm, fused
// add + RMS norm, soft_max) and the element-wise ops (add, mul, scale,
// unary, glu): parameter decoding, row addressing (broadcasts included) and
// the split across the thread pool are written once here; each tier
// supplies only the vector loops over one row.
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

// The element-wise ops' spans over n contiguous floats (d may alias a or g).
struct ElementwiseSpanFns {
  void (*add)(const float* a, const float* b, float* d, int64_t n);  // d = a + b
  void (*mul)(const float* a, const float* b, float* d, int64_t n);  // d = a * b
  void (*add_scalar)(const float* a, float s, float* d, int64_t n);  // d = a + s
  void (*mul_scalar)(const float* a, float s, float* d, int64_t n);  // d = a * s
  void (*scale)(const float* x, float s, float bias, float* y, int64_t n);  // y = x s + bias
  // y = act(g), times u where u != nullptr (the gated units).
  void (*silu)(const float* g, const float* u, float* y, int64_t n);
  void (*gelu)(const float* g, const float* u, float* y, int64_t n);  // tanh form
  void (*sigmoid)(const float* g, const float* u, float* y, int64_t n);
  void (*exp)(const float* g, const float* u, float* y, int64_t n);
  // swiglu_oai (op.h) of gate g and up u.
  void (*swiglu_oai)(const float* g, const float* u, float* y, int64_t n, float alpha,
                     float limit);
};

// kAdd / kMul (src1 broadcast by modulo, op.h), kScale, kUnary (the kinds
// supports_unary_simd takes), kGlu (supports_glu_simd): rows along dim 0,
// every other dim through nb[] strides, so views and in-place use work.
Status add_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns);
Status mul_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns);
Status scale_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns);
Status unary_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns);
Status glu_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns);

}  // namespace folio::cpu
