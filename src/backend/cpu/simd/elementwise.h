// Element-wise kernels over the traits type (f32x16.h): add / mul (src1
// broadcast by modulo, as in op.h), scale, the unary ops silu / gelu (tanh
// form) / sigmoid / exp and the gated units swiglu / geglu / swiglu_oai.
//
// Layout: rows (dim 0) contiguous, every other dim through nb[] strides, so
// views and in-place use (dst == src0) work. 16 lanes per step, the row tail
// through masked loads / stores (the same arithmetic as the full steps).
// Row addressing, broadcasts and the thread split: drivers/row_drivers.h.
//
// Accuracy: add / mul / scale are one IEEE operation per element (add and mul
// are bit-identical to the reference). The activations use the traits' exp
// (about 2 ulp) and an exact division:
//   silu(x)    = x / (1 + e^-x)
//   sigmoid(x) = 1 / (1 + e^-x)
//   gelu(x)    = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3)
// where the last is the tanh form 0.5 x (1 + tanh u) rewritten exactly
// (0.5 (1 + tanh u) = 1 / (1 + e^-2u)), which avoids tanh and cancellation.
// Same bytes on every tier.
#pragma once

#include <cstdint>

#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/simd/kernels.h"

namespace folio::cpu::simd {

// d = f(a) over n elements (f: V -> V).
template <class S, class F>
__attribute__((always_inline)) inline void ew_span1(const float* a, float* d, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) S::store(d + i, f(S::load(a + i)));
  if (i < n) {
    const typename S::M m = S::first(n - i);
    S::store(d + i, f(S::load(a + i, m)), m);
  }
}

// d = f(a, b) over n elements (f: V, V -> V).
template <class S, class F>
__attribute__((always_inline)) inline void ew_span2(const float* a, const float* b, float* d,
                                                    int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) S::store(d + i, f(S::load(a + i), S::load(b + i)));
  if (i < n) {
    const typename S::M m = S::first(n - i);
    S::store(d + i, f(S::load(a + i, m), S::load(b + i, m)), m);
  }
}

// ------------------------------------------------------------ add, mul, scale

template <class S, bool kMul>
void ew_binary_span(const float* a, const float* b, float* d, int64_t n) {
  using V = typename S::V;
  ew_span2<S>(a, b, d, n, [](V x, V y) { return kMul ? x * y : x + y; });
}

template <class S, bool kMul>
void ew_binary_scalar(const float* a, float s, float* d, int64_t n) {
  using V = typename S::V;
  const V sv = S::set1(s);
  ew_span1<S>(a, d, n, [sv](V x) { return kMul ? x * sv : x + sv; });
}

template <class S>
void ew_scale_span(const float* x, float s, float bias, float* y, int64_t n) {
  using V = typename S::V;
  const V sv = S::set1(s), bv = S::set1(bias);
  ew_span1<S>(x, y, n, [sv, bv](V v) { return S::fma(v, sv, bv); });
}

// ------------------------------------------------------------ activations

enum class EwAct : int { kSilu, kGelu, kSigmoid, kExp };

template <class S, EwAct A>
__attribute__((always_inline)) inline typename S::V ew_activate(typename S::V x) {
  const typename S::V one = S::set1(1.0f);
  if constexpr (A == EwAct::kSilu) {
    return x / (one + S::exp(S::zero() - x));
  } else if constexpr (A == EwAct::kExp) {
    return S::exp(x);
  } else if constexpr (A == EwAct::kSigmoid) {
    return one / (one + S::exp(S::zero() - x));
  } else {
    // -2u = x * (-2 sqrt(2/pi)) * (1 + 0.044715 x^2)
    const typename S::V inner = S::fma(x * x, S::set1(0.044715f), one);
    const typename S::V m2u = (x * S::set1(-1.5957691216057308f)) * inner;
    return x / (one + S::exp(m2u));
  }
}

// y = act(g) (* u when u != nullptr).
template <class S, EwAct A>
void ew_act_span(const float* g, const float* u, float* y, int64_t n) {
  using V = typename S::V;
  if (u == nullptr) {
    ew_span1<S>(g, y, n, [](V x) { return ew_activate<S, A>(x); });
  } else {
    ew_span2<S>(g, u, y, n, [](V x, V v) { return ew_activate<S, A>(x) * v; });
  }
}

// swiglu_oai (op.h): min(g, L) / (1 + e^(-a min(g, L))) * (clamp(u, -L, L) + 1).
// min/max take the input as their second operand, so a NaN input stays NaN
// as in the scalar std::min / std::clamp.
template <class S>
void ew_swiglu_oai_span(const float* g, const float* u, float* y, int64_t n, float alpha,
                        float limit) {
  using V = typename S::V;
  const V a = S::set1(alpha), l = S::set1(limit), one = S::set1(1.0f);
  ew_span2<S>(g, u, y, n, [a, l, one](V gv, V uv) {
    const V x = S::min(l, gv);
    const V c = S::max(S::zero() - l, S::min(l, uv));
    const V e = S::exp((S::zero() - a) * x);
    return (x / (one + e)) * (c + one);
  });
}

template <class S>
inline constexpr ElementwiseSpanFns kEwFns{
    ew_binary_span<S, false>,
    ew_binary_span<S, true>,
    ew_binary_scalar<S, false>,
    ew_binary_scalar<S, true>,
    ew_scale_span<S>,
    ew_act_span<S, EwAct::kSilu>,
    ew_act_span<S, EwAct::kGelu>,
    ew_act_span<S, EwAct::kSigmoid>,
    ew_act_span<S, EwAct::kExp>,
    ew_swiglu_oai_span<S>,
};

// kAdd, kMul, kScale, kUnary, kGlu: the row driver Rows (add_rows, ...,
// drivers/row_drivers.h) over this tier's spans.
template <class S, ElementwiseRowsFn Rows>
Status elementwise(const Op& op, const KernelContext& ctx) {
  return Rows(op, ctx, kEwFns<S>);
}

}  // namespace folio::cpu::simd
