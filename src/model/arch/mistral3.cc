// mistral3: Mistral Small 3.x and Ministral 3 text decoders (llama.cpp's
// hparams and graph). The llama decoder (rope on adjacent pairs, SwiGLU,
// optional output bias and rope_freqs.weight), with two Ministral 3 keys:
//   - rope.scaling.yarn_log_multiplier L (HF mscale_all_dim): under YaRN
//     (factor s > 1) the rope magnitude is divided by 1 + 0.1 L ln(s), so
//     with ggml's own 1 + 0.1 ln(s) the rotated q and k are scaled by
//     (1 + 0.1 ln s) / (1 + 0.1 L ln s), as llama.cpp's context sets
//     yarn_attn_factor;
//   - attention.temperature_scale beta (HF llama_4_scaling_beta): after rope,
//     q of the token at position p is multiplied by
//     1 + beta ln(floor(p / n_orig) + 1), n_orig being the YaRN original
//     context (rope.scaling.original_context_length, else context_length).
// MoE variants route like llama (softmax, top-k weights renormalised).
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/config.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_mistral3(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kOptional;
  c.rope_freq_factors = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe.norm_weights = true;
  c.moe.gating = ExpertGating::kSoftmax;
  FOLIO_RETURN_IF_ERROR(read_yarn_betas(file, c));
  // Experts are feed_forward_length wide (llama.cpp reads no
  // expert_feed_forward_length for mistral3).
  if (c.moe.n_expert > 0 && !c.n_ff.empty()) c.moe.n_ff_exp = c.n_ff[0];

  const std::string log_mul_key = arch_key(c, "rope.scaling.yarn_log_multiplier");
  Result<float> log_mul = file.get_f32(log_mul_key, 0.0f);
  if (!log_mul.ok()) {
    return invalid_argument("model: key '{}': {}", log_mul_key, log_mul.status().message());
  }
  const float factor = c.rope.scaling_factor;
  if (*log_mul != 0.0f && c.rope.ext_factor != 0.0f && factor > 1.0f) {
    c.rope.attn_factor /= 0.1f * *log_mul * std::log(factor) + 1.0f;
  }

  const std::string temp_key = arch_key(c, "attention.temperature_scale");
  Result<float> temp = file.get_f32(temp_key, 0.0f);
  if (!temp.ok()) return invalid_argument("model: key '{}': {}", temp_key, temp.status().message());
  c.attn_temp_scale = *temp;
  if (c.attn_temp_scale != 0.0f) {
    c.attn_temp_floor = c.rope.n_ctx_orig;
    if (c.attn_temp_floor <= 0) {
      return invalid_argument("model: '{}' needs a positive original context (got {})", temp_key,
                              c.attn_temp_floor);
    }
  }
  return Status();
}

constexpr ArchFamily kMistral3[] = {
    {"mistral3", configure_mistral3, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> mistral3_archs() {
  return kMistral3;
}

}  // namespace folio::model
