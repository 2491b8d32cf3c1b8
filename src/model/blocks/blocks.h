// Shared building blocks of the decoder forwards (model/arch/*.cc). Each
// block is a short sequence of ops on a ForwardContext; shapes use ggml order
// (E = n_embd, T = tokens in the batch, n_out = tokens whose logits are
// wanted). Errors are sticky in the context (see forward_context.h).
#pragma once

#include "cache/kv_cache.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/forward_inputs.h"
#include "model/weights.h"

namespace folio::model {

// The most tokens a step folds its norms and residual adds into its
// products for: a decode step of up to 8 sequences, what a device's
// matrix-vector kernels take in one dispatch (Vulkan's kMatVecMaxCols). The
// fusions are bit for bit their unfused ops, and a backend that does not
// fuse a product leaves it unfused, so the bound only saves asking.
inline constexpr int64_t kFusedStepTokens = 8;

// A pre-norm block's two ends folded into its products (the pre-norm
// decoder's steps of up to kFusedStepTokens tokens, one per sequence in
// decode; the device fusions kRmsNormMulMat and kMulMatAdd). With `norm` set,
// the block's input is rms_norm(x) * norm, which its first product computes
// (ForwardContext::rms_norm_mul_mat; the block normalises x first where it
// has no such product) and its `x` argument is not read. With `add_out`, its
// last product adds the block's output to x in place where a backend fuses
// that (`added` then set, and the block returns x); else the output is
// returned as usual.
struct ResidualFusion {
  TensorView x;          // [E, T] the residual stream
  TensorView norm;       // the block's input norm weight [E]; empty: the input is given
  float eps = 0.0f;
  bool add_out = false;
  bool added = false;    // out
};

// block_input.cc -------------------------------------------------------------
// The input of a block whose products read it, under a ResidualFusion:
// without rf (or rf->norm empty) the given x; with rf->norm, rms_norm(rf->x)
// * rf->norm, folded into each product a backend fuses (kRmsNormMulMat: bit
// for bit rms_norm then the product, so each product may take either path)
// and else normalised once, then shared. [E, T].
class BlockInput {
 public:
  BlockInput(ForwardContext& ctx, const TensorView& x, const ResidualFusion* rf);
  int64_t n_tokens() const { return x_.ne[1]; }
  // w x (w [E, N]) -> [N, T].
  TensorView mul_mat(const TensorView& w);
  // The input itself [E, T] (normalised here on first use where rf carries the norm).
  const TensorView& value();

 private:
  ForwardContext* ctx_;
  TensorView x_;      // [E, T] the given input, or rf->x
  TensorView norm_;   // [E] rf->norm; empty: x_ is the input
  float eps_ = 0.0f;
  TensorView value_;  // [E, T] the normalised input once computed
};

// The block's output product w y, or rf->x += w y where rf asks for the
// residual add and a backend fuses it (kMulMatAdd: rf->added set, rf->x
// returned). w [K, E], y [K, T] -> [E, T].
TensorView output_product(ForwardContext& ctx, const TensorView& w, const TensorView& y,
                          ResidualFusion* rf);

// x += rms_norm(b) * norm, in place (a post-norm block's end with no next
// norm: exaone4, gemma4): one kRmsNormAdd where `fuse` (a one-token step)
// and a device fuses it, else the norm into b and the add (bit for bit the
// same; b's contents are undefined after). x, b [E, T], norm [E].
void post_norm_add(ForwardContext& ctx, const TensorView& x, const TensorView& b,
                   const TensorView& norm, float eps, bool fuse);

// Elements [c0, c0 + n) of a one-column tensor t [C, 1] (or of the data
// that follows it, for a view that ends before its tensor does), as a
// contiguous [n, 1] view: no copy (attention.cc).
TensorView leading_part(const TensorView& t, int64_t c0, int64_t n);

// attention.cc ---------------------------------------------------------------
// Self-attention of layer `il` over the batch. x: normalised input [E, T].
// q/k/v projections (separate or one fused attn_qkv, + biases), q/k RMS norms
// (cfg.qk_norm), rope (unless cfg.learned_pos), new K/V rows written to the
// cache through the slot mapping (kSetRows), one flash-attention op over the
// cache (causal unless cfg.causal_attn is false, sliding window on SWA
// layers, the layer's attn_sinks when the model has them), output
// projection (+ bias). Returns [E, T]. `rf`: see ResidualFusion (the
// input norm fused into the joined Q/K/V product of a one-token step, the
// residual add into the output projection when it has no bias). A model
// with latent attention (cfg.mla) runs latent_attention instead, unfused.
TensorView self_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                          int il, const TensorView& x, const ForwardInputs& in,
                          cache::KvCache& cache, ResidualFusion* rf);
TensorView self_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                          int il, const TensorView& x, const ForwardInputs& in,
                          cache::KvCache& cache);  // rf = nullptr

// q [Dk, Hq, T] times the per-token temperature [1, 1, T] of mistral3 and
// deepseek2 (ModelConfig::attn_temp_scale), in place. The factors come from
// the positions on the host (as float: llama.cpp's values).
TensorView scale_by_temperature(ForwardContext& ctx, const ModelConfig& cfg, const TensorView& q,
                                const ForwardInputs& in);

