// Dense gated FFN: x [E, n] -> gate, up [F, n] -> act(gate) * up [F, n] ->
// down [E, n]. act is SiLU (llama, qwen) or tanh-GELU (gemma). With gate and
// up in one matrix (phi3), one product [2F, n] whose halves the GLU reads.
#include "model/blocks/blocks.h"

namespace folio::model {

TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x) {
  if (l.ffn_gate.empty()) {
    const TensorView gate_up = ctx.mul_mat(l.ffn_up, x);            // [2F, n]
    const TensorView h = ctx.glu(gate_up, TensorView{}, cfg.ffn_glu);  // [F, n]
    return ctx.mul_mat(l.ffn_down, h);                              // [E, n]
  }
  const TensorView gate = ctx.mul_mat(l.ffn_gate, x);   // [F, n]
  const TensorView up = ctx.mul_mat(l.ffn_up, x);       // [F, n]
  const TensorView h = ctx.glu(gate, up, cfg.ffn_glu);  // [F, n]
  return ctx.mul_mat(l.ffn_down, h);                    // [E, n]
}

}  // namespace folio::model
