// The pre-norm decoder of llama and the qwen family. Per layer:
//   a = attention(h);  x += a;  h = rms_norm(x) * ffn_norm       (fused op)
//   f = ffn(h) or moe(h) [+ shared expert]; x += f; h = rms_norm(x) * next attn_norm (fused op)
// A step of up to kFusedStepTokens tokens (decode of up to 8 sequences)
// whose layer has joined weights (a device holds them)
// folds each norm into the product that reads it and each residual add
// into the product before (ResidualFusion: kRmsNormMulMat, kMulMatAdd),
// where the device has those kernels: h is then never written.
// x (the residual stream) and h live outside the per-layer arena marks, so
// each layer's temporaries are freed when it ends. In the last layer only the
// output rows go through the FFN (rows are independent, so this changes no
// value) and the output head; every row when the final hidden states are
// kept (ForwardContext::hidden_sink).
#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

TensorView pre_norm_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                            cache::KvCache& cache, ForwardContext& ctx) {
  const int64_t e = cfg.n_embd, t = in.n_tokens;
  const float eps = cfg.norm_eps;
  // Every row through the last layer when the final hidden states are kept.
  const bool keep_hidden = ctx.hidden_sink() != nullptr;
  TensorView x = embed_tokens(ctx, cfg, w, in);  // [E, T] residual stream
  TensorView h = ctx.f32_near(w.layers[0].attn_norm, e, t);  // [E, T] normalised input of the next block
  ctx.rms_norm(x, w.layers[0].attn_norm, eps, h);
  bool h_current = true;  // else the next block normalises x itself (ResidualFusion)
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_norm);  // where offloaded layers begin (outside the mark)
    h = ctx.place_near(h, l.attn_norm);
    const ForwardContext::Mark mark = ctx.mark();
    // A decode step through joined weights: the norms go into the products
    // that read them and the residual adds into the products before.
    const bool fuse = t <= kFusedStepTokens && !last && !cfg.is_moe(il) && !l.qkv_joint.empty() &&
                      !l.gate_up_joint.empty();
    ResidualFusion ra{x, h_current ? TensorView{} : l.attn_norm, eps, fuse};
    TensorView a = self_attention(ctx, cfg, w, il, h, in, cache, &ra);  // [E, T]
    if (last && !keep_hidden) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      a = gather_outputs(ctx, a, in);
      h = ctx.f32_near(l.ffn_norm, e, in.n_outputs);
    }
    if (!ra.added) ctx.add_rms_norm(x, a, l.ffn_norm, eps, x, h);
    ResidualFusion rf{x, ra.added ? l.ffn_norm : TensorView{}, eps, fuse};
    const TensorView f = cfg.is_moe(il) ? moe_with_shared_expert(ctx, cfg, l, h)
                                        : dense_ffn(ctx, cfg, l, h, &rf);
    if (last) {
      ctx.add(x, f, x);
    } else {
      h_current = !rf.added;
      const TensorView& next_norm = w.layers[static_cast<size_t>(il) + 1].attn_norm;
      if (h_current) ctx.add_rms_norm(x, f, next_norm, eps, x, h);
      ctx.release(mark);
    }
  }
  if (keep_hidden) return hidden_and_logits(ctx, cfg, w, x, in);
  return output_logits(ctx, cfg, w, x);
}

void post_norm_add(ForwardContext& ctx, const TensorView& x, const TensorView& b,
                   const TensorView& norm, float eps, bool fuse) {
  if (fuse) {
    ctx.rms_norm_add(x, b, norm, eps, x);
  } else {
    ctx.rms_norm(b, norm, eps, b);
    ctx.add(x, b, x);
  }
}

}  // namespace folio::model