// latent_attention.cc --------------------------------------------------------
// Multi-head latent attention (cfg.mla, deepseek2) in the absorbed form:
// self_attention's counterpart for a model whose cache holds one latent row
// per token (KvLayerShape::v_in_k). x [E, T] -> [E, T].
TensorView latent_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                            int il, const TensorView& x, const ForwardInputs& in,
                            cache::KvCache& cache);

// The part of an attention block after its projections, shared by
// self_attention and the hybrids' gated_attention: writes the batch's K
// ([Dk, Hkv, T], roped) and V ([Dv * Hkv, T]) rows to layer il's cache,
// then one flash-attention op of q ([Dk, Hq, T], roped) over the cache
// (causal as cfg.causal_attn; sliding window on SWA layers; `sinks`: the
// optional per-head sink logits F32 [Hq]). Returns [Dv, Hq, T].
TensorView attend_through_cache(ForwardContext& ctx, const ModelConfig& cfg, int il,
                                const TensorView& q, const TensorView& k, const TensorView& v,
                                const ForwardInputs& in, cache::KvCache& cache,
                                const TensorView& sinks = {});
// The flash-attention op alone: layer il's queries q ([Dk, Hq, T], roped)
// over the K/V cache layer `cache_layer` as it holds them (nothing written;
// window and scale of layer il). attend_through_cache is the write, then
// this with cache_layer = il; gemma4's shared-KV layers read an earlier
// layer's cache this way. Returns [Dv, Hq, T].
TensorView attend_cached(ForwardContext& ctx, const ModelConfig& cfg, int il, int cache_layer,
                         const TensorView& q, const ForwardInputs& in, cache::KvCache& cache,
                         const TensorView& sinks = {});

// ffn.cc ---------------------------------------------------------------------
// Dense gated FFN: down(act(gate(x)) * up(x)), act = cfg.ffn_glu; ungated
// when cfg.ffn_relu_sqr: down(relu(up x + b)^2) + b. x [E, n] -> [E, n].
// `rf`: see ResidualFusion (the input norm fused into the gate/up product,
// the residual add into down; gated FFNs with gate and up in one matrix).
TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x, ResidualFusion* rf);
TensorView dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                     const TensorView& x);  // rf = nullptr
// The FFN's activation of the up (and gate) projections, for dense, expert
// and shared-expert FFNs alike: the GLU cfg.ffn_glu of gate and up, or
// relu(up)^2 (cfg.ffn_relu_sqr, gate empty; computed in up's place).
// [F, ...] -> [F, ...].
TensorView ffn_activation(ForwardContext& ctx, const ModelConfig& cfg, const TensorView& gate,
                          const TensorView& up);

// moe.cc ---------------------------------------------------------------------
// Mixture of experts: router (+ bias) softmax or sigmoid, top-k experts per
// token, optional renormalisation of the k weights (or top-k by logit and a
// softmax over the k: ExpertGating::kSoftmaxWeight), gated expert FFNs
// through kMulMatId (+ per-expert biases when cfg.moe.biases), weighted sum
// over the k experts. x [E, n] (contiguous) -> [E, n].
// `router_logits` [X, n]: the router's output when the model computes it
// from another input (gemma4); empty: ffn_gate_inp x. Fused gate/up expert
// tables (ffn_gate_up_exps) and a per-expert down scale (ffn_down_exps_s)
// are used where the layer has them.
TensorView moe_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                   const TensorView& x, const TensorView& router_logits = {});

// io.cc ----------------------------------------------------------------------
// Token embeddings [E, T] (get_rows, times cfg.embd_scale when != 1).
TensorView embed_tokens(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                        const ForwardInputs& in);
// The rows of t [E, T] whose logits are wanted: t itself when every token is
// an output, else a gathered copy [E, n_out].
TensorView gather_outputs(ForwardContext& ctx, const TensorView& t, const ForwardInputs& in);
// Final norm, LM head and soft-capping: hidden [E, n_out] -> logits [n_vocab, n_out].
TensorView output_logits(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                         const TensorView& hidden);

// The end of a decoder that keeps its final hidden states: records
// rms_norm(x) * output_norm of every row x [E, T] as the forward's final
// hidden states (ForwardContext::set_final_hidden), then the output rows'
// logits [n_vocab, n_out] as output_logits (empty if n_out == 0).
TensorView hidden_and_logits(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                             const TensorView& x, const ForwardInputs& in);

// encoder.cc -----------------------------------------------------------------
// The post-norm encoder of bert and nomic-bert (embedding models):
//   x = layer_norm(tok_embd[t] + token_types[0] (+ pos_embd[p]))
//   per layer: x = layer_norm(x + attention(x)); x = layer_norm(x + ffn(x))
// with non-causal attention (cfg.causal_attn) and the FFN down(gelu(up x +
// b) + b) (bert) or the gated SwiGLU (nomic-bert). Returns the final hidden
// states of the output rows [E, n_out] (empty if n_out == 0); no LM head.
TensorView post_norm_encoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                             cache::KvCache& cache, ForwardContext& ctx);

// decoder.cc -----------------------------------------------------------------
// The pre-norm decoder shared by llama and the qwen family:
//   h = rms_norm(x); x += attention(h); h = rms_norm(x); x += ffn_or_moe(h)
// then the output head. Returns logits [n_vocab, n_out] (empty if n_out == 0).
TensorView pre_norm_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                            cache::KvCache& cache, ForwardContext& ctx);

}  // namespace folio::model
