// lfm2 (Liquid LFM2) and lfm2moe (LFM2-8B-A1B, LFM2-24B-A2B): short-conv
// layers beside full-attention layers (llama.cpp's lfm2.cpp, whose graph
// lfm2moe shares).
//   - layer i is a short-conv layer when attention.head_count_kv[i] == 0
//     (model/blocks/short_conv.cc, conv width shortconv.l_cache);
//   - attention layers: q, k, v, output without biases, RMS-normalised q and
//     k per head, neox rope, q.k scaled by 1/sqrt(head_dim); lfm2 with
//     attention.sliding_window > 0: every attention layer uses that window
//     (lfm2moe ignores the key, as llama.cpp does);
//   - lfm2: dense SiLU-gated FFN in every layer; lfm2moe: dense in the first
//     leading_dense_block_count layers, then routed experts (router gating
//     by expert_gating_func, sigmoid as converted; top k chosen on the
//     probabilities + exp_probs_b, weighted by the probabilities,
//     renormalised; no shared expert, no weight scale);
//   - the final norm is stored as token_embd_norm.weight; the LM head is
//     output.weight or the tied token embeddings.
//
// Decoder, per layer (pre-norm):
//   h = rms_norm(x) * attn_norm; x += short_conv(h) or attention(h);
//   h = rms_norm(x) * ffn_norm;  x += ffn(h)   (dense or experts)
// then the final norm and the LM head.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

Status configure_short_conv_hybrid(const gguf::GgufFile& f, ModelConfig& c, bool swa) {
  SsmConfig& s = c.ssm;
  s.kind = SsmKind::kShortConv;
  const std::string key = arch_key(c, "shortconv.l_cache");
  if (!f.has(key)) return not_found("model: missing required key '{}'", key);
  Result<int64_t> l_cache = f.get_i64(key);
  if (!l_cache.ok() || *l_cache < 2 || *l_cache > 64) {
    return invalid_argument("model: key '{}' must be an integer in [2, 64]", key);
  }
  s.d_conv = static_cast<int>(*l_cache);
  s.d_inner = c.n_embd;  // conv channels: n_embd (no heads, no state)
  s.d_state = 0;
  s.n_k_heads = 0;
  s.n_v_heads = 0;
  // A layer is a short-conv layer exactly when its head_count_kv is 0.
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), 0);
  for (int l = 0; l < c.n_layer; ++l) {
    c.recurrent_layers[static_cast<size_t>(l)] = c.n_head_kv_of(l) == 0 ? 1 : 0;
  }
  // lfm2: a sliding window applies to every attention layer (period 0: all
  // layers; the short-conv layers hold no K/V). lfm2moe ignores the key, as
  // llama.cpp does.
  if (swa) FOLIO_RETURN_IF_ERROR(read_swa_layout(f, c, 0, false));

  c.rope.mode = RopeMode::kNeox;
  c.qk_norm = true;
  c.qkv_bias = BiasMode::kOptional;  // llama.cpp's create_tensor_qkv
  c.out_bias = BiasMode::kNone;
  c.ffn_glu = GluKind::kSwiGlu;
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
  c.output_norm_as_token_embd_norm = true;
  return Status();
}

Status configure_lfm2(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_short_conv_hybrid(f, c, /*swa=*/true));
  c.moe = MoeConfig{};
  return Status();
}

Status configure_lfm2moe(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_short_conv_hybrid(f, c, /*swa=*/false));
  MoeConfig& m = c.moe;
  if (m.n_expert <= 0 || m.n_expert_used <= 0 || m.n_ff_exp <= 0) {
    return not_found(
        "model: '{}', '{}' and '{}' must be positive ({} is a mixture-of-experts model)",
        arch_key(c, "expert_count"), arch_key(c, "expert_used_count"),
        arch_key(c, "expert_feed_forward_length"), c.arch);
  }
  FOLIO_ASSIGN_OR_RETURN(m.gating, read_expert_gating(f, c, std::nullopt));
  m.selection_bias = true;  // exp_probs_b
  m.norm_weights = true;
  m.weights_scale = 1.0f;
  return read_leading_dense(f, c);
}

// The family's layers for the shared hybrid decoder (see the file comment).
TensorView lfm2_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                    const TensorView& h, ResidualFusion* rf) {
  if (!cfg.is_moe(il)) return dense_ffn(ctx, cfg, l, h, rf);
  BlockInput x(ctx, h, rf);
  return moe_ffn(ctx, cfg, l, x.value());
}

TensorView lfm2_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                        cache::KvCache& cache, ForwardContext& ctx) {
  return hybrid_decoder(cfg, w, in, cache, ctx,
                        HybridLayers{short_conv, self_attention, lfm2_ffn});
}

constexpr ArchFamily kLfm2[] = {
    {"lfm2", configure_lfm2, lfm2_decoder},
    {"lfm2moe", configure_lfm2moe, lfm2_decoder},
};

}  // namespace

std::span<const ArchFamily> lfm2_archs() {
  return kLfm2;
}

}  // namespace folio::model
