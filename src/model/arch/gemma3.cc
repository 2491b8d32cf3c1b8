// gemma3: Gemma 3 text models (llama.cpp's hparams and graph).
//   - token embeddings scaled by sqrt(n_embd);
//   - q/k RMS norms per head, neox rope;
//   - sandwich norms: attention and FFN outputs are RMS-normalised
//     (post_attention_norm, post_ffw_norm) before they join the residual;
//   - GELU (tanh) gated FFN;
//   - sliding-window attention when attention.sliding_window > 0: layer il is
//     local unless il % P == P - 1, P = attention.sliding_window_pattern
//     (default 6; an array gives the per-layer flags directly); local layers
//     use rope.freq_base_swa (default 10000) and no rope scaling;
//   - q.k scale 1/sqrt(head_dim), except the 62-layer (27B) model:
//     1/sqrt(n_embd / n_head) (query_pre_attn_scalar);
//   - optional final_logit_softcapping.
// gemma2: Gemma 2, the same decoder (sandwich norms, GELU FFN, embeddings
// scaled by sqrt(n_embd)) without q/k norms, with
//   - attention logit soft-capping: each q.k (after the scale) becomes
//     c * tanh(q.k / c), c = attn_logit_softcapping (default 50);
//   - final logit soft-capping, always on: c = final_logit_softcapping
//     (default 30);
//   - sliding-window layers alternating with global ones: layer il is local
//     unless il % P == P - 1, P = attention.sliding_window_pattern (default
//     2), window attention.sliding_window (default 4096); local layers rope
//     with rope.freq_base_swa (default rope.freq_base) and the same scaling;
//   - optional q/k/v biases (llama.cpp's create_tensor_qkv);
//   - the q.k scale as gemma3's (the 46-layer 27B model: 1/sqrt(n_embd / n_head)).
// GGUF norm weights already include Gemma's "+1" (the converter adds it).
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

// Gemma's rope on local layers: rope.freq_base_swa (default 10000), never scaled.
Status read_swa_rope(const gguf::GgufFile& f, ModelConfig& c) {
  if (c.n_swa == 0) return Status();
  const std::string base_key = arch_key(c, "rope.freq_base_swa");
  Result<float> base = f.get_f32(base_key, 10000.0f);
  if (!base.ok()) return invalid_argument("model: key '{}': {}", base_key, base.status().message());
  c.rope.freq_base_swa = *base;
  c.rope.freq_scale_swa = 1.0f;
  return Status();
}

Status configure_gemma3(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_glu = GluKind::kGeGlu;
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.moe = MoeConfig{};
  c.attn_scale = c.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head[0]))
                                 : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  FOLIO_RETURN_IF_ERROR(read_final_softcap(file, c));
  FOLIO_RETURN_IF_ERROR(read_swa_layout(file, c, /*default_period=*/6, /*required=*/false));
  return read_swa_rope(file, c);
}

// A soft-capping constant of gemma2 (`key`, `fallback` when absent): llama.cpp
// divides by it, so it must be positive and finite.
Status read_gemma2_softcap(const gguf::GgufFile& f, const ModelConfig& c, const char* suffix,
                           float fallback, float& out) {
  const std::string key = arch_key(c, suffix);
  FOLIO_ASSIGN_OR_RETURN(out, optional_float(f, key, fallback));
  if (!std::isfinite(out) || out <= 0.0f) {
    return invalid_argument("model: key '{}' = {} must be a positive number", key, out);
  }
  return Status();
}

Status configure_gemma2(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qkv_bias = BiasMode::kOptional;
  c.post_norms = true;
  c.ffn_glu = GluKind::kGeGlu;
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.moe = MoeConfig{};
  c.attn_scale = c.n_layer == 46 ? 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head[0]))
                                 : 1.0f / std::sqrt(static_cast<float>(c.head_dim_k));
  FOLIO_RETURN_IF_ERROR(
      read_gemma2_softcap(file, c, "attn_logit_softcapping", 50.0f, c.attn_softcap));
  FOLIO_RETURN_IF_ERROR(
      read_gemma2_softcap(file, c, "final_logit_softcapping", 30.0f, c.final_softcap));
  c.n_swa = 4096;  // llama.cpp's default when attention.sliding_window is absent
  FOLIO_RETURN_IF_ERROR(read_swa_layout(file, c, /*default_period=*/2, /*required=*/false));
  const std::string base_key = arch_key(c, "rope.freq_base_swa");
  FOLIO_ASSIGN_OR_RETURN(c.rope.freq_base_swa, optional_float(file, base_key, c.rope.freq_base));
  c.rope.freq_scale_swa = 1.0f / c.rope.scaling_factor;
  return Status();
}

// Like pre_norm_decoder, with the two post norms:
//   a = post_attn_norm(attention(h)); x += a; h = ffn_norm(x)
//   f = post_ffw_norm(ffn(h));        x += f; h = next attn_norm(x)
// A one-token step takes each line's norm, add and norm as one
// kRmsNormAddRmsNorm where the device has it.
TensorView forward_gemma3(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                          cache::KvCache& cache, ForwardContext& ctx) {
  const int64_t e = cfg.n_embd, t = in.n_tokens;
  const float eps = cfg.norm_eps;
  TensorView x = embed_tokens(ctx, cfg, w, in);  // [E, T]
  TensorView h = ctx.f32_near(w.layers[0].attn_norm, e, t);
  ctx.rms_norm(x, w.layers[0].attn_norm, eps, h);
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_norm);  // where offloaded layers begin (outside the mark)
    h = ctx.place_near(h, l.attn_norm);
    const ForwardContext::Mark mark = ctx.mark();
    TensorView a = self_attention(ctx, cfg, w, il, h, in, cache);
    // A one-token step's block ends (post norm, residual add, next norm)
    // are one dispatch each where a device fuses them (bit for bit the same).
    const bool fuse = t == 1 && !last;
    if (fuse) {
      ctx.rms_norm_add_rms_norm(x, a, l.attn_post_norm, l.ffn_norm, eps, x, h);
    } else {
      ctx.rms_norm(a, l.attn_post_norm, eps, a);
      if (last) {
        if (in.n_outputs == 0) return {};
        x = gather_outputs(ctx, x, in);
        a = gather_outputs(ctx, a, in);
        h = ctx.f32_near(l.ffn_norm, e, in.n_outputs);
      }
      ctx.add_rms_norm(x, a, l.ffn_norm, eps, x, h);
    }
    const TensorView f = dense_ffn(ctx, cfg, l, h);
    const TensorView& next_norm = last ? l.ffn_norm : w.layers[static_cast<size_t>(il) + 1].attn_norm;
    if (fuse) {
      ctx.rms_norm_add_rms_norm(x, f, l.ffn_post_norm, next_norm, eps, x, h);
    } else {
      ctx.rms_norm(f, l.ffn_post_norm, eps, f);
      if (last) ctx.add(x, f, x);
      else ctx.add_rms_norm(x, f, next_norm, eps, x, h);
    }
    if (!last) ctx.release(mark);
  }
  return output_logits(ctx, cfg, w, x);
}

constexpr ArchFamily kGemma3[] = {
    {"gemma2", configure_gemma2, forward_gemma3},
    {"gemma3", configure_gemma3, forward_gemma3},
};

}  // namespace

std::span<const ArchFamily> gemma3_archs() {
  return kGemma3;
}

}  // namespace folio::model
