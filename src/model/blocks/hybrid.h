// Building blocks of the hybrid models (qwen3next, qwen35, qwen35moe:
// model/arch/qwen3next.cc; granitehybrid: model/arch/granite_hybrid.cc;
// lfm2, lfm2moe: model/arch/lfm2.cc): the gated DeltaNet, Mamba-2 and
// short-conv layers, gated full attention and the gated shared expert.
// Shapes use ggml order (E = n_embd, T = tokens in the batch); errors are
// sticky in the context.
#pragma once

#include "cache/kv_cache.h"
#include "model/blocks/blocks.h"
#include "model/config.h"
#include "model/forward_context.h"
#include "model/forward_inputs.h"
#include "model/weights.h"

namespace folio::model {

// The batch's recurrent plan (KvPlan::recurrent) as I32 tensors, uploaded
// once per forward and shared by every recurrent layer.
struct RecurrentInputs {
  const cache::RecurrentPlan* plan = nullptr;
  TensorView slots;    // I32 [n_steps] state slot of each step (fused ops' ids)
  TensorView order;    // I32 [T] batch row of each recurrent row; empty: identity
  TensorView inverse;  // I32 [T] recurrent row of each batch row; empty: identity
};
RecurrentInputs upload_recurrent_inputs(ForwardContext& ctx, const ForwardInputs& in);

// gated_delta_net.cc -------------------------------------------------------
// Gated DeltaNet layer `il` (llama.cpp's build_layer_attn_linear). x: the
// normalised input [E, T]. Per token: qkv = W_qkv x, z = W_gate x, beta =
// sigmoid(W_beta x), g = softplus(W_alpha x + dt_bias) * ssm_a; a causal
// depthwise conv (+ SiLU) over qkv continuing each sequence's cached taps;
// the DeltaNet recurrence on each sequence's state (q, k L2-normalised, q
// scaled by 1/sqrt(S)); out = W_out (rms_norm(o) * ssm_norm * silu(z)).
// The conv taps and states of the batch's sequences are updated in place in
// the cache's pools (slots of in.plan->recurrent), and the plan's
// checkpoints are saved. Returns [E, T] in batch order. `rf`: see
// ResidualFusion (blocks.h; the input norm in each input projection, the
// residual add in W_out), as for mamba2 and short_conv.
TensorView gated_delta_net(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                           int il, const TensorView& x, const RecurrentInputs& ri,
                           cache::KvCache& cache, ResidualFusion* rf);

// mamba2.cc ------------------------------------------------------------------
// Mamba-2 layer `il` (llama.cpp's build_mamba2_layer). x: the normalised
// input [E, T]. Per token: [z, xBC, dt] = W_in x; a causal depthwise conv
// (+ bias, SiLU) over xBC continuing each sequence's cached taps; the
// selective scan (kSsmScan; decode: the fused kSsmScanUpdate) of x with
// dt + dt_bias, A, B, C on each sequence's state; y = (y + x D) * silu(z),
// grouped RMS norm * ssm_norm; out = W_out y. State, taps and checkpoints
// as gated_delta_net. Returns [E, T] in batch order.
TensorView mamba2(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                  const TensorView& x, const RecurrentInputs& ri, cache::KvCache& cache,
                  ResidualFusion* rf);

// short_conv.cc --------------------------------------------------------------
// LFM2's short-conv layer `il` (llama.cpp's lfm2 shortconv block). x: the
// normalised input [E, T]. Per token: [B, C, x] = W_in x (3 E); a causal
// depthwise conv (no bias, no activation) over B * x continuing each
// sequence's cached taps; out = W_out (C * conv). Taps and checkpoints as
// gated_delta_net (no state matrix). Returns [E, T] in batch order.
TensorView short_conv(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                      const TensorView& x, const RecurrentInputs& ri, cache::KvCache& cache,
                      ResidualFusion* rf);

// gated_attention.cc -------------------------------------------------------
// Full attention with an output gate (qwen3next family): attn_q yields, per
// head, the query and a gate; per-head RMS norm of q and k, partial rope,
// K/V through the cache like self_attention, then the attention output is
// multiplied by sigmoid(gate) before attn_output. x [E, T] -> [E, T].
// A one-token step with Q/K/V joined at load computes them in one product.
// `rf`: see ResidualFusion (the input norm in the Q/K/V products, the
// residual add in attn_output).
TensorView gated_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                           int il, const TensorView& x, const ForwardInputs& in,
                           cache::KvCache& cache, ResidualFusion* rf);

// shared_expert.cc ---------------------------------------------------------
// Routed experts plus the shared expert scaled by sigmoid(gate_inp_shexp .
// x): moe_ffn(x) + sigmoid(w . x) * down(silu(gate(x)) * up(x)); without
// that gate (!cfg.shexp_gated: glm4moe, granitehybrid)
// moe_ffn(x) + down(silu(gate(x)) * up(x)).
// x [E, n] -> [E, n]. Without a shared expert, moe_ffn(x).
TensorView moe_with_shared_expert(ForwardContext& ctx, const ModelConfig& cfg,
                                  const LayerWeights& l, const TensorView& x);
// The FFN of layer il: routed experts (+ the shared expert) where
// cfg.is_moe(il), else the dense FFN. x [E, n] -> [E, n]. `rf`: see
// ResidualFusion (dense_ffn's; the experts take the normalised input).
TensorView moe_or_dense_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                            int il, const TensorView& x, ResidualFusion* rf);

// hybrid_decoder.cc ----------------------------------------------------------
// The pre-norm decoder the hybrid families share (qwen3next / qwen35,
// granitehybrid, lfm2, nemotron_h, falcon-h1): per layer, a = the layer's mixer on
// rms_norm(x) (`recurrent` where cfg.is_recurrent(il), else `attention`),
// x += rs * a, x += rs * ffn(rms_norm(x)), with rs = cfg.residual_scale (1
// but for Granite) and each norm fused with the add before it. With
// cfg.single_block_layers (nemotron_h) a layer is one block, x += rs *
// block(rms_norm(x)): its mixer, or `ffn` where cfg.has_ffn(il). With
// cfg.parallel_mixers (falcon-h1) a = recurrent(h) + attention(h) on every
// layer, unfused. x (the residual
// stream) and h live outside the per-layer arena marks; in the last layer
// only the output rows go through the FFN and the head. A one-token step
// through a dense FFN whose gate and up are joined (a device holds the
// layer), with rs = 1 and two blocks per layer, folds each norm into the
// products that read it and each residual add into the product before
// (ResidualFusion, blocks.h), as the pre-norm decoder. Returns the logits
// [n_vocab, n_outputs]. Each part takes a ResidualFusion (may be null)
// and honours its norm; the residual add is optional.
struct HybridLayers {
  TensorView (*recurrent)(ForwardContext&, const ModelConfig&, const LayerWeights&, int il,
                          const TensorView&, const RecurrentInputs&, cache::KvCache&,
                          ResidualFusion*);
  TensorView (*attention)(ForwardContext&, const ModelConfig&, const ModelWeights&, int il,
                          const TensorView&, const ForwardInputs&, cache::KvCache&,
                          ResidualFusion*);
  TensorView (*ffn)(ForwardContext&, const ModelConfig&, const LayerWeights&, int il,
                    const TensorView&, ResidualFusion*);
};
TensorView hybrid_decoder(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                          cache::KvCache& cache, ForwardContext& ctx, const HybridLayers& parts);

}  // namespace folio::model
