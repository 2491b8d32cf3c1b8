#include "backend/cpu/drivers/row_drivers.h"

#include <cmath>

#include "backend/cpu/drivers/parallel.h"

namespace folio::cpu {

namespace {

template <typename T>
T* flat_row(const TensorView& t, int64_t r) {
  return t.row<T>(r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2]));
}

float inverse_rms(float sum_sq, int64_t n, float eps) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(sum_sq) / static_cast<double>(n) +
                                            static_cast<double>(eps)));
}

}  // namespace

Status rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& x = op.src[0];  // [ne0, rows...]
  const float* w =
      op.src[1].empty() ? nullptr : static_cast<const float*>(op.src[1].data);  // [ne0]
  const int64_t n = x.ne[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = flat_row<const float>(x, r);
      fns.scale_row(xr, inverse_rms(fns.sum_squares(xr, nullptr, nullptr, n), n, eps), w,
                    flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

Status add_rms_norm_rows(const Op& op, const KernelContext& ctx, const RmsNormRowFns& fns) {
  const float eps = op.p<RmsNormParams>().eps;
  const TensorView& a = op.src[0];  // [ne0, rows...]
  const TensorView& b = op.src[1];  // like a
  const float* w =
      op.src[2].empty() ? nullptr : static_cast<const float*>(op.src[2].data);  // [ne0]
  const int64_t n = a.ne[0];
  run_range(ctx, a.nrows(), a.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* s = flat_row<float>(op.dst2, r);
      const float sum =
          fns.sum_squares(flat_row<const float>(a, r), flat_row<const float>(b, r), s, n);
      fns.scale_row(s, inverse_rms(sum, n, eps), w, flat_row<float>(op.dst, r), n);
    }
  });
  return Status();
}

Status soft_max_rows(const Op& op, const KernelContext& ctx, SoftmaxRowFn row) {
  const float scale = op.p<SoftMaxParams>().scale;
  const TensorView& x = op.src[0];     // [ne0, ne1, ne2, ne3]
  const TensorView& mask = op.src[1];  // optional [ne0, ne1, m2, m3]
  const int64_t ne1 = x.ne[1], ne2 = x.ne[2];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElementsExp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
      const float* mr =
          mask.empty() ? nullptr : mask.row<const float>(i1, i2 % mask.ne[2], i3 % mask.ne[3]);
      row(x.row<const float>(i1, i2, i3), mr, scale, op.dst.row<float>(i1, i2, i3), x.ne[0]);
    }
  });
  return Status();
}

namespace {

using BinarySpan = void (*)(const float*, const float*, float*, int64_t);
using ScalarSpan = void (*)(const float*, float, float*, int64_t);
using ActSpan = void (*)(const float*, const float*, float*, int64_t);

Status binary_rows(const Op& op, const KernelContext& ctx, BinarySpan span, ScalarSpan scalar) {
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
        scalar(ar, br[0], dr, ne0);
      } else {
        for (int64_t i = 0; i < ne0; i += nb0) span(ar + i, br, dr + i, nb0);
      }
    }
  });
  return Status();
}

ActSpan act_span(const ElementwiseSpanFns& fns, UnaryKind kind) {
  switch (kind) {
    case UnaryKind::kGelu: return fns.gelu;
    case UnaryKind::kSigmoid: return fns.sigmoid;
    case UnaryKind::kExp: return fns.exp;
    default: return fns.silu;
  }
}

}  // namespace

Status add_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns) {
  return binary_rows(op, ctx, fns.add, fns.add_scalar);
}

Status mul_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns) {
  return binary_rows(op, ctx, fns.mul, fns.mul_scalar);
}

Status scale_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns) {
  const auto& p = op.p<ScaleParams>();
  const TensorView& x = op.src[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElements, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      fns.scale(flat_row<const float>(x, r), p.scale, p.bias, flat_row<float>(op.dst, r), x.ne[0]);
    }
  });
  return Status();
}

Status unary_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns) {
  const ActSpan fn = act_span(fns, op.p<UnaryParams>().kind);
  const TensorView& x = op.src[0];
  run_range(ctx, x.nrows(), x.nelements() >= kMinParallelElementsExp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      fn(flat_row<const float>(x, r), nullptr, flat_row<float>(op.dst, r), x.ne[0]);
    }
  });
  return Status();
}

Status glu_rows(const Op& op, const KernelContext& ctx, const ElementwiseSpanFns& fns) {
  const auto& p = op.p<GluParams>();
  const ActSpan fn = p.kind == GluKind::kSwiGlu ? fns.silu : fns.gelu;
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
      } else {  // one row [gate, up] (or [up, gate] when swapped)
        const float* row = flat_row<const float>(s0, r);
        gate = p.swapped ? row + n : row;
        up = p.swapped ? row : row + n;
      }
      if (p.kind == GluKind::kSwiGluOai) {
        fns.swiglu_oai(gate, up, flat_row<float>(d, r), n, p.alpha, p.limit);
      } else {
        fn(gate, up, flat_row<float>(d, r), n);
      }
    }
  });
  return Status();
}

}  // namespace folio::cpu
