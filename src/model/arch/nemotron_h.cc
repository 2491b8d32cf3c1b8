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
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

Status configure_nemotron_moe(const gguf::GgufFile& f, ModelConfig& c) {
  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0) {
    return not_found("model: '{}' and '{}' must be positive ({} is a mixture-of-experts model)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"), c.arch);
  }
  m.gating = ExpertGating::kSigmoid;  // llama.cpp fixes it for this family
  m.selection_bias = true;
  FOLIO_RETURN_IF_ERROR(read_expert_weights(f, c));
  // Expert width: expert_feed_forward_length, else the FFN layers' width over k.
  if (m.n_ff_exp == 0) {
    for (int l = 0; l < c.n_layer && m.n_ff_exp == 0; ++l) {
      m.n_ff_exp = c.n_ff[static_cast<size_t>(l)] / m.n_expert_used;
    }
  }
  FOLIO_ASSIGN_OR_RETURN(c.n_ff_shexp, arch_int_or(f, c, "expert_shared_feed_forward_length", 0));
  c.shexp_gated = false;
  FOLIO_ASSIGN_OR_RETURN(c.moe_latent, arch_int_or(f, c, "moe_latent_size", 0));
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
  }
  return Status();
}

// The family's layers for the shared hybrid decoder, one block per layer
// (cfg.single_block_layers).
TensorView nemotron_h_decoder(const ModelConfig& cfg, const ModelWeights& w,
                              const ForwardInputs& in, cache::KvCache& cache,
                              ForwardContext& ctx) {
  return hybrid_decoder(cfg, w, in, cache, ctx,
                        HybridLayers{mamba2, self_attention, moe_or_dense_ffn});
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
