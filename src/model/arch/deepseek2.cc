// deepseek2: DeepSeek V2 / V2.5 / V3 / R1, Kimi K2 and other models on that
// graph (llama.cpp's deepseek2 hparams and graph). A pre-norm decoder with
//   - multi-head latent attention (model/blocks/latent_attention.cc): the
//     cache holds one latent row of kv_lora_rank + rope dims per token
//     (attention.key_length; V is its first value_length = kv_lora_rank
//     values), queries through q_a / q_a_norm / q_b (or one wq in the "lite"
//     files: q_lora_rank not read, see read_latent_attention), the split
//     attn_k_b / attn_v_b per-head tensors (key_length_mla,
//     value_length_mla); normal (GPT-J) rope over rope.dimension_count dims;
//   - the scale mscale^2 / sqrt(key_length_mla), mscale = attn_factor * (1 +
//     0.1 ln s) * (1 + 0.1 yarn_log_mul ln s) for the rope scaling factor s
//     (DeepSeek's YaRN; with YaRN and a log multiplier the rope's own
//     magnitude is divided by 1 + 0.1 ln s, which ggml's rope multiplies
//     back: llama.cpp's yarn_attn_factor);
//   - the first leading_dense_block_count layers with a dense SwiGLU FFN,
//     the rest with routed experts: softmax or sigmoid router
//     (expert_gating_func; absent or 0: softmax, sigmoid for GLM 4.7 Lite's
//     47/48 layers with 154880 tokens), optional exp_probs_b selection bias,
//     expert groups (expert_group_count / _used_count, DeepSeek V3),
//     weights renormalised when expert_weights_norm, times
//     expert_weights_scale; plus expert_shared_count ungated shared experts
//     of width expert_shared_count * expert_feed_forward_length;
//   - optional attention.temperature_scale (mistral-large-style temperature
//     on the queries, floor attention.temperature_length);
//   - nextn_predict_layers MTP blocks at the end are not run or loaded.
// On Vulkan the latent rows live in device memory and the flash shader runs
// K 576 / V 512 read from the same rows (backend/vulkan/ops_attention.cc).
#include <fmt/format.h>
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/config.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_deepseek2(const gguf::GgufFile& f, ModelConfig& c) {
  const int blocks = c.n_layer;  // before the MTP blocks are dropped (llama.cpp's lite test)
  FOLIO_RETURN_IF_ERROR(read_latent_attention(f, c));
  FOLIO_RETURN_IF_ERROR(drop_nextn_layers(f, c));
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kNone;
  c.out_bias = BiasMode::kNone;
  c.ffn_glu = GluKind::kSwiGlu;
  c.final_softcap = 0.0f;

  // DeepSeek's YaRN magnitude (llama.cpp's yarn_attn_factor, then the graph's mscale).
  RopeConfig& r = c.rope;
  const float s = r.scaling_factor;
  if (r.scaling == RopeScaling::kYarn && c.mla.yarn_log_mul != 0.0f) {
    r.attn_factor /= 1.0f + 0.1f * std::log(s);
  }
  const float attn_factor_org = r.attn_factor * (1.0f + 0.1f * std::log(s));
  const float mscale = attn_factor_org * (1.0f + 0.1f * c.mla.yarn_log_mul * std::log(s));
  c.attn_scale = mscale * mscale / std::sqrt(static_cast<float>(c.mla.head_dim_qk));

  const std::string temp_key = arch_key(c, "attention.temperature_scale");
  FOLIO_ASSIGN_OR_RETURN(c.attn_temp_scale, optional_float(f, temp_key, 0.0f));
  if (c.attn_temp_scale != 0.0f) {
    FOLIO_ASSIGN_OR_RETURN(c.attn_temp_floor,
                           arch_int_or(f, c, "attention.temperature_length", 0));
    if (!std::isfinite(c.attn_temp_scale) || c.attn_temp_floor <= 0) {
      return invalid_argument("model: '{}' = {} needs a positive '{}' (got {})", temp_key,
                              c.attn_temp_scale, arch_key(c, "attention.temperature_length"),
                              c.attn_temp_floor);
    }
  }

  MoeConfig& m = c.moe;
  FOLIO_RETURN_IF_ERROR(read_leading_dense(f, c));
  FOLIO_ASSIGN_OR_RETURN(m.n_ff_exp, require_int(f, arch_key(c, "expert_feed_forward_length")));
  FOLIO_ASSIGN_OR_RETURN(const int64_t shared, require_int(f, arch_key(c, "expert_shared_count")));
  if (shared < 0 || shared > 64) {
    return invalid_argument("model: '{}' = {} (0..64)", arch_key(c, "expert_shared_count"),
                            shared);
  }
  if (m.n_dense_lead < c.n_layer && (m.n_expert <= 0 || m.n_expert_used <= 0)) {
    return not_found("model: '{}' and '{}' must be positive (layers from {} on are routed)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"),
                     m.n_dense_lead);
  }
  const bool glm47_lite = (blocks == 47 || blocks == 48) && c.n_vocab == 154880;
  FOLIO_ASSIGN_OR_RETURN(
      m.gating,
      read_expert_gating(f, c, glm47_lite ? ExpertGating::kSigmoid : ExpertGating::kSoftmax));
  FOLIO_RETURN_IF_ERROR(read_expert_weights(f, c));
  // The selection bias is optional (DeepSeek V3 has one, V2 none).
  m.selection_bias =
      m.n_dense_lead < c.n_layer &&
      f.find_tensor(fmt::format("blk.{}.exp_probs_b.bias", m.n_dense_lead)) != nullptr;
  c.n_ff_shexp = shared * m.n_ff_exp;
  c.shexp_gated = false;
  return Status();
}

constexpr ArchFamily kDeepseek2[] = {
    {"deepseek2", configure_deepseek2, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> deepseek2_archs() {
  return kDeepseek2;
}

}  // namespace folio::model
