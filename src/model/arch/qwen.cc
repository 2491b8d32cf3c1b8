// The qwen family, all neox rope and SiLU-gated FFNs with the pre-norm
// decoder:
//   qwen2     q/k/v biases (required), no q/k norm;
//   qwen3     RMS-normalised q and k per head (attn_q_norm / attn_k_norm);
//   qwen3moe  qwen3 attention + experts (softmax router, top-k weights
//             always renormalised, as llama.cpp does for this arch).
//   qwen2moe  qwen2's attention (optional biases) + experts on every layer
//             (softmax router, top-k weights not renormalised, each expert
//             expert_feed_forward_length wide, default feed_forward_length /
//             expert_used_count) + a shared expert
//             (expert_shared_feed_forward_length wide, default
//             feed_forward_length) scaled by sigmoid(ffn_gate_inp_shexp . x);
//   seed_oss  qwen2's attention with optional q/k/v biases, the pre-FFN norm
//             named post_attention_norm, a dense FFN.
//   qwen3vl   Qwen3-VL's text model: qwen3 (q/k norms before the rope, a
//             dense FFN) with the interleaved multi-section rope (imrope)
//             over rope.dimension_sections (required): rotary pair i takes
//             the position of section t, h or w as i % S (S = the sections'
//             sum) interleaves them, the others the e position. For text t,
//             h and w hold the token position and e holds 0, as llama.cpp
//             feeds text tokens, so pairs outside t, h and w do not rotate
//             (Qwen3-VL's [24, 20, 20, 0] over 64 pairs leaves two).
//             Deepstack layers (num_deepstack_layers) add image features
//             only, so text needs none; no vision tower.
// The q.k scale is always 1/sqrt(head_dim) (attention.scale is ignored, as
// in llama.cpp).
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

void configure_common(ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.ffn_glu = GluKind::kSwiGlu;
  c.qkv_bias = BiasMode::kOptional;  // llama.cpp's create_tensor_qkv: optional q/k/v biases
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
}

Status configure_qwen2(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  configure_common(c);
  c.qkv_bias = BiasMode::kRequired;
  c.output_bias = true;  // llama.cpp's qwen2 loads an optional output.bias
  c.moe = MoeConfig{};
  return Status();
}

Status configure_qwen3(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  configure_common(c);
  c.qk_norm = true;
  c.moe = MoeConfig{};
  return Status();
}

Status configure_qwen3moe(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  configure_common(c);
  c.qk_norm = true;
  if (c.moe.n_expert <= 0) {
    return not_found("model: missing required key '{}' for a mixture-of-experts model",
                     arch_key(c, "expert_count"));
  }
  c.moe.norm_weights = true;  // llama.cpp's qwen3moe always renormalises
  c.moe.gating = ExpertGating::kSoftmax;
  return Status();
}

Status configure_qwen2moe(const gguf::GgufFile& file, ModelConfig& c) {
  configure_common(c);
  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0) {
    return not_found("model: {} needs {} > 0 and {} > 0 (a mixture-of-experts model)", c.arch,
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"));
  }
  m.norm_weights = false;  // llama.cpp's qwen2moe never renormalises
  m.gating = ExpertGating::kSoftmax;
  m.weights_scale = 1.0f;  // expert_weights_scale is not read for qwen2moe
  m.n_dense_lead = 0;
  if (m.n_ff_exp == 0 && !c.n_ff.empty()) m.n_ff_exp = c.n_ff[0] / m.n_expert_used;
  FOLIO_ASSIGN_OR_RETURN(c.n_ff_shexp,
                         arch_int_or(file, c, "expert_shared_feed_forward_length", 0));
  if (c.n_ff_shexp == 0 && !c.n_ff.empty()) c.n_ff_shexp = c.n_ff[0];
  if (c.n_ff_shexp <= 0) {
    return invalid_argument("model: {} needs a shared expert width ('{}' or '{}')", c.arch,
                            arch_key(c, "expert_shared_feed_forward_length"),
                            arch_key(c, "feed_forward_length"));
  }
  c.shexp_gated = true;
  return Status();
}

Status configure_seed_oss(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  configure_common(c);
  c.ffn_norm_post_attention = true;
  c.moe = MoeConfig{};
  return Status();
}

Status configure_qwen3vl(const gguf::GgufFile& file, ModelConfig& c) {
  configure_common(c);
  c.qk_norm = true;
  c.moe = MoeConfig{};
  FOLIO_RETURN_IF_ERROR(read_rope_sections(file, c, /*required=*/true));
  const std::array<int, 4>& s = c.rope.sections;
  if (s[0] + s[1] + s[2] + s[3] <= 0) {
    return invalid_argument("model: key '{}' must have a positive sum",
                            arch_key(c, "rope.dimension_sections"));
  }
  c.rope.mode = RopeMode::kImrope;
  return Status();
}

constexpr ArchFamily kQwen[] = {
    {"qwen2", configure_qwen2, pre_norm_decoder},
    {"qwen3", configure_qwen3, pre_norm_decoder},
    {"qwen3moe", configure_qwen3moe, pre_norm_decoder},
    {"qwen2moe", configure_qwen2moe, pre_norm_decoder},
    {"seed_oss", configure_seed_oss, pre_norm_decoder},
    {"qwen3vl", configure_qwen3vl, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> qwen_archs() {
  return kQwen;
}

}  // namespace folio::model
