// granitehybrid (IBM Granite 4.0 H): Mamba-2 layers beside full-attention
// layers, with the Granite multipliers (llama.cpp's granite-hybrid.cpp).
//   - layer i is a Mamba-2 layer when attention.head_count_kv[i] == 0;
//   - attention layers: q, k, v (optional biases), no rotary embedding unless
//     rope.scaling.finetuned is true (the converter writes false for the
//     Granite 4.0 H models), q.k scaled by attention.scale (default
//     1/sqrt(head_dim)), optional output bias;
//   - token embeddings times embedding_scale, every block's output times
//     residual_scale before its residual add, logits times 1 / logit_scale
//     (each 1 when absent);
//   - FFN: dense SiLU-gated, or routed experts (softmax, top-k weights
//     renormalised) plus an ungated shared expert when
//     expert_shared_feed_forward_length > 0.
//
// Decoder, per layer (pre-norm):
//   h = rms_norm(x) * attn_norm; x += residual_scale * (mamba2(h) or attention(h));
//   h = rms_norm(x) * ffn_norm;  x += residual_scale * ffn(h)
// then output_norm, the LM head and the logit scale.
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

// A Granite multiplier: absent or 0 means 1 (llama.cpp applies none).
Result<float> multiplier(const gguf::GgufFile& f, const ModelConfig& c, const char* suffix) {
  const std::string key = arch_key(c, suffix);
  if (!f.has(key)) return 1.0f;
  Result<double> v = f.get_f64(key);
  if (!v.ok()) return invalid_argument("model: key '{}': {}", key, v.status().message());
  if (!std::isfinite(*v) || *v < 0.0) {
    return invalid_argument("model: key '{}' = {} must be finite and >= 0", key, *v);
  }
  return *v == 0.0 ? 1.0f : static_cast<float>(*v);
}

Status configure_granite_hybrid(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(read_mamba2_ssm(f, c));
  // A layer is a Mamba-2 layer exactly when its head_count_kv is 0.
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), 0);
  for (int l = 0; l < c.n_layer; ++l) {
    c.recurrent_layers[static_cast<size_t>(l)] = c.n_head_kv_of(l) == 0 ? 1 : 0;
  }

  Result<bool> rope = f.get_bool(arch_key(c, "rope.scaling.finetuned"), true);
  if (!rope.ok()) {
    return invalid_argument("model: key '{}': {}", arch_key(c, "rope.scaling.finetuned"),
                            rope.status().message());
  }
  c.attn_rope = *rope;
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kOptional;
  c.ffn_glu = GluKind::kSwiGlu;
  c.final_softcap = 0.0f;
  FOLIO_RETURN_IF_ERROR(read_attention_scale(f, c));
  FOLIO_ASSIGN_OR_RETURN(c.embd_scale, multiplier(f, c, "embedding_scale"));
  FOLIO_ASSIGN_OR_RETURN(c.residual_scale, multiplier(f, c, "residual_scale"));
  FOLIO_ASSIGN_OR_RETURN(c.logit_scale, multiplier(f, c, "logit_scale"));

  if (c.moe.n_expert > 0) {
    c.moe.norm_weights = true;
    c.moe.gating = ExpertGating::kSoftmax;
    // llama.cpp sizes granite experts by feed_forward_length (the converter
    // writes the per-expert width there).
    if (!c.n_ff.empty()) c.moe.n_ff_exp = c.n_ff[0];
    const std::string key = arch_key(c, "expert_shared_feed_forward_length");
    if (f.has(key)) {
      Result<int64_t> fs = f.get_i64(key);
      if (!fs.ok() || *fs < 0) return invalid_argument("model: key '{}' is invalid", key);
      c.n_ff_shexp = *fs;
    }
    c.shexp_gated = false;
  }
  return Status();
}

// The family's layers for the shared hybrid decoder (see the file comment);
// the decoder applies cfg.residual_scale.
TensorView granite_hybrid_decoder(const ModelConfig& cfg, const ModelWeights& w,
                                  const ForwardInputs& in, cache::KvCache& cache,
                                  ForwardContext& ctx) {
  return hybrid_decoder(cfg, w, in, cache, ctx, HybridLayers{mamba2, self_attention, moe_or_dense_ffn});
}

constexpr ArchFamily kGraniteHybrid[] = {
    {"granitehybrid", configure_granite_hybrid, granite_hybrid_decoder},
};

}  // namespace

std::span<const ArchFamily> granite_hybrid_archs() {
  return kGraniteHybrid;
}

}  // namespace folio::model
