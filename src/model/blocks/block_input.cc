// A block's input and output products under a ResidualFusion (blocks.h):
// the input norm folded into every product that reads the input, the
// residual add into the output product, each where a backend fuses it.
#include "model/blocks/blocks.h"

namespace folio::model {

BlockInput::BlockInput(ForwardContext& ctx, const TensorView& x, const ResidualFusion* rf)
    : ctx_(&ctx) {
  if (rf != nullptr && !rf->norm.empty()) {
    x_ = rf->x;
    norm_ = rf->norm;
    eps_ = rf->eps;
  } else {
    x_ = x;
    value_ = x;
  }
}

TensorView BlockInput::mul_mat(const TensorView& w) {
  if (value_.empty() && !norm_.empty()) {
    const TensorView y = ctx_->rms_norm_mul_mat_if_fused(w, x_, norm_, eps_);
    if (!y.empty()) return y;
  }
  return ctx_->mul_mat(w, value());
}

const TensorView& BlockInput::value() {
  if (value_.empty()) value_ = ctx_->rms_norm(x_, norm_, eps_);
  return value_;
}

TensorView output_product(ForwardContext& ctx, const TensorView& w, const TensorView& y,
                          ResidualFusion* rf) {
  if (rf != nullptr && rf->add_out && ctx.mul_mat_add(w, y, rf->x)) {
    rf->added = true;  // x += w y
    return rf->x;
  }
  return ctx.mul_mat(w, y);
}

}  // namespace folio::model
