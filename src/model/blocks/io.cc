// Model input and output: token embeddings, the gather of output rows and
// the LM head with optional logit scaling (granite: times 1 / logit_scale)
// and final soft-capping (cap * tanh(logits / cap),
// as three ops like llama.cpp).
#include "model/blocks/blocks.h"

namespace folio::model {

TensorView embed_tokens(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                        const ForwardInputs& in) {
  TensorView x = ctx.get_rows(w.token_embd, in.tokens);  // [E, T]
  if (cfg.embd_scale != 1.0f) ctx.scale(x, cfg.embd_scale, 0.0f, x);
  return x;
}

TensorView gather_outputs(ForwardContext& ctx, const TensorView& t, const ForwardInputs& in) {
  if (in.all_outputs) return t;
  return ctx.get_rows(t, in.out_ids);  // [E, n_out]
}

TensorView output_logits(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                         const TensorView& hidden) {
  const TensorView h = ctx.rms_norm(hidden, w.output_norm, cfg.norm_eps);
  TensorView logits = ctx.mul_mat(w.output, h);  // [n_vocab, n_out]
  if (!w.output_b.empty()) ctx.add(logits, w.output_b, logits);
  if (cfg.logit_scale != 1.0f) ctx.scale(logits, 1.0f / cfg.logit_scale, 0.0f, logits);
  if (cfg.final_softcap > 0.0f) {
    ctx.scale(logits, 1.0f / cfg.final_softcap, 0.0f, logits);
    ctx.unary(logits, UnaryKind::kTanh, logits);
    ctx.scale(logits, cfg.final_softcap, 0.0f, logits);
  }
  return logits;
}

TensorView hidden_and_logits(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                             const TensorView& x, const ForwardInputs& in) {
  ctx.set_final_hidden(ctx.rms_norm(x, w.output_norm, cfg.norm_eps));  // [E, T]
  if (in.n_outputs == 0) return {};
  return output_logits(ctx, cfg, w, gather_outputs(ctx, x, in));
}

}  // namespace folio::model
