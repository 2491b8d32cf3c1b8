// Dense FFN: x [E, n] -> gate, up [F, n] -> act(gate) * up [F, n] ->
// down [E, n]. act is SiLU (llama, qwen) or tanh-GELU (gemma). With gate and
// up in one matrix (phi3, or joined at load: LayerWeights::gate_up_joint),
// one product [2F, n] whose halves the GLU reads (joined: one fused op
// where the device has it, ForwardContext::mul_mat_glu).
// Ungated (cfg.ffn_relu_sqr, nemotron_h): up [F, n] (+ bias) -> relu(up)^2 ->
// down [E, n] (+ bias). On the fused one-token path (ResidualFusion) the
// gate/up product normalises x itself and down adds its output to x.
#include "model/blocks/blocks.h"

namespace folio::model {

TensorView ffn_activation(ForwardContext& ctx, const ModelConfig& cfg, const TensorView& gate,
                          const TensorView& up) {
  if (!cfg.ffn_relu_sqr) return ctx.glu(gate, up, cfg.ffn_glu);
  const TensorView h = ctx.unary(up, UnaryKind::kRelu);  // ggml's relu then sqr: x * x
  return ctx.mul(h, h, h);
}

TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x_in, ResidualFusion* rf) {
  // Gate and up in one matrix [E, 2F]: the file's (phi3) or joined at load.
  const TensorView gate_up = cfg.ffn_relu_sqr           ? TensorView{}
                             : !l.gate_up_joint.empty() ? l.gate_up_joint
                             : l.ffn_gate.empty()       ? l.ffn_up
                                                        : TensorView{};
  const bool fused_norm = rf != nullptr && !rf->norm.empty();
  if (fused_norm && !gate_up.empty()) {  // the norm in the gate/up product
    const TensorView h =
        ctx.rms_norm_mul_mat_glu(gate_up, rf->x, rf->norm, rf->eps, cfg.ffn_glu);  // [F, n]
    if (rf->add_out && ctx.mul_mat_add(l.ffn_down, h, rf->x)) {
      rf->added = true;  // x += down h
      return rf->x;
    }
    return ctx.mul_mat(l.ffn_down, h);  // [E, n]
  }
  const TensorView x = fused_norm ? ctx.rms_norm(rf->x, rf->norm, rf->eps) : x_in;
  if (cfg.ffn_relu_sqr) {
    const TensorView up = ctx.mul_mat(l.ffn_up, x);  // [F, n]
    if (!l.ffn_up_b.empty()) ctx.add(up, l.ffn_up_b, up);
    const TensorView down = ctx.mul_mat(l.ffn_down, ffn_activation(ctx, cfg, {}, up));  // [E, n]
    if (!l.ffn_down_b.empty()) ctx.add(down, l.ffn_down_b, down);
    return down;
  }
  if (!gate_up.empty()) {
    const TensorView h = ctx.mul_mat_glu(gate_up, x, cfg.ffn_glu);  // [F, n]
    if (rf != nullptr && rf->add_out && ctx.mul_mat_add(l.ffn_down, h, rf->x)) {
      rf->added = true;  // x += down h
      return rf->x;
    }
    return ctx.mul_mat(l.ffn_down, h);  // [E, n]
  }
  const TensorView gate = ctx.mul_mat(l.ffn_gate, x);   // [F, n]
  const TensorView up = ctx.mul_mat(l.ffn_up, x);       // [F, n]
  const TensorView h = ctx.glu(gate, up, cfg.ffn_glu);  // [F, n]
  return ctx.mul_mat(l.ffn_down, h);                    // [E, n]
}

TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x) {
  return dense_ffn(ctx, cfg, l, x, nullptr);
}

}  // namespace folio::model
