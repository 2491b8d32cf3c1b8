// The ERNIE 4.5 family (Baidu; llama.cpp's ernie4_5 and ernie4_5-moe):
// the pre-norm decoder with rope on adjacent pairs (llama's), optional
// q/k/v biases, a SiLU-gated FFN, q.k scale 1/sqrt(head_dim).
//   ernie4_5      dense (ERNIE-4.5-0.3B). The expert keys a file may hold
//                 are ignored, as llama.cpp's graph has no experts.
//   ernie4_5-moe  ERNIE-4.5-21B-A3B / 300B-A47B: from
//                 leading_dense_block_count on (default 0), layer il routes
//                 when (il + 1) % interleave_moe_layer_step == 0 (required);
//                 softmax router, top-k weights always renormalised and not
//                 scaled (expert_weights_scale is not read), an optional
//                 exp_probs_b selection bias, each expert
//                 expert_feed_forward_length wide (required), plus an
//                 ungated shared expert of
//                 expert_shared_feed_forward_length (optional; 0 or absent:
//                 none).
// attn_output.bias is loaded where present but not applied: llama.cpp
// creates it for this family and its graphs pass no output bias.
#include <fmt/format.h>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

void configure_ernie_common(ModelConfig& c) {
  c.rope.mode = RopeMode::kNormal;
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kIgnored;
  c.ffn_glu = GluKind::kSwiGlu;
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
}

Status ernie_full_rope_check(const ModelConfig& c) {
  if (c.head_dim_k != c.head_dim_v || c.rope.n_dims != c.head_dim_k) {
    return invalid_argument(
        "model: {} needs equal key and value head dims and rope over the whole head (key {}, "
        "value {}, rope {})",
        c.arch, c.head_dim_k, c.head_dim_v, c.rope.n_dims);
  }
  return Status();
}

Status configure_ernie4_5(const gguf::GgufFile& /*file*/, ModelConfig& c) {
  configure_ernie_common(c);
  c.moe = MoeConfig{};
  return ernie_full_rope_check(c);
}

Status configure_ernie4_5_moe(const gguf::GgufFile& f, ModelConfig& c) {
  configure_ernie_common(c);
  FOLIO_RETURN_IF_ERROR(ernie_full_rope_check(c));
  MoeConfig& m = c.moe;
  FOLIO_ASSIGN_OR_RETURN(m.n_ff_exp, require_int(f, arch_key(c, "expert_feed_forward_length")));
  FOLIO_ASSIGN_OR_RETURN(c.n_ff_shexp, arch_int_or(f, c, "expert_shared_feed_forward_length", 0));
  FOLIO_RETURN_IF_ERROR(read_leading_dense(f, c));
  FOLIO_RETURN_IF_ERROR(read_moe_layer_step(f, c));
  if (m.n_dense_lead < c.n_layer && (m.n_expert <= 0 || m.n_expert_used <= 0)) {
    return not_found("model: '{}' and '{}' must be positive (layers from {} on are routed)",
                     arch_key(c, "expert_count"), arch_key(c, "expert_used_count"), m.n_dense_lead);
  }
  m.gating = ExpertGating::kSoftmax;
  m.norm_weights = true;
  m.weights_scale = 1.0f;
  m.selection_bias =
      m.n_dense_lead < c.n_layer &&
      f.find_tensor(fmt::format("blk.{}.exp_probs_b.bias", m.n_dense_lead)) != nullptr;
  c.shexp_gated = false;
  return Status();
}

constexpr ArchFamily kErnie[] = {
    {"ernie4_5", configure_ernie4_5, pre_norm_decoder},
    {"ernie4_5-moe", configure_ernie4_5_moe, pre_norm_decoder},
};

}  // namespace

std::span<const ArchFamily> ernie4_5_archs() {
  return kErnie;
}

}  // namespace folio::model
