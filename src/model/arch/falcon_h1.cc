// falcon-h1 (TII Falcon-H1, 0.5B to 34B): llama.cpp's falcon-h1.cpp hparams,
// tensors and graph. Every layer runs a Mamba-2 mixer and attention side by
// side on the same normalised input and adds both to the residual
// (cfg.parallel_mixers), then a SiLU-gated FFN:
//   h = rms_norm(x) * attn_norm;  x += attention(h) + mamba2(h);
//   x += ffn(rms_norm(x) * ffn_norm)
// then output_norm and the LM head (tied to token_embd when output.weight
// is absent).
//   - attention: q, k, v with optional biases, an output projection whose
//     optional bias llama.cpp loads and leaves out of its graph
//     (BiasMode::kIgnored), neox rope over
//     rope.dimension_count dims, q.k scale 1/sqrt(head_dim) (llama.cpp
//     reads no attention.scale for this family); rope_freqs.weight, which
//     llama.cpp loads (optionally) but never passes to its rope, is left
//     unread;
//   - Mamba-2 mixer: the granitehybrid one (model/blocks/mamba2.cc), its
//     ssm.* keys required, ssm_norm.weight optional (absent: no grouped norm);
//   - the pre-FFN norm is the tensor blk.N.ffn_norm, with no ".weight"
//     suffix (the name llama.cpp reads and its converter writes).
// The Falcon-H1 multipliers (embedding, attention in / out, key, ssm in /
// out, the five ssm_multipliers of z / x / B / C / dt, mlp, lm head) are no
// GGUF keys: llama.cpp's converter multiplies them into token_embd, attn_q /
// k / v / output, ssm_in / ssm_out, ffn_gate / ffn_down and output, and its
// graph applies none, so neither does this family.
#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

Status configure_falcon_h1(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(read_mamba2_ssm(f, c));
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), 1);
  c.parallel_mixers = true;
  c.ssm_norm_optional = true;
  c.ffn_norm_bare_name = true;
  // llama.cpp sizes every layer's attention by layer 0's head counts.
  for (int l = 1; l < c.n_layer; ++l) {
    c.n_head[static_cast<size_t>(l)] = c.n_head[0];
    c.n_head_kv[static_cast<size_t>(l)] = c.n_head_kv[0];
  }
  c.rope.mode = RopeMode::kNeox;
  c.rope_freq_factors = false;  // llama.cpp's graph ropes without the factors
  c.qkv_bias = BiasMode::kOptional;
  c.out_bias = BiasMode::kIgnored;  // build_attn gets no wo_b
  c.ffn_glu = GluKind::kSwiGlu;
  c.moe = MoeConfig{};  // the graph has a dense FFN only
  c.attn_scale = 0.0f;
  c.final_softcap = 0.0f;
  return Status();
}

TensorView falcon_h1_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                             cache::KvCache& cache, ForwardContext& ctx) {
  return hybrid_decoder(cfg, w, in, cache, ctx,
                        HybridLayers{mamba2, self_attention, moe_or_dense_ffn});
}

constexpr ArchFamily kFalconH1[] = {
    {"falcon-h1", configure_falcon_h1, falcon_h1_decoder},
};

}  // namespace

std::span<const ArchFamily> falcon_h1_archs() {
  return kFalconH1;
}

}  // namespace folio::model
