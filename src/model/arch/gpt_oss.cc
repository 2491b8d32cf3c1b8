// gpt-oss: OpenAI's open-weight MoE models (GGUF architecture "gpt-oss";
// llama.cpp's LLM_ARCH_OPENAI_MOE hparams and graph). The pre-norm decoder of
// llama / qwen with these traits:
//   - attention: q/k/v projections with optional biases (the released
//     models have them), output projection with a required bias, GQA, neox
//     rope; q.k scale 1/sqrt(rope.dimension_count) (attention.scale is
//     ignored), and the head size is the rope dimension count (checked equal
//     to the key/value lengths);
//   - attention sinks: blk.N.attn_sinks.weight [n_head], one logit per query
//     head that joins the softmax denominator with no value row:
//     out = sum_p e^(s_p) v_p / (sum_p e^(s_p) + e^(sink));
//   - sliding-window attention on alternate layers: attention.sliding_window
//     (required; 128 in the released models) and
//     attention.sliding_window_pattern (default period 2: layer il is local
//     unless il % 2 == 1, so layer 0 slides); local layers use
//     rope.freq_base_swa (default rope.freq_base) and the same rope scaling
//     as the global ones (YaRN in the released models);
//   - the pre-FFN norm is named post_attention_norm;
//   - MoE with biases everywhere: router logits + ffn_gate_inp.bias, top-k
//     experts by logit, weights = softmax over the k chosen logits (no
//     renormalisation, no scale: llama.cpp's "softmax_weight" gating);
//     expert gate/up/down outputs + their per-expert biases;
//   - expert activation swiglu_oai: g = min(gate, 7), u = clamp(up, -7, 7),
//     h = g * sigmoid(1.702 g) * (u + 1);
//   - output_norm, separate output.weight (llama.cpp requires it; folio also
//     reads a file that ties it to token_embd).
// No dense layers, no shared expert, no q/k norms. The released experts are
// MXFP4; any dtype kMulMatId reads is accepted.
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_gpt_oss(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kRequired;
  c.attn_sinks = true;
  c.ffn_norm_post_attention = true;
  c.ffn_glu = GluKind::kSwiGluOai;
  c.final_softcap = 0.0f;
  if (c.moe.n_expert <= 0) {
    return not_found("model: missing required key '{}' for a mixture-of-experts model",
                     arch_key(c, "expert_count"));
  }
  c.moe.gating = ExpertGating::kSoftmaxWeight;
  c.moe.norm_weights = false;
  c.moe.biases = true;
  if (c.rope.n_dims != c.head_dim_k || c.head_dim_k != c.head_dim_v) {
    return invalid_argument(
        "model: gpt-oss needs '{}' ({}) equal to the key and value head sizes ({} / {})",
        arch_key(c, "rope.dimension_count"), c.rope.n_dims, c.head_dim_k, c.head_dim_v);
  }
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.rope.n_dims));

  FOLIO_RETURN_IF_ERROR(read_swa_layout(file, c, /*default_period=*/2, /*required=*/true));
  const std::string base_key = arch_key(c, "rope.freq_base_swa");
  Result<float> base = file.get_f32(base_key, c.rope.freq_base);
  if (!base.ok()) return invalid_argument("model: key '{}': {}", base_key, base.status().message());
  c.rope.freq_base_swa = *base;
  c.rope.freq_scale_swa = 1.0f / c.rope.scaling_factor;
  return Status();
}

constexpr ArchFamily kGptOss[] = {
    {"gpt-oss", configure_gpt_oss, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> gpt_oss_archs() {
  return kGptOss;
}

}  // namespace folio::model
