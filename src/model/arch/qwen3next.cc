// The hybrid qwen family: gated DeltaNet layers interleaved with gated full
// attention (llama.cpp's qwen3next, qwen35, qwen35moe):
//   qwen3next  MoE (mandatory) with a gated shared expert; beta / alpha in
//              one ssm_ba tensor grouped per key head; value head h reads
//              key head h / (Hv / Hk) (HeadMap::kDiv);
//   qwen35     dense FFN; separate ssm_beta / ssm_alpha; value head h reads
//              key head h % Hk (kMod: its converter reorders value heads);
//              multi-section rope (rope.dimension_sections);
//   qwen35moe  qwen35's layers with qwen3next's MoE + shared expert.
// Layer i is a gated DeltaNet layer when (i + 1) % full_attention_interval
// != 0 (default interval 4), unless attention.recurrent_layers lists them.
//
// Decoder, per layer (pre-norm; the pre-FFN norm is stored as
// post_attention_norm, every norm weight except ssm_norm with its +1 offset
// already applied):
//   h = rms_norm(x) * attn_norm; x += deltanet(h) or gated_attention(h);
//   h = rms_norm(x) * post_attention_norm; x += ffn(h)
// then output_norm and the LM head.
//
// Rope: neox over rope.dimension_count dims (a quarter of the head in the
// real models). qwen35's multi-section rope (imrope) takes, per rotary pair,
// the position of one of four sections (t, h, w, e) and the pair's global
// frequency; for text every section holds the token position, so it equals
// neox rope exactly (backend/cpu/ref/rope.cc), which is what runs here. The
// sections are read and validated for images-in-prompt support later.
//
// MTP / next-token-prediction blocks (nextn_predict_layers) are appended to
// block_count in newer files; they are not part of the main forward. Each
// is a full-attention layer of this family (gated attention, then the
// dense or routed FFN), run by model/mtp_head.h through qwen3next_mtp_layer
// when loaded (LoadOptions::load_mtp).
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

Result<int64_t> int_key(const gguf::GgufFile& f, const ModelConfig& c, const char* suffix,
                        std::optional<int64_t> fallback) {
  const std::string key = arch_key(c, suffix);
  if (!f.has(key)) {
    if (fallback) return *fallback;
    return not_found("model: missing required key '{}'", key);
  }
  Result<int64_t> r = f.get_i64(key);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

Status read_recurrent_layers(const gguf::GgufFile& f, ModelConfig& c) {
  const auto n = static_cast<size_t>(c.n_layer);
  c.recurrent_layers.assign(n, 0);
  const std::string key = arch_key(c, "attention.recurrent_layers");
  if (f.has(key)) {
    Result<const gguf::Array*> arr = f.get_array(key);
    if (!arr.ok()) return invalid_argument("model: key '{}': {}", key, arr.status().message());
    std::vector<int64_t> flags;
    if (const std::vector<uint8_t>* b = (*arr)->bools()) {
      flags.assign(b->begin(), b->end());
    } else {
      Result<std::vector<int64_t>> ints = f.get_int_array(key);
      if (!ints.ok()) return invalid_argument("model: key '{}': {}", key, ints.status().message());
      flags = std::move(ints).value();
    }
    if (flags.size() < n) {
      return invalid_argument("model: key '{}' has {} values for {} layers", key, flags.size(), n);
    }
    for (size_t i = 0; i < n; ++i) c.recurrent_layers[i] = flags[i] != 0 ? 1 : 0;
    return Status();
  }
  FOLIO_ASSIGN_OR_RETURN(const int64_t interval, int_key(f, c, "full_attention_interval", 4));
  if (interval < 1 || interval > (1 << 16)) {
    return invalid_argument("model: '{}' = {} must be positive",
                            arch_key(c, "full_attention_interval"), interval);
  }
  for (size_t i = 0; i < n; ++i) c.recurrent_layers[i] = (i + 1) % interval != 0 ? 1 : 0;
  return Status();
}

Status read_ssm(const gguf::GgufFile& f, ModelConfig& c) {
  SsmConfig& s = c.ssm;
  FOLIO_ASSIGN_OR_RETURN(const int64_t conv, int_key(f, c, "ssm.conv_kernel", std::nullopt));
  FOLIO_ASSIGN_OR_RETURN(s.d_state, int_key(f, c, "ssm.state_size", std::nullopt));
  FOLIO_ASSIGN_OR_RETURN(s.d_inner, int_key(f, c, "ssm.inner_size", std::nullopt));
  FOLIO_ASSIGN_OR_RETURN(const int64_t groups, int_key(f, c, "ssm.group_count", std::nullopt));
  FOLIO_ASSIGN_OR_RETURN(const int64_t rank, int_key(f, c, "ssm.time_step_rank", std::nullopt));
  for (const auto& [v, name] :
       {std::pair{conv, "ssm.conv_kernel"}, std::pair{groups, "ssm.group_count"},
        std::pair{rank, "ssm.time_step_rank"}}) {
    if (v <= 0 || v > (1 << 16)) {
      return invalid_argument("model: '{}' = {} is out of range", arch_key(c, name), v);
    }
  }
  s.d_conv = static_cast<int>(conv);
  s.n_k_heads = static_cast<int>(groups);
  s.n_v_heads = static_cast<int>(rank);
  return read_recurrent_layers(f, c);
}

// Legacy qwen3next files carry one ssm_in tensor per DeltaNet layer instead
// of attn_qkv + attn_gate.
void detect_fused_qkvz(const gguf::GgufFile& f, ModelConfig& c) {
  for (int l = 0; l < c.n_layer; ++l) {
    if (!c.is_recurrent(l)) continue;
    c.ssm.fused_qkvz = f.find_tensor(fmt::format("blk.{}.attn_qkv.weight", l)) == nullptr &&
                       f.find_tensor(fmt::format("blk.{}.ssm_in.weight", l)) != nullptr;
    return;
  }
}

Status configure_hybrid(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(drop_nextn_layers(f, c));
  c.rope.mode = RopeMode::kNeox;
  c.ffn_glu = GluKind::kSwiGlu;
  c.final_softcap = 0.0f;
  // Optional q/k/v biases on the attention layers: loaded as llama.cpp's
  // create_tensor_qkv loads them (the q bias covers the query and the
  // gate), not applied, as its graph does not (blocks/gated_attention.cc).
  c.qkv_bias = BiasMode::kOptional;
  c.qk_norm = true;
  c.attn_output_gate = true;
  c.ffn_norm_post_attention = true;
  FOLIO_RETURN_IF_ERROR(read_ssm(f, c));
  detect_fused_qkvz(f, c);
  return Status();
}

// Routed experts (softmax router, top-k weights renormalised, as llama.cpp
// builds these archs) plus the shared expert, whose width defaults to n_ff.
Status configure_moe(const gguf::GgufFile& f, ModelConfig& c) {
  if (c.moe.n_expert <= 0) {
    return not_found("model: missing required key '{}' ({} is a mixture-of-experts model)",
                     arch_key(c, "expert_count"), c.arch);
  }
  c.moe.norm_weights = true;
  c.moe.gating = ExpertGating::kSoftmax;
  FOLIO_ASSIGN_OR_RETURN(c.n_ff_shexp, int_key(f, c, "expert_shared_feed_forward_length", 0));
  if (c.n_ff_shexp == 0) c.n_ff_shexp = c.n_ff.empty() ? 0 : c.n_ff[0];
  if (c.n_ff_shexp <= 0) {
    return not_found("model: missing '{}' (shared expert width; no feed_forward_length either)",
                     arch_key(c, "expert_shared_feed_forward_length"));
  }
  if (c.moe.n_ff_exp == 0 && c.moe.n_expert_used > 0 && !c.n_ff.empty()) {
    c.moe.n_ff_exp = c.n_ff[0] / c.moe.n_expert_used;  // llama.cpp's fallback
  }
  return Status();
}

Status configure_qwen3next(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_hybrid(f, c));
  c.ssm.head_map = HeadMap::kDiv;
  c.ssm.fused_ba = true;
  return configure_moe(f, c);
}

