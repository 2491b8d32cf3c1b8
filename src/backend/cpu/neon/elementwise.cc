// NEON element-wise kernels: add / mul (src1 broadcast by modulo, as in
// op.h), scale, the unary ops silu / gelu (tanh form) / sigmoid / exp and
// the gated units swiglu / geglu / swiglu_oai. The vector loops of the AVX2
// kernels (avx2/elementwise.cc) on 4 lanes, with the same formulas:
//   silu(x)    = x / (1 + e^-x)
//   sigmoid(x) = 1 / (1 + e^-x)
//   gelu(x)    = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3)
// (the tanh form rewritten exactly, 0.5 (1 + tanh u) = 1 / (1 + e^-2u)),
// neon::exp (the AVX2 exp's arithmetic) and an exact division. add / mul
// are one IEEE operation per element, bit-identical to the reference. A row
// tail of 1-3 elements goes through a zero-padded 4-lane buffer, so it gets
// the same arithmetic as the full steps. Row addressing, broadcasts and the
// thread split: scalar/row_drivers.h.
#include <cstdint>
#include <cstring>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {
namespace {

constexpr int64_t kLanes = 4;

// Applies f (4 lanes in, 4 out) to n elements of a (and b where f takes
// two inputs) into d; the tail through padded buffers.
template <typename F>
FOLIO_INLINE_NEON void span1(const float* a, float* d, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vst1q_f32(d + i, f(vld1q_f32(a + i)));
  if (i < n) {
    float ta[kLanes] = {}, td[kLanes];
    std::memcpy(ta, a + i, static_cast<size_t>(n - i) * sizeof(float));
    vst1q_f32(td, f(vld1q_f32(ta)));
    std::memcpy(d + i, td, static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <typename F>
FOLIO_INLINE_NEON void span2(const float* a, const float* b, float* d, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vst1q_f32(d + i, f(vld1q_f32(a + i), vld1q_f32(b + i)));
  if (i < n) {
    float ta[kLanes] = {}, tb[kLanes] = {}, td[kLanes];
    std::memcpy(ta, a + i, static_cast<size_t>(n - i) * sizeof(float));
    std::memcpy(tb, b + i, static_cast<size_t>(n - i) * sizeof(float));
    vst1q_f32(td, f(vld1q_f32(ta), vld1q_f32(tb)));
    std::memcpy(d + i, td, static_cast<size_t>(n - i) * sizeof(float));
  }
}

// ------------------------------------------------------------ add, mul, scale

void add_span(const float* a, const float* b, float* d, int64_t n) {
  span2(a, b, d, n, [](float32x4_t x, float32x4_t y) { return vaddq_f32(x, y); });
}
void mul_span(const float* a, const float* b, float* d, int64_t n) {
  span2(a, b, d, n, [](float32x4_t x, float32x4_t y) { return vmulq_f32(x, y); });
}
void add_scalar(const float* a, float s, float* d, int64_t n) {
  const float32x4_t sv = vdupq_n_f32(s);
  span1(a, d, n, [sv](float32x4_t x) { return vaddq_f32(x, sv); });
}
void mul_scalar(const float* a, float s, float* d, int64_t n) {
  const float32x4_t sv = vdupq_n_f32(s);
  span1(a, d, n, [sv](float32x4_t x) { return vmulq_f32(x, sv); });
}
void scale_span(const float* x, float s, float bias, float* y, int64_t n) {
  const float32x4_t sv = vdupq_n_f32(s), bv = vdupq_n_f32(bias);
  span1(x, y, n, [sv, bv](float32x4_t v) { return vfmaq_f32(bv, v, sv); });  // x s + bias, fused
}

// ------------------------------------------------------------ activations

enum class Act : int { kSilu, kGelu, kSigmoid, kExp };

template <Act A>
FOLIO_INLINE_NEON float32x4_t activate(float32x4_t x) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  if constexpr (A == Act::kSilu) {
    return vdivq_f32(x, vaddq_f32(one, neon::exp(vnegq_f32(x))));
  } else if constexpr (A == Act::kExp) {
    return neon::exp(x);
  } else if constexpr (A == Act::kSigmoid) {
    return vdivq_f32(one, vaddq_f32(one, neon::exp(vnegq_f32(x))));
  } else {
    // -2u = x * (-2 sqrt(2/pi)) * (1 + 0.044715 x^2)
    const float32x4_t inner = vfmaq_f32(one, vmulq_f32(x, x), vdupq_n_f32(0.044715f));
    const float32x4_t m2u = vmulq_f32(vmulq_f32(x, vdupq_n_f32(-1.5957691216057308f)), inner);
    return vdivq_f32(x, vaddq_f32(one, neon::exp(m2u)));
  }
}

// y = act(g) (* u when u != nullptr).
template <Act A>
void act_span(const float* g, const float* u, float* y, int64_t n) {
  if (u == nullptr) {
    span1(g, y, n, [](float32x4_t x) { return activate<A>(x); });
  } else {
    span2(g, u, y, n, [](float32x4_t x, float32x4_t v) { return vmulq_f32(activate<A>(x), v); });
  }
}

// swiglu_oai (op.h): min(g, L) / (1 + e^(-a min(g, L))) * (clamp(u, -L, L) + 1);
// a NaN input stays NaN (vminq / vmaxq propagate it).
void swiglu_oai_span(const float* g, const float* u, float* y, int64_t n, float alpha,
                     float limit) {
  const float32x4_t a = vdupq_n_f32(alpha), l = vdupq_n_f32(limit), one = vdupq_n_f32(1.0f);
  span2(g, u, y, n, [&](float32x4_t gv, float32x4_t uv) {
    const float32x4_t x = vminq_f32(l, gv);
    const float32x4_t c = vmaxq_f32(vnegq_f32(l), vminq_f32(l, uv));
    const float32x4_t e = neon::exp(vmulq_f32(vnegq_f32(a), x));
    return vmulq_f32(vdivq_f32(x, vaddq_f32(one, e)), vaddq_f32(c, one));
  });
}

constexpr ElementwiseSpanFns kFns{
    add_span,           mul_span,           add_scalar,            mul_scalar,
    scale_span,         act_span<Act::kSilu>, act_span<Act::kGelu>, act_span<Act::kSigmoid>,
    act_span<Act::kExp>, swiglu_oai_span,
};

}  // namespace

Status add_neon(const Op& op, const KernelContext& ctx) {
  return add_rows(op, ctx, kFns);
}
Status mul_neon(const Op& op, const KernelContext& ctx) {
  return mul_rows(op, ctx, kFns);
}
Status scale_neon(const Op& op, const KernelContext& ctx) {
  return scale_rows(op, ctx, kFns);
}
Status unary_neon(const Op& op, const KernelContext& ctx) {
  return unary_rows(op, ctx, kFns);
}
Status glu_neon(const Op& op, const KernelContext& ctx) {
  return glu_rows(op, ctx, kFns);
}

}  // namespace folio::cpu
