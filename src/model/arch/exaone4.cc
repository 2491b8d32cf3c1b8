// exaone4: EXAONE 4.0 (llama.cpp's exaone4 hparams and graph).
//   - no pre-norms: attention and FFN read the residual stream itself and
//     their outputs are RMS-normalised before they join it:
//       x += post_attention_norm(attention(x)); x += post_ffw_norm(ffn(x));
//   - q/k RMS norms per head, neox rope with optional rope_freqs factors,
//     optional q/k/v biases, a SiLU-gated FFN, q.k scale 1/sqrt(head_dim);
//   - sliding windows only in the 64-layer (32B) model, as llama.cpp: window
//     attention.sliding_window (default 4096), layer il local unless
//     il % P == P - 1 (P = attention.sliding_window_pattern, default 4),
//     local layers roped with rope.freq_base_swa (default rope.freq_base),
//     global layers not roped at all; other depths have no window and rope
//     every layer (attention.sliding_window is then ignored);
//   - MTP blocks (nextn_predict_layers) skipped.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_exaone4(const gguf::GgufFile& file, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(drop_nextn_layers(file, c));
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kOptional;
  c.qk_norm = true;
  c.post_norms = true;
  c.post_norms_only = true;
  c.rope_freq_factors = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe = MoeConfig{};
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
  c.n_swa = 0;
  if (c.n_layer != 64) return Status();
  c.n_swa = 4096;  // llama.cpp's default when attention.sliding_window is absent
  FOLIO_RETURN_IF_ERROR(read_swa_layout(file, c, /*default_period=*/4, /*required=*/false));
  const std::string base_key = arch_key(c, "rope.freq_base_swa");
  FOLIO_ASSIGN_OR_RETURN(c.rope.freq_base_swa, optional_float(file, base_key, c.rope.freq_base));
  c.rope.freq_scale_swa = 1.0f / c.rope.scaling_factor;
  c.rope_swa_layers_only = c.n_swa > 0;
  return Status();
}

// Per layer: a = post_attn_norm(attention(x)); x += a; f = post_ffw_norm(ffn(x)); x += f.
// A one-token step takes each post norm and its add as one kRmsNormAdd
// where a device fuses them (bit for bit the same).
TensorView forward_exaone4(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                           cache::KvCache& cache, ForwardContext& ctx) {
  const float eps = cfg.norm_eps;
  const bool fuse = in.n_tokens == 1;
  TensorView x = embed_tokens(ctx, cfg, w, in);  // [E, T] residual stream
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_post_norm);  // where offloaded layers begin (outside the mark)
    const ForwardContext::Mark mark = ctx.mark();
    TensorView a = self_attention(ctx, cfg, w, il, x, in, cache);  // [E, T]
    if (last) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      a = gather_outputs(ctx, a, in);
    }
    post_norm_add(ctx, x, a, l.attn_post_norm, eps, fuse);
    const TensorView f = dense_ffn(ctx, cfg, l, x);
    post_norm_add(ctx, x, f, l.ffn_post_norm, eps, fuse);
    if (!last) ctx.release(mark);
  }
  return output_logits(ctx, cfg, w, x);
}

constexpr ArchFamily kExaone4[] = {
    {"exaone4", configure_exaone4, forward_exaone4},
};

}  // namespace

std::span<const ArchFamily> exaone4_archs() {
  return kExaone4;
}

}  // namespace folio::model
