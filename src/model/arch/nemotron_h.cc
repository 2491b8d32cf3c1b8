// nemotron_h (NVIDIA Nemotron-H, Nemotron Nano 2) and nemotron_h_moe
// (Nemotron 3 Nano / Super): llama.cpp's nemotron-h.cpp hparams and graph.
// Every layer is one pre-norm block (cfg.single_block_layers):
//   x += block(rms_norm(x) * attn_norm)
// where the block is, by the per-layer keys,
//   - a Mamba-2 mixer when head_count_kv[i] == 0 and feed_forward_length[i] == 0
//     (the granitehybrid mixer: model/blocks/mamba2.cc);
//   - attention when feed_forward_length[i] == 0: q, k, v (optional biases),
//     no rotary embedding at all (llama.cpp's rope type none), q.k scaled by
//     1/sqrt(head_dim), optional output bias;
//   - an FFN alone when feed_forward_length[i] > 0: down(relu(up x + b)^2) + b
//     with optional biases, or in nemotron_h_moe routed experts (sigmoid
//     router, exp_probs_b selection bias, expert_weights_norm,
//     expert_weights_scale; relu^2 experts with no gate; optional latent
//     projections of width moe_latent_size around them) plus an ungated
//     relu^2 shared expert of width expert_shared_feed_forward_length.
// Then output_norm and the LM head. The RMS norms use
// attention.layer_norm_rms_epsilon when present, else the required
// attention.layer_norm_epsilon (what the converter writes). MTP blocks
// appended to block_count (nextn_predict_layers) are not run or loaded.
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

// An optional integer key of the family.
Result<int64_t> nemotron_int_key(const gguf::GgufFile& f, const ModelConfig& c, const char* suffix,
                                 int64_t fallback) {
  const std::string key = arch_key(c, suffix);
  if (!f.has(key)) return fallback;
  Result<int64_t> r = f.get_i64(key);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

Status configure_nemotron_moe(const gguf::GgufFile& f, ModelConfig& c) {
  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0) {
    return not_found("model: '{}' and '{}' must be positive ({} is a mixture-of-experts model)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"), c.arch);
  }
  m.gating = ExpertGating::kSigmoid;  // llama.cpp fixes it for this family
  m.selection_bias = true;
  const std::string norm_key = arch_key(c, "expert_weights_norm");
  Result<bool> norm = f.get_bool(norm_key, false);
  if (!norm.ok()) return invalid_argument("model: key '{}': {}", norm_key, norm.status().message());
  m.norm_weights = *norm;
  const std::string scale_key = arch_key(c, "expert_weights_scale");
  Result<float> scale = f.get_f32(scale_key, 0.0f);
  if (!scale.ok() || !std::isfinite(*scale)) {
    return invalid_argument("model: key '{}' must be a finite number", scale_key);
  }
  m.weights_scale = *scale == 0.0f ? 1.0f : *scale;  // llama.cpp: 0 or 1 leave the weights
  // Expert width: expert_feed_forward_length, else the FFN layers' width over k.
  if (m.n_ff_exp == 0) {
    for (int l = 0; l < c.n_layer && m.n_ff_exp == 0; ++l) {
      m.n_ff_exp = c.n_ff[static_cast<size_t>(l)] / m.n_expert_used;
    }
  }
  FOLIO_ASSIGN_OR_RETURN(c.n_ff_shexp, nemotron_int_key(f, c, "expert_shared_feed_forward_length", 0));
  c.shexp_gated = false;
  FOLIO_ASSIGN_OR_RETURN(c.moe_latent, nemotron_int_key(f, c, "moe_latent_size", 0));
  if (c.moe_latent < 0 || c.moe_latent > (1 << 20)) {
    return invalid_argument("model: '{}' = {} is out of range", arch_key(c, "moe_latent_size"),
                            c.moe_latent);
  }
  return Status();
}

