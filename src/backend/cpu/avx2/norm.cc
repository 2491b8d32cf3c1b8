// AVX2 RMS norm and fused residual add + RMS norm, one row (dim 0) at a time:
//   rms_norm:     y = x * (1 / sqrt(mean(x^2) + eps)) [* w]
//   add_rms_norm: s = a + b -> dst2; y = rms_norm(s) [* w] -> dst
// Two passes per row: the sum of squares in two 8-lane f32 FMA accumulators
// (vmaskmovps tail), the inverse root in double (one rounding), then the
// scaled (and weighted) row. Each element is read before its own output is
// written, so dst / dst2 may alias the inputs. Rows are split across the
// thread pool.
#include <cmath>
#include <cstdint>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/parallel.h"

namespace folio::cpu {

namespace {

// s = a + b (stored to s when b != nullptr, else s = a); returns sum s^2.
FOLIO_TARGET_AVX2 float sum_squares(const float* a, const float* b, float* s, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 v0 = _mm256_loadu_ps(a + i), v1 = _mm256_loadu_ps(a + i + 8);
    if (b != nullptr) {
      v0 = _mm256_add_ps(v0, _mm256_loadu_ps(b + i));
      v1 = _mm256_add_ps(v1, _mm256_loadu_ps(b + i + 8));
      _mm256_storeu_ps(s + i, v0);
      _mm256_storeu_ps(s + i + 8, v1);
    }
    acc0 = _mm256_fmadd_ps(v0, v0, acc0);
    acc1 = _mm256_fmadd_ps(v1, v1, acc1);
  }
  for (; i < n; i += 8) {
    const __m256i m = avx2::lanes(n - i);
    __m256 v = _mm256_maskload_ps(a + i, m);
    if (b != nullptr) {
      v = _mm256_add_ps(v, _mm256_maskload_ps(b + i, m));
      _mm256_maskstore_ps(s + i, m, v);
    }
    acc0 = _mm256_fmadd_ps(v, v, acc0);
  }
  return avx2::hsum(_mm256_add_ps(acc0, acc1));
}

// y = x * inv [* w]
FOLIO_TARGET_AVX2 void scale_row(const float* x, float inv, const float* w, float* y, int64_t n) {
  const __m256 iv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), iv);
    if (w != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(y + i, v);
  }
  if (i < n) {
    const __m256i m = avx2::lanes(n - i);
    __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), iv);
    if (w != nullptr) v = _mm256_mul_ps(v, _mm256_maskload_ps(w + i, m));
    _mm256_maskstore_ps(y + i, m, v);
  }
}

template <typename T>
T* flat_row(const TensorView& t, int64_t r) {
  return t.row<T>(r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2]));
}

float inverse_rms(float sum_sq, int64_t n, float eps) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_sq) / static_cast<double>(n) +
                                            static_cast<double>(eps)));
}

}  // namespace

Status rms_norm_avx2(const Op& op, const KernelContext& ctx) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& x = op.src[0];  // [ne0, rows...]
  const float* w =
      op.src[1].empty() ? nullptr : static_cast<const float*>(op.src[1].data);  // [ne0]
  const int64_t n = x.ne[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = flat_row<const float>(x, r);
      scale_row(xr, inverse_rms(sum_squares(xr, nullptr, nullptr, n), n, eps), w,
                flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

Status add_rms_norm_avx2(const Op& op, const KernelContext& ctx) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& a = op.src[0];  // [ne0, rows...]
  const TensorView& b = op.src[1];  // like a
  const float* w =
      op.src[2].empty() ? nullptr : static_cast<const float*>(op.src[2].data);  // [ne0]
  const int64_t n = a.ne[0];
  run_range(ctx, a.nrows(), a.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* s = flat_row<float>(op.dst2, r);
      const float sum = sum_squares(flat_row<const float>(a, r), flat_row<const float>(b, r), s, n);
      scale_row(s, inverse_rms(sum, n, eps), w, flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

}  // namespace folio::cpu
