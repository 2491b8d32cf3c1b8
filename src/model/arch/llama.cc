// llama: Llama 2/3, Mistral, TinyLlama (and Mixtral-style experts when
// expert_count > 0). Rope on adjacent pairs; optional q/k/v/output biases and
// per-pair rope frequency factors (rope_freqs.weight, Llama 3.1); q.k scaled
// by 1/sqrt(head_dim) (llama.cpp reads no attention.scale for llama); MoE
// weights renormalised over the top k, each expert feed_forward_length wide
// (llama.cpp sizes llama's experts by n_ff and never reads
// expert_feed_forward_length for this family).
//
// smollm3: llama's decoder without rope on every 4th layer (llama.cpp fixes
// n_no_rope_layer_step = 4; no key), optional q/k/v biases, no output bias,
// no rope frequency factors, a dense FFN, q.k scaled by 1/sqrt(head_dim).
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

Status configure_llama(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kOptional;
  c.rope_freq_factors = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe.norm_weights = true;
  c.moe.gating = ExpertGating::kSoftmax;
  c.final_softcap = 0.0f;
  if (c.moe.n_expert > 0 && !c.n_ff.empty()) c.moe.n_ff_exp = c.n_ff[0];
  return Status();
}

Status configure_smollm3(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kOptional;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe = MoeConfig{};
  c.final_softcap = 0.0f;
  c.no_rope_layer_step = 4;
  return Status();
}

constexpr ArchFamily kLlama[] = {
    {"llama", configure_llama, pre_norm_decoder},
    {"smollm3", configure_smollm3, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> llama_archs() {
  return kLlama;
}

}  // namespace folio::model
