// glm4moe: GLM-4.5, GLM-4.5-Air, GLM-4.6, GLM-4.7 (llama.cpp's glm4moe hparams
// and graph). A pre-norm decoder with
//   - q/k/v biases (optional, as llama.cpp loads them), no output bias;
//     attn_q_norm / attn_k_norm (RMS over each head) where the file has them
//     (GLM-4.5 355B);
//   - neox rope over rope.dimension_count dims (half the head: partial rope);
//     rope.dimension_sections (vision files) would select multi-section rope,
//     which for text positions equals the neox rope run here;
//   - the pre-FFN norm stored as post_attention_norm;
//   - the first leading_dense_block_count layers with a dense SwiGLU FFN
//     (feed_forward_length), the rest with routed experts: sigmoid router
//     (expert_gating_func; absent or 0: sigmoid), top k chosen by probability plus
//     exp_probs_b.bias, weights = the unbiased probabilities, renormalised
//     when expert_weights_norm, times expert_weights_scale (the routed
//     scaling factor); plus expert_shared_count ungated shared experts of
//     width expert_shared_count * expert_feed_forward_length, added to the
//     routed output;
//   - nextn_predict_layers MTP blocks at the end of block_count are not
//     part of the main forward; each is a layer of this decoder (routed
//     like the last main layer), run by model/mtp_head.h through
//     glm4moe_mtp_layer when loaded (LoadOptions::load_mtp).
// Expert groups (expert_group_count > 1), read for every family, route as
// in model/blocks/moe.cc.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/config.h"
#include "model/blocks/hybrid.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_glm4moe(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(drop_nextn_layers(f, c));
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kNone;
  c.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  c.ffn_norm_post_attention = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.final_softcap = 0.0f;

  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0) {
    return not_found("model: '{}' and '{}' must be positive ({} is a mixture-of-experts model)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"), c.arch);
  }
  FOLIO_ASSIGN_OR_RETURN(m.gating, read_expert_gating(f, c, ExpertGating::kSigmoid));
  m.selection_bias = true;
  FOLIO_RETURN_IF_ERROR(read_expert_weights(f, c));
  FOLIO_RETURN_IF_ERROR(read_leading_dense(f, c));
  if (m.n_ff_exp == 0 && !c.n_ff.empty()) m.n_ff_exp = c.n_ff[0] / m.n_expert_used;
  FOLIO_ASSIGN_OR_RETURN(const int64_t shared, arch_int_or(f, c, "expert_shared_count", -1));
  if (shared < 0 || shared > 64) {
    return invalid_argument("model: '{}' = {} (required, 0..64)",
                            arch_key(c, "expert_shared_count"), shared);
  }
  c.n_ff_shexp = shared * m.n_ff_exp;
  c.shexp_gated = false;
  return Status();
}

// An MTP block's layer: the pre-norm decoder's layer, on layer 0 of the
// block's one-layer config.
TensorView glm4moe_mtp_layer(const ModelConfig& cfg, const ModelWeights& w, const TensorView& x,
                             const ForwardInputs& in, cache::KvCache& cache, ForwardContext& ctx) {
  const LayerWeights& l = w.layers[0];
  const TensorView h = ctx.rms_norm(x, l.attn_norm, cfg.norm_eps);  // [E, T]
  const TensorView a = self_attention(ctx, cfg, w, 0, h, in, cache);
  const TensorView y = ctx.add(x, a);
  const TensorView g = ctx.rms_norm(y, l.ffn_norm, cfg.norm_eps);
  return ctx.add(y, moe_or_dense_ffn(ctx, cfg, l, 0, g, nullptr));
}

constexpr ArchFamily kGlm4Moe[] = {
    {"glm4moe", configure_glm4moe, pre_norm_decoder, false, nullptr, glm4moe_mtp_layer},
};

}  // namespace

std::span<const ArchFamily> glm4moe_archs() {
  return kGlm4Moe;
}

}  // namespace folio::model
