// Element-wise unary references, evaluated in double and rounded once:
//   silu      x / (1 + e^-x)
//   gelu      0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (tanh approximation)
//   gelu_erf  0.5 x (1 + erf(x / sqrt(2)))
//   sigmoid   1 / (1 + e^-x)
//   softplus  x > 20 ? x : log(1 + e^x)   (ggml's definition and threshold)
//   exp, tanh, relu (x > 0 ? x : 0), neg (-x)
// dst may alias src.
#include <cmath>
#include <numbers>

#include "backend/cpu/ref/ref_util.h"

namespace folio::ref {

double unary_value(UnaryKind kind, double x) {
  switch (kind) {
    case UnaryKind::kSilu:
      return x / (1.0 + std::exp(-x));
    case UnaryKind::kGelu: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k * x * (1.0 + 0.044715 * x * x)));
    }
    case UnaryKind::kGeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
    case UnaryKind::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryKind::kSoftplus:
      return x > 20.0 ? x : std::log1p(std::exp(x));
    case UnaryKind::kExp:
      return std::exp(x);
    case UnaryKind::kTanh:
      return std::tanh(x);
    case UnaryKind::kRelu:
      return x > 0.0 ? x : 0.0;
    case UnaryKind::kNeg:
      return -x;
  }
  return x;
}

Status unary(const Op& op, const KernelContext& /*ctx*/) {
  const UnaryKind kind = op.p<UnaryParams>().kind;
  const TensorView& x = op.src[0];
  for (int64_t r = 0; r < x.nrows(); ++r) {
    const float* xr = row_ptr<const float>(x, r);
    float* dr = row_ptr<float>(op.dst, r);
    for (int64_t i = 0; i < x.ne[0]; ++i) dr[i] = static_cast<float>(unary_value(kind, xr[i]));
  }
  return Status();
}

}  // namespace folio::ref