Status configure_nemotron_h(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(drop_nextn_layers(f, c));
  // The RMS epsilon key wins over the layer-norm one the family requires.
  const std::string rms_key = arch_key(c, "attention.layer_norm_rms_epsilon");
  if (f.has(rms_key)) {
    Result<float> eps = f.get_f32(rms_key, 0.0f);
    if (!eps.ok()) return invalid_argument("model: key '{}': {}", rms_key, eps.status().message());
    c.norm_eps = *eps;
  }
  FOLIO_RETURN_IF_ERROR(read_mamba2_ssm(f, c));
  c.single_block_layers = true;
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), 0);
  for (int l = 0; l < c.n_layer; ++l) {
    c.recurrent_layers[static_cast<size_t>(l)] =
        c.n_head_kv_of(l) == 0 && c.n_ff[static_cast<size_t>(l)] == 0 ? 1 : 0;
  }
  c.attn_rope = false;
  c.attn_scale = 0.0f;  // llama.cpp reads no attention.scale for this family
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kOptional;
  c.ffn_relu_sqr = true;
  c.final_softcap = 0.0f;
  if (c.moe.n_expert > 0) {
    FOLIO_RETURN_IF_ERROR(configure_nemotron_moe(f, c));
  } else if (c.arch == "nemotron_h_moe") {
    return not_found("model: '{}' must be positive (nemotron_h_moe is a mixture-of-experts model)",
                     arch_key(c, "expert_count"));
  }
  return Status();
}

// The single-block decoder (see the file comment). x (the residual stream)
// and h (its norm, the next block's input) live outside the per-layer arena
// marks; each norm is fused with the residual add before it. In the last
// layer an FFN block runs on the output rows only (it is position-wise); a
// mixer runs on every token (its K/V and states are needed) and its output
// rows are gathered after. Returns the logits [n_vocab, n_outputs].
TensorView nemotron_h_decoder(const ModelConfig& cfg, const ModelWeights& w,
                              const ForwardInputs& in, cache::KvCache& cache,
                              ForwardContext& ctx) {
  const int64_t e = cfg.n_embd, t = in.n_tokens;
  const float eps = cfg.norm_eps;
  const RecurrentInputs ri = upload_recurrent_inputs(ctx, in);
  TensorView x = embed_tokens(ctx, cfg, w, in);              // [E, T] residual stream
  TensorView h = ctx.f32_near(w.layers[0].attn_norm, e, t);  // [E, T] normalised block input
  ctx.rms_norm(x, w.layers[0].attn_norm, eps, h);
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_norm);  // where offloaded layers begin (outside the mark)
    h = ctx.place_near(h, l.attn_norm);
    const ForwardContext::Mark mark = ctx.mark();
    TensorView b;  // [E, T] the block's output (output rows only in the last layer)
    if (cfg.has_ffn(il)) {
      if (last) {
        if (in.n_outputs == 0) return {};
        x = gather_outputs(ctx, x, in);
        h = gather_outputs(ctx, h, in);
      }
      b = cfg.is_moe(il) ? moe_with_shared_expert(ctx, cfg, l, h) : dense_ffn(ctx, cfg, l, h);
    } else {
      b = cfg.is_recurrent(il) ? mamba2(ctx, cfg, l, il, h, ri, cache)
                               : self_attention(ctx, cfg, w, il, h, in, cache);
      if (last) {
        if (in.n_outputs == 0) return {};
        x = gather_outputs(ctx, x, in);
        b = gather_outputs(ctx, b, in);
      }
    }
    if (last) {
      ctx.add(x, b, x);
    } else {
      ctx.add_rms_norm(x, b, w.layers[static_cast<size_t>(il) + 1].attn_norm, eps, x, h);
      ctx.release(mark);
    }
  }
  return output_logits(ctx, cfg, w, x);
}

constexpr ArchFamily kNemotronH[] = {
    {"nemotron_h", configure_nemotron_h, nemotron_h_decoder, false,
     "attention.layer_norm_epsilon"},
    {"nemotron_h_moe", configure_nemotron_h, nemotron_h_decoder, false,
     "attention.layer_norm_epsilon"},
};

}  // namespace

std::span<const ArchFamily> nemotron_h_archs() {
  return kNemotronH;
}

}  // namespace folio::model
