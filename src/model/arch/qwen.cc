// The qwen family, all neox rope and SiLU-gated FFNs with the pre-norm
// decoder:
//   qwen2     q/k/v biases (required), no q/k norm;
//   qwen3     RMS-normalised q and k per head (attn_q_norm / attn_k_norm);
//   qwen3moe  qwen3 attention + experts (softmax router, top-k weights
//             always renormalised, as llama.cpp does for this arch).
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

constexpr ArchFamily kQwen[] = {
    {"qwen2", configure_qwen2, pre_norm_decoder},
    {"qwen3", configure_qwen3, pre_norm_decoder},
    {"qwen3moe", configure_qwen3moe, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> qwen_archs() {
  return kQwen;
}

}  // namespace folio::model
