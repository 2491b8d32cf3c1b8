// llama: Llama 2/3, Mistral, TinyLlama (and Mixtral-style experts when
// expert_count > 0). Rope on adjacent pairs; optional q/k/v/output biases and
// per-pair rope frequency factors (rope_freqs.weight, Llama 3.1); the q.k
// scale honours attention.scale; MoE weights renormalised over the top k.
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
  return Status();
}

constexpr ArchFamily kLlama[] = {
    {"llama", configure_llama, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> llama_archs() {
  return kLlama;
}

}  // namespace folio::model
