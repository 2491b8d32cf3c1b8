// Dense gated FFN: x [E, n] -> gate, up [F, n] -> act(gate) * up [F, n] ->
// down [E, n]. act is SiLU (llama, qwen) or tanh-GELU (gemma).
#include "model/blocks/blocks.h"

namespace folio::model {

TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x) {
  const TensorView gate = ctx.mul_mat(l.ffn_gate, x);   // [F, n]
  const TensorView up = ctx.mul_mat(l.ffn_up, x);       // [F, n]
  const TensorView h = ctx.glu(gate, up, cfg.ffn_glu);  // [F, n]
  return ctx.mul_mat(l.ffn_down, h);                    // [E, n]
}

}  // namespace folio::model
