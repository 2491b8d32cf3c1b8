// minimax-m2: MiniMax-M2 / M2.1 (llama.cpp's minimax-m2). The pre-norm
// decoder with:
//   - q/k RMS norms over each token's whole projection (all heads at once:
//     attn_q_norm [Hq * Dk], attn_k_norm [Hkv * Dk]) before the rope;
//   - neox rope over rope.dimension_count dims (64 of the 128 in the real
//     model), q.k scale 1/sqrt(head_dim);
//   - q/k/v biases loaded where present and never applied (llama.cpp creates
//     them and its graph leaves them out), no output bias;
//   - experts on every layer, each feed_forward_length wide (llama.cpp sizes
//     them so; expert_feed_forward_length is required but not used), the
//     gating from expert_gating_func (required, not 0: sigmoid in the real
//     models), the exp_probs_b selection bias (required), top-k weights
//     renormalised and not scaled; no shared expert, no dense layers.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_minimax_m2(const gguf::GgufFile& f, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kIgnored;
  c.out_bias = BiasMode::kNone;
  c.qk_norm = true;
  c.qk_norm_full = true;
  c.ffn_glu = GluKind::kSwiGlu;
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
  if (c.head_dim_k != c.head_dim_v) {
    return invalid_argument("model: {} needs equal key and value head dims (key {}, value {})",
                            c.arch, c.head_dim_k, c.head_dim_v);
  }
  FOLIO_RETURN_IF_ERROR(require_int(f, arch_key(c, "expert_feed_forward_length")).status());
  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0) {
    return not_found("model: '{}' and '{}' must be positive (every layer is routed)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"));
  }
  m.n_ff_exp = c.n_ff.empty() ? 0 : c.n_ff[0];
  FOLIO_ASSIGN_OR_RETURN(m.gating, read_expert_gating(f, c, std::nullopt));
  m.norm_weights = true;
  m.weights_scale = 1.0f;
  m.selection_bias = true;
  m.n_dense_lead = 0;
  m.layer_step = 1;
  c.n_ff_shexp = 0;
  return Status();
}

constexpr ArchFamily kMinimaxM2[] = {
    {"minimax-m2", configure_minimax_m2, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> minimax_m2_archs() {
  return kMinimaxM2;
}

}  // namespace folio::model
