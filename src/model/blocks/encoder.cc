// The post-norm encoder of bert and nomic-bert (llama.cpp's build_bert):
//   x = layer_norm(tok_embd[t] + token_types[0] (+ pos_embd[p]))   [E, T]
//   per layer:
//     a = attention(x)            non-causal: each token sees its whole sequence
//     h = layer_norm(a + x)       attn_output_norm
//     f = ffn(h)                  bert: down(gelu(up h + b) + b); nomic-bert: SwiGLU
//     x = layer_norm(f + h)       layer_output_norm
// Every token is of segment 0 ("sentence A"), as llama.cpp feeds it. GELU is
// the tanh approximation (ggml_gelu, what llama.cpp runs for bert). In the
// last layer only the output rows go on after the attention (rows are
// independent from there; the attention itself needs every row's K/V). x
// lives outside the per-layer arena marks; each layer writes its output
// into it.
#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

// bert's FFN: down(gelu(up x + b_up)) + b_down; nomic-bert's gated one.
TensorView encoder_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                       const TensorView& x) {
  if (cfg.ffn_gated) return dense_ffn(ctx, cfg, l, x);
  const TensorView up = ctx.mul_mat(l.ffn_up, x);  // [F, n]
  ctx.add(up, l.ffn_up_b, up);
  ctx.unary(up, UnaryKind::kGelu, up);
  const TensorView down = ctx.mul_mat(l.ffn_down, up);  // [E, n]
  ctx.add(down, l.ffn_down_b, down);
  return down;
}

}  // namespace

TensorView post_norm_encoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                             cache::KvCache& cache, ForwardContext& ctx) {
  const float eps = cfg.norm_eps;
  TensorView x = ctx.get_rows(w.token_embd, in.tokens);  // [E, T]
  const int32_t segment0 = 0;
  const TensorView type0 = ctx.get_rows(w.token_types, ctx.upload_i32({&segment0, 1}));  // [E, 1]
  ctx.add(x, type0, x);
  if (cfg.learned_pos) ctx.add(x, ctx.get_rows(w.pos_embd, in.pos), x);
  ctx.norm(x, w.token_embd_norm, w.token_embd_norm_b, eps, x);
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_out_norm);  // where offloaded layers begin (outside the mark)
    const ForwardContext::Mark mark = ctx.mark();
    TensorView a = self_attention(ctx, cfg, w, il, x, in, cache);  // [E, T]
    if (last) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      a = gather_outputs(ctx, a, in);
    }
    ctx.add(a, x, a);
    ctx.norm(a, l.attn_out_norm, l.attn_out_norm_b, eps, a);
    const TensorView f = encoder_ffn(ctx, cfg, l, a);
    ctx.add(f, a, f);
    ctx.norm(f, l.layer_out_norm, l.layer_out_norm_b, eps, x);
    if (!last) ctx.release(mark);
  }
  return x;  // [E, n_out]
}

}  // namespace folio::model
