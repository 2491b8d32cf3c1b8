// phi3: Phi-3 / Phi-3.5 mini and medium, Phi-4-mini (llama.cpp's hparams and
// graph). A pre-norm decoder like llama, with
//   - q, k, v from one projection (attn_qkv.weight [E, (Hq + 2 Hkv) D]), or
//     from attn_q / k / v.weight where the file has no attn_qkv (llama.cpp's
//     own saver writes those), with optional biases;
//   - gate and up from one projection (ffn_up.weight [E, 2F]: gate in the
//     first half, up in the second), SwiGLU;
//   - neox rope; LongRoPE (128k variants): per-pair frequency divisors
//     rope_factors_long.weight when a sequence's context (the cache's n_ctx)
//     exceeds rope.scaling.original_context_length, else
//     rope_factors_short.weight, and the rope magnitude
//     rope.scaling.attn_factor (read for every family in config.cc);
//   - attention.sliding_window is ignored, as llama.cpp does: its Phi-3
//     files give one window for every layer, which the models were not
//     trained to use at short contexts.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

Status configure_phi3(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  // llama.cpp takes attn_qkv.weight when the file has it, else attn_q / k /
  // v.weight, each with optional biases (create_tensor_qkv).
  c.fused_qkv = file.find_tensor("blk.0.attn_qkv.weight") != nullptr;
  c.qkv_bias = BiasMode::kOptional;
  c.ffn_fused_gate_up = true;
  c.rope_long_short = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe = MoeConfig{};
  c.n_swa = 0;
  std::fill(c.swa_layers.begin(), c.swa_layers.end(), 0);
  return Status();
}

constexpr ArchFamily kPhi3[] = {
    {"phi3", configure_phi3, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> phi3_archs() {
  return kPhi3;
}

}  // namespace folio::model
