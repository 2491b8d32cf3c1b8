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

constexpr ArchFamily kQwen[] = {
    {"qwen2", configure_qwen2, pre_norm_decoder},
    {"qwen3", configure_qwen3, pre_norm_decoder},
    {"qwen3moe", configure_qwen3moe, pre_norm_decoder},
    {"qwen2moe", configure_qwen2moe, pre_norm_decoder},
    {"seed_oss", configure_seed_oss, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> qwen_archs() {
  return kQwen;
}

}  // namespace folio::model
