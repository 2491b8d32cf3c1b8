// Mixture of experts with a shared expert (qwen3next, qwen35moe, glm4moe), as
// llama.cpp's qwen3next build_layer_ffn: the routed experts (moe_ffn), plus
// the shared expert's dense FFN (SiLU-gated; relu^2 and ungated for
// nemotron_h_moe: cfg.ffn_relu_sqr), scaled per token by
// sigmoid(ffn_gate_inp_shexp . x) where that gate exists (cfg.shexp_gated;
// glm4moe and granitehybrid have none: the shared output is added as is).
// Shapes: x [E, n]; shared hidden [Fs, n]; gate [1, n] broadcast over the E
// rows. The routed output is contiguous and new, so in a one-token step
// the shared down product may add into it in place where a device fuses
// it (kMulMatAdd; gated: the sigmoid and the scale in the same epilogue;
// the same bits as the product, the sigmoid, the mul and the add). The
// gate's product reads x as the shared expert's first product does, so
// the two share a barrier stage.
#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

TensorView moe_with_shared_expert(ForwardContext& ctx, const ModelConfig& cfg,
                                  const LayerWeights& l, const TensorView& x) {
  TensorView out = moe_ffn(ctx, cfg, l, x);  // [E, n]
  if (cfg.n_ff_shexp <= 0) return out;
  TensorView h;  // [Fs, n]
  const TensorView g = cfg.shexp_gated
                           ? ctx.mul_mat(l.ffn_gate_inp_shexp, x)  // [E] = [E, 1] -> [1, n]
                           : TensorView{};
  if (!l.gate_up_shexp_joint.empty() && !cfg.ffn_relu_sqr) {  // joined at load: one product
    h = ctx.mul_mat_glu(l.gate_up_shexp_joint, x, cfg.ffn_glu);
  } else {
    const TensorView gate =
        l.ffn_gate_shexp.empty() ? TensorView{} : ctx.mul_mat(l.ffn_gate_shexp, x);  // [Fs, n]
    const TensorView up = ctx.mul_mat(l.ffn_up_shexp, x);                           // [Fs, n]
    h = ffn_activation(ctx, cfg, gate, up);
  }
  if (x.ne[1] == 1 && ctx.mul_mat_add(l.ffn_down_shexp, h, out, g)) return out;
  const TensorView shared = ctx.mul_mat(l.ffn_down_shexp, h);  // [E, n]
  if (cfg.shexp_gated) {
    ctx.unary(g, UnaryKind::kSigmoid, g);
    ctx.mul(shared, g, shared);
  }
  ctx.add(out, shared, out);
  return out;
}

TensorView moe_or_dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                            int il, const TensorView& x, ResidualFusion* rf) {
  if (!cfg.is_moe(il)) return dense_ffn(ctx, cfg, l, x, rf);
  BlockInput in(ctx, x, rf);
  return moe_with_shared_expert(ctx, cfg, l, in.value());
}

}  // namespace folio::model
