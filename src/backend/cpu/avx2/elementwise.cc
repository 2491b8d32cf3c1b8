// AVX2 element-wise kernels: add / mul (src1 broadcast by modulo, as in
// op.h), scale, the unary ops silu / gelu (tanh form) / sigmoid / exp and
// the gated units swiglu / geglu / swiglu_oai.
//
// Layout: rows (dim 0) contiguous, every other dim through nb[] strides, so
// views and in-place use (dst == src0) work. 8 lanes per step, the row tail
// through vmaskmovps loads / stores (same arithmetic as the full steps).
// Rows are independent and split across the thread pool for large tensors.
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
#include "backend/cpu/scalar/parallel.h"

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

template <bool kMul>
Status binary(const Op& op, const KernelContext& ctx) {
  const TensorView& a = op.src[0];  // [ne0, ne1, ne2, ne3]
  const TensorView& b = op.src[1];  // each dim divides a's
  const TensorView& d = op.dst;     // like a
  const int64_t ne0 = a.ne[0], nb0 = b.ne[0];
  run_range(ctx, a.nrows(), a.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
      const float* ar = a.row<const float>(i1, i2, i3);
      const float* br = b.row<const float>(i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
      float* dr = d.row<float>(i1, i2, i3);
      if (nb0 == 1) {
        binary_scalar<kMul>(ar, br[0], dr, ne0);
      } else {
        for (int64_t i = 0; i < ne0; i += nb0) binary_span<kMul>(ar + i, br, dr + i, nb0);
      }
    }
  });
  return Status();
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

using ActSpanFn = void (*)(const float*, const float*, float*, int64_t);

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

ActSpanFn act_span_for(Act a) {
  switch (a) {
    case Act::kSilu:
      return act_span<Act::kSilu>;
    case Act::kGelu:
      return act_span<Act::kGelu>;
    case Act::kSigmoid:
      return act_span<Act::kSigmoid>;
    case Act::kExp:
      return act_span<Act::kExp>;
  }
  return act_span<Act::kSilu>;
}

// Flat row r of t.
template <typename T>
T* flat_row(const TensorView& t, int64_t r) {
  return t.row<T>(r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2]));
}

}  // namespace

Status add_avx2(const Op& op, const KernelContext& ctx) {
  return binary<false>(op, ctx);
}
Status mul_avx2(const Op& op, const KernelContext& ctx) {
  return binary<true>(op, ctx);
}

Status scale_avx2(const Op& op, const KernelContext& ctx) {
  const auto& p = op.p<ScaleParams>();
  const TensorView& x = op.src[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      scale_span(flat_row<const float>(x, r), p.scale, p.bias, flat_row<float>(op.dst, r), x.ne[0]);
    }
  });
  return Status();
}

Status unary_avx2(const Op& op, const KernelContext& ctx) {
  const UnaryKind kind = op.p<UnaryParams>().kind;
  const ActSpanFn fn = act_span_for(kind == UnaryKind::kSilu      ? Act::kSilu
                                    : kind == UnaryKind::kGelu    ? Act::kGelu
                                    : kind == UnaryKind::kSigmoid ? Act::kSigmoid
                                                                  : Act::kExp);
  const TensorView& x = op.src[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElementsExp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      fn(flat_row<const float>(x, r), nullptr, flat_row<float>(op.dst, r), x.ne[0]);
  });
  return Status();
}

Status glu_avx2(const Op& op, const KernelContext& ctx) {
  const auto& p = op.p<GluParams>();
  const ActSpanFn fn = act_span_for(p.kind == GluKind::kSwiGlu ? Act::kSilu : Act::kGelu);
  const TensorView& s0 = op.src[0];
  const TensorView& s1 = op.src[1];
  const TensorView& d = op.dst;  // [n, rows...]
  const int64_t n = d.ne[0];
  run_range(ctx, d.nrows(), d.nelements() >= kMinParallelElementsExp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* gate;
      const float* up;
      if (!s1.empty()) {
        gate = flat_row<const float>(s0, r);
        up = flat_row<const float>(s1, r);
      } else {
        const float* row = flat_row<const float>(s0, r);
        gate = p.swapped ? row + n : row;
        up = p.swapped ? row : row + n;
      }
      if (p.kind == GluKind::kSwiGluOai) {
        swiglu_oai_span(gate, up, flat_row<float>(d, r), n, p.alpha, p.limit);
      } else {
        fn(gate, up, flat_row<float>(d, r), n);
      }
    }
  });
  return Status();
}

}  // namespace folio::cpu