Status configure_qwen35(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_hybrid(f, c));
  FOLIO_RETURN_IF_ERROR(read_rope_sections(f, c, /*required=*/true));
  c.ssm.head_map = HeadMap::kMod;
  c.ssm.fused_ba = false;
  c.moe = MoeConfig{};  // dense FFN
  c.n_ff_shexp = 0;
  return Status();
}

Status configure_qwen35moe(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(configure_hybrid(f, c));
  FOLIO_RETURN_IF_ERROR(read_rope_sections(f, c, /*required=*/true));
  c.ssm.head_map = HeadMap::kMod;
  c.ssm.fused_ba = false;
  return configure_moe(f, c);
}

// The family's layers for the shared hybrid decoder (see the file comment).
TensorView qwen3next_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                         int il, const TensorView& h, ResidualFusion* rf) {
  if (!cfg.is_moe(il)) return dense_ffn(ctx, cfg, l, h, rf);
  BlockInput x(ctx, h, rf);
  return moe_with_shared_expert(ctx, cfg, l, x.value());
}

TensorView qwen3next_decoder(const ModelConfig& cfg, const ModelWeights& w,
                             const ForwardInputs& in, cache::KvCache& cache, ForwardContext& ctx) {
  return hybrid_decoder(cfg, w, in, cache, ctx,
                        HybridLayers{gated_delta_net, gated_attention, qwen3next_ffn});
}

// An MTP block's layer: the pre-norm layer of the decoder above, on layer 0
// of the block's one-layer config.
TensorView qwen3next_mtp_layer(const ModelConfig& cfg, const ModelWeights& w, const TensorView& x,
                               const ForwardInputs& in, cache::KvCache& cache,
                               ForwardContext& ctx) {
  const LayerWeights& l = w.layers[0];
  const TensorView h = ctx.rms_norm(x, l.attn_norm, cfg.norm_eps);  // [E, T]
  const TensorView a = gated_attention(ctx, cfg, w, 0, h, in, cache, nullptr);
  const TensorView y = ctx.add(x, a);
  const TensorView g = ctx.rms_norm(y, l.ffn_norm, cfg.norm_eps);
  return ctx.add(y, qwen3next_ffn(ctx, cfg, l, 0, g, nullptr));
}

constexpr ArchFamily kQwen3Next[] = {
    {"qwen3next", configure_qwen3next, qwen3next_decoder, false, nullptr, qwen3next_mtp_layer},
    {"qwen35", configure_qwen35, qwen3next_decoder, false, nullptr, qwen3next_mtp_layer},
    {"qwen35moe", configure_qwen35moe, qwen3next_decoder, false, nullptr, qwen3next_mtp_layer},
};

}  // namespace

std::span<const ArchFamily> qwen3next_archs() {
  return kQwen3Next;
}

}  // namespace folio::model
