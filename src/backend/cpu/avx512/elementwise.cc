// AVX-512 element-wise kernels: add / mul (src1 broadcast by modulo, as in
// op.h), scale, the unary ops silu / gelu (tanh form) / sigmoid / exp and
// the gated units swiglu / geglu / swiglu_oai.
//
// Layout: rows (dim 0) contiguous, every other dim through nb[] strides, so
// views and in-place use (dst == src0) work. 16 lanes per step, the row tail
// through masked loads / stores. Rows are independent and split across the
// thread pool for large tensors (scalar/row_drivers.h).
//
// Accuracy: add / mul / scale are one IEEE operation per element (add and mul
// are bit-identical to the reference). The activations use the vector exp of
// simd.h (about 2 ulp) and an exact division:
//   silu(x)    = x / (1 + e^-x)
//   sigmoid(x) = 1 / (1 + e^-x)
//   gelu(x)    = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3)
// where the last is the tanh form 0.5 x (1 + tanh u) rewritten exactly
// (0.5 (1 + tanh u) = 1 / (1 + e^-2u)), which avoids tanh and cancellation.
#include <cstdint>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

FOLIO_INLINE_AVX512 __mmask16 tail_mask(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1);
}

// ------------------------------------------------------------ add, mul, scale

template <bool kMul>
FOLIO_INLINE_AVX512 __m512 binary_op(__m512 a, __m512 b) {
  return kMul ? _mm512_mul_ps(a, b) : _mm512_add_ps(a, b);
}

// d[i] = a[i] op b[i] for i < n.
template <bool kMul>
FOLIO_TARGET_AVX512 void binary_span(const float* a, const float* b, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(d + i, binary_op<kMul>(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        d + i, m,
        binary_op<kMul>(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

// d[i] = a[i] op s for i < n.
template <bool kMul>
FOLIO_TARGET_AVX512 void binary_scalar(const float* a, float s, float* d, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, binary_op<kMul>(_mm512_loadu_ps(a + i), sv));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(d + i, m, binary_op<kMul>(_mm512_maskz_loadu_ps(m, a + i), sv));
  }
}

FOLIO_TARGET_AVX512 void scale_span(const float* x, float s, float bias, float* y, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(bias);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), sv, bv));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), sv, bv));
  }
}

// ------------------------------------------------------------ activations

enum class Act : int { kSilu, kGelu, kSigmoid, kExp };

template <Act A>
FOLIO_INLINE_AVX512 __m512 activate(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  if constexpr (A == Act::kSilu) {
    return _mm512_div_ps(x, _mm512_add_ps(one, avx512::exp(_mm512_sub_ps(_mm512_setzero_ps(), x))));
  } else if constexpr (A == Act::kExp) {
    return avx512::exp(x);
  } else if constexpr (A == Act::kSigmoid) {
    return _mm512_div_ps(one,
                         _mm512_add_ps(one, avx512::exp(_mm512_sub_ps(_mm512_setzero_ps(), x))));
  } else {
    // -2u = x * (-2 sqrt(2/pi)) * (1 + 0.044715 x^2)
    const __m512 x2 = _mm512_mul_ps(x, x);
    const __m512 inner = _mm512_fmadd_ps(x2, _mm512_set1_ps(0.044715f), one);
    const __m512 m2u = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(-1.5957691216057308f)), inner);
    return _mm512_div_ps(x, _mm512_add_ps(one, avx512::exp(m2u)));
  }
}

// y[i] = act(g[i]) (* u[i] when u != nullptr).
template <Act A>
FOLIO_TARGET_AVX512 void act_span(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = activate<A>(_mm512_loadu_ps(g + i));
    if (u != nullptr) v = _mm512_mul_ps(v, _mm512_loadu_ps(u + i));
    _mm512_storeu_ps(y + i, v);
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    __m512 v = activate<A>(_mm512_maskz_loadu_ps(m, g + i));
    if (u != nullptr) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, u + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

// swiglu_oai (op.h): min(g, L) / (1 + e^(-a min(g, L))) * (clamp(u, -L, L) + 1).
// min/max take the input as their second operand, so a NaN input stays NaN
// as in the scalar std::min / std::clamp.
FOLIO_INLINE_AVX512 __m512 swiglu_oai16(__m512 g, __m512 u, __m512 alpha, __m512 limit) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 x = _mm512_min_ps(limit, g);
  const __m512 y =
      _mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), limit), _mm512_min_ps(limit, u));
  const __m512 e = avx512::exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), alpha), x));
  return _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), _mm512_add_ps(y, one));
}

FOLIO_TARGET_AVX512 void swiglu_oai_span(const float* g, const float* u, float* y, int64_t n,
                                         float alpha, float limit) {
  const __m512 a = _mm512_set1_ps(alpha), l = _mm512_set1_ps(limit);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(y + i, swiglu_oai16(_mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i), a, l));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(
        y + i, m,
        swiglu_oai16(_mm512_maskz_loadu_ps(m, g + i), _mm512_maskz_loadu_ps(m, u + i), a, l));
  }
}

constexpr ElementwiseSpanFns kFns{
    binary_span<false>,   binary_span<true>,    binary_scalar<false>, binary_scalar<true>,
    scale_span,           act_span<Act::kSilu>, act_span<Act::kGelu>, act_span<Act::kSigmoid>,
    act_span<Act::kExp>,  swiglu_oai_span,
};

}  // namespace

Status add_avx512(const Op& op, const KernelContext& ctx) {
  return add_rows(op, ctx, kFns);
}
Status mul_avx512(const Op& op, const KernelContext& ctx) {
  return mul_rows(op, ctx, kFns);
}
Status scale_avx512(const Op& op, const KernelContext& ctx) {
  return scale_rows(op, ctx, kFns);
}
Status unary_avx512(const Op& op, const KernelContext& ctx) {
  return unary_rows(op, ctx, kFns);
}
Status glu_avx512(const Op& op, const KernelContext& ctx) {
  return glu_rows(op, ctx, kFns);
}

}  // namespace folio::cpu
