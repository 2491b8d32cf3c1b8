#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

TensorView hybrid_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                          cache::KvCache& cache, ForwardContext& ctx, const HybridLayers& parts) {
  const int64_t e = cfg.n_embd, t = in.n_tokens;
  const float eps = cfg.norm_eps, rs = cfg.residual_scale;
  const RecurrentInputs ri = upload_recurrent_inputs(ctx, in);
  // Every row through the last layer when the final hidden states are kept.
  const bool keep_hidden = ctx.hidden_sink() != nullptr;
  TensorView x = embed_tokens(ctx, cfg, w, in);              // [E, T] residual stream
  TensorView h = ctx.f32_near(w.layers[0].attn_norm, e, t);  // [E, T] normalised block input
  ctx.rms_norm(x, w.layers[0].attn_norm, eps, h);
  bool h_current = true;  // else the next block normalises x itself (ResidualFusion)
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_norm);  // where offloaded layers begin (outside the mark)
    h = ctx.place_near(h, l.attn_norm);
    const ForwardContext::Mark mark = ctx.mark();
    // One token through a dense FFN with gate and up joined (a device holds
    // the layer), unscaled residuals, two blocks per layer: the norms go
    // into the products that read them and the residual adds into the
    // products before.
    // Not with parallel mixers, whose two outputs are summed before the add.
    const bool fuse = t == 1 && !last && rs == 1.0f && !cfg.single_block_layers &&
                      !cfg.parallel_mixers && !cfg.is_moe(il) && !l.gate_up_joint.empty();
    ResidualFusion ra{x, h_current ? TensorView{} : l.attn_norm, eps, fuse};
    // A single-block FFN layer runs on the output rows only in the last
    // layer (it is position-wise); a mixer runs on every token (its K/V and
    // states are needed) and its output rows are gathered after.
    const bool ffn_block = cfg.single_block_layers && cfg.has_ffn(il);
    if (last && ffn_block && !keep_hidden) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      h = gather_outputs(ctx, h, in);
    }
    TensorView a = ffn_block              ? parts.ffn(ctx, cfg, l, il, h, &ra)
                   : cfg.is_recurrent(il) ? parts.recurrent(ctx, cfg, l, il, h, ri, cache, &ra)
                                          : parts.attention(ctx, cfg, w, il, h, in, cache, &ra);
    if (cfg.parallel_mixers) {  // attention beside the recurrent mixer, on the same h
      const TensorView b = parts.attention(ctx, cfg, w, il, h, in, cache, &ra);
      ctx.add(b, a, a);  // llama.cpp's attn_out + ssm_out
    }
    if (last && !ffn_block && !keep_hidden) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      a = gather_outputs(ctx, a, in);
      if (!cfg.single_block_layers) h = ctx.f32_near(l.ffn_norm, e, in.n_outputs);
    }
    if (rs != 1.0f) ctx.scale(a, rs, 0.0f, a);
    if (cfg.single_block_layers) {  // the block was the whole layer
      if (last) {
        ctx.add(x, a, x);
      } else {
        ctx.add_rms_norm(x, a, w.layers[static_cast<size_t>(il) + 1].attn_norm, eps, x, h);
        ctx.release(mark);
      }
      continue;
    }
    if (!ra.added) ctx.add_rms_norm(x, a, l.ffn_norm, eps, x, h);
    ResidualFusion rf{x, ra.added ? l.ffn_norm : TensorView{}, eps, fuse};
    const TensorView f = parts.ffn(ctx, cfg, l, il, h, &rf);
    if (rs != 1.0f) ctx.scale(f, rs, 0.0f, f);
    if (last) {
      ctx.add(x, f, x);
    } else {
      h_current = !rf.added;
      if (h_current) {
        ctx.add_rms_norm(x, f, w.layers[static_cast<size_t>(il) + 1].attn_norm, eps, x, h);
      }
      ctx.release(mark);
    }
  }
  if (keep_hidden) return hidden_and_logits(ctx, cfg, w, x, in);
  return output_logits(ctx, cfg, w, x);
}

}  // namespace folio::model
