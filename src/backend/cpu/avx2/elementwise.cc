// AVX2 element-wise kernels: add / mul (src1 broadcast by modulo, as in
// op.h), scale, the unary ops silu / gelu (tanh form) / sigmoid / exp and
// the gated units swiglu / geglu / swiglu_oai.
//
// Layout: rows (dim 0) contiguous, every other dim through nb[] strides, so
// views and in-place use (dst == src0) work. 8 lanes per step, the row tail
// through vmaskmovps loads / stores (same arithmetic as the full steps).
// Row addressing, broadcasts and the thread split: scalar/row_drivers.h.
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

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/row_drivers.h"

namespace folio::cpu {

namespace {

// ------------------------------------------------------------ add, mul, scale

template <bool kMul>
FOLIO_INLINE_AVX2 __m256 binary_op(__m256 a, __m256 b) {
  return kMul ? _mm256_mul_ps(a, b) : _mm256_add_ps(a, b);
}

// d[i] = a[i] op b[i] for i < n.
template <bool kMul>
FOLIO_TARGET_AVX2 void binary_span(const float* a, const float* b, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(d + i, binary_op<kMul>(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    _mm256_maskstore_ps(
        d + i, m, binary_op<kMul>(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

// d[i] = a[i] op s for i < n.
template <bool kMul>
FOLIO_TARGET_AVX2 void binary_scalar(const float* a, float s, float* d, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, binary_op<kMul>(_mm256_loadu_ps(a + i), sv));
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    _mm256_maskstore_ps(d + i, m, binary_op<kMul>(_mm256_maskload_ps(a + i, m), sv));
  }
}

FOLIO_TARGET_AVX2 void scale_span(const float* x, float s, float bias, float* y, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s), bv = _mm256_set1_ps(bias);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), sv, bv));
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(_mm256_maskload_ps(x + i, m), sv, bv));
  }
}

// ------------------------------------------------------------ activations

enum class Act : int { kSilu, kGelu, kSigmoid, kExp };

template <Act A>
FOLIO_INLINE_AVX2 __m256 activate(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  if constexpr (A == Act::kSilu) {
    return _mm256_div_ps(x, _mm256_add_ps(one, avx2::exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
  } else if constexpr (A == Act::kExp) {
    return avx2::exp(x);
  } else if constexpr (A == Act::kSigmoid) {
    return _mm256_div_ps(one, _mm256_add_ps(one, avx2::exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
  } else {
    // -2u = x * (-2 sqrt(2/pi)) * (1 + 0.044715 x^2)
    const __m256 x2 = _mm256_mul_ps(x, x);
    const __m256 inner = _mm256_fmadd_ps(x2, _mm256_set1_ps(0.044715f), one);
    const __m256 m2u = _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(-1.5957691216057308f)), inner);
    return _mm256_div_ps(x, _mm256_add_ps(one, avx2::exp(m2u)));
  }
}

// y[i] = act(g[i]) (* u[i] when u != nullptr).
template <Act A>
FOLIO_TARGET_AVX2 void act_span(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = activate<A>(_mm256_loadu_ps(g + i));
    if (u != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(u + i));
    _mm256_storeu_ps(y + i, v);
  }
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    __m256 v = activate<A>(_mm256_maskload_ps(g + i, m));
    if (u != nullptr) v = _mm256_mul_ps(v, _mm256_maskload_ps(u + i, m));
    _mm256_maskstore_ps(y + i, m, v);
  }
}

// swiglu_oai (op.h): min(g, L) / (1 + e^(-a min(g, L))) * (clamp(u, -L, L) + 1).
// min/max take the input as their second operand, so a NaN input stays NaN
// as in the scalar std::min / std::clamp.
FOLIO_INLINE_AVX2 __m256 swiglu_oai8(__m256 g, __m256 u, __m256 alpha, __m256 limit) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 x = _mm256_min_ps(limit, g);
  const __m256 y =
      _mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), limit), _mm256_min_ps(limit, u));
  const __m256 e = avx2::exp(_mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), alpha), x));
  return _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_add_ps(y, one));
}

FOLIO_TARGET_AVX2 void swiglu_oai_span(const float* g, const float* u, float* y, int64_t n,
                                       float alpha, float limit) {
  const __m256 a = _mm256_set1_ps(alpha), l = _mm256_set1_ps(limit);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, swiglu_oai8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i), a, l));
  }
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    _mm256_maskstore_ps(
        y + i, m, swiglu_oai8(_mm256_maskload_ps(g + i, m), _mm256_maskload_ps(u + i, m), a, l));
  }
}

constexpr ElementwiseSpanFns kFns{
    binary_span<false>,   binary_span<true>,    binary_scalar<false>, binary_scalar<true>,
    scale_span,           act_span<Act::kSilu>, act_span<Act::kGelu>, act_span<Act::kSigmoid>,
    act_span<Act::kExp>,  swiglu_oai_span,
};

}  // namespace

Status add_avx2(const Op& op, const KernelContext& ctx) {
  return add_rows(op, ctx, kFns);
}
Status mul_avx2(const Op& op, const KernelContext& ctx) {
  return mul_rows(op, ctx, kFns);
}
Status scale_avx2(const Op& op, const KernelContext& ctx) {
  return scale_rows(op, ctx, kFns);
}
Status unary_avx2(const Op& op, const KernelContext& ctx) {
  return unary_rows(op, ctx, kFns);
}
Status glu_avx2(const Op& op, const KernelContext& ctx) {
  return glu_rows(op, ctx, kFns);
}

}  // namespace folio::cpu
