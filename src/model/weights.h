// Model weights as TensorViews (into the file mapping or into buffers of the
// chosen buffer type), and the ONE list of every tensor a model may have:
// for_each_tensor() visits each with its GGUF name, expected shape, whether
// it is required, and the op that consumes it. Loading, placement, printing
// and tests all walk this list; adding a tensor is one line.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/op.h"
#include "core/status.h"
#include "model/config.h"
#include "tensor/tensor_view.h"

namespace folio::model {

// Shapes use ggml order (ne[0] innermost). E = n_embd, Hq/Hkv = heads,
// Dk/Dv = head dims, F = n_ff, X = n_expert, Fx = n_ff_exp.
struct LayerWeights {
  TensorView attn_norm;       // [E]
  TensorView wq;              // [E, Hq * Dk]
  TensorView wk;              // [E, Hkv * Dk]
  TensorView wv;              // [E, Hkv * Dv]
  TensorView bq;              // [Hq * Dk]   optional (qwen2: required)
  TensorView bk;              // [Hkv * Dk]
  TensorView bv;              // [Hkv * Dv]
  TensorView wo;              // [Hq * Dv, E]
  TensorView bo;              // [E]          optional
  // Biases of BiasMode::kIgnored: loaded where present, never applied.
  TensorView bq_ignored;      // [Hq * Dk]
  TensorView bk_ignored;      // [Hkv * Dk]
  TensorView bv_ignored;      // [Hkv * Dv]
  TensorView bo_ignored;      // [E]
  TensorView attn_sinks;      // [Hq]         gpt-oss: per-head sink logit
  TensorView attn_q_norm;     // [Dk]         qwen3, gemma3 ([Hq * Dk]: cfg.qk_norm_full)
  TensorView attn_k_norm;     // [Dk]         ([Hkv * Dk]: cfg.qk_norm_full)
  TensorView attn_post_norm;  // [E]          gemma3
  // Multi-head latent attention (deepseek2; cfg.mla): Lq = q_lora_rank,
  // Dl = kv_lora_rank, R = rope dims, Dn = nope dims, Dqk = Dn + R, Dv = the
  // heads' value dims (wq [E, Hq * Dqk] where Lq = 0; wo [Hq * Dv, E]).
  TensorView wq_a;            // [E, Lq]
  TensorView attn_q_a_norm;   // [Lq]
  TensorView wq_b;            // [Lq, Hq * Dqk]
  TensorView wkv_a_mqa;       // [E, Dl + R]  the latent row and the shared rope key
  TensorView attn_kv_a_norm;  // [Dl]
  TensorView wk_b;            // [Dn, Dl, Hq]  a query head's nope part -> latent space
  TensorView wv_b;            // [Dl, Dv, Hq]  a head's latent output -> its value dims
  TensorView ffn_norm;        // [E]
  TensorView ffn_gate;        // [E, F]       dense layers
  TensorView ffn_up;          // [E, F]
  TensorView ffn_down;        // [F, E]
  // Joined at load (Model::join_weights) where the parts sit in one device
  // buffer type in the file's layout: the parts are then views of these
  // rows, so one product yields q, k and v (or gate and up). Not tensors
  // of the file (for_each_tensor does not list them).
  TensorView qkv_joint;       // [E, Hq * Dk + Hkv * (Dk + Dv)] wq, wk, wv back to back
  TensorView gate_up_joint;   // [E, 2 F] ffn_gate, then ffn_up
  TensorView ffn_post_norm;   // [E]          gemma3
  TensorView ffn_gate_inp;    // [E, X]       MoE router
  TensorView ffn_gate_exps;   // [E, Fx, X]   absent when cfg.ffn_relu_sqr or fused below
  TensorView ffn_gate_up_exps;  // [E, 2 Fx, X] gate then up in one table (cfg.moe_gate_up_fused)
  TensorView ffn_up_exps;     // [E, Fx, X]
  TensorView ffn_down_exps;   // [Fx, E, X]
  // Router and expert biases (gpt-oss).
  TensorView ffn_gate_inp_b;   // [X]
  TensorView ffn_gate_exps_b;  // [Fx, X]  row e: expert e's bias
  TensorView ffn_up_exps_b;    // [Fx, X]
  TensorView ffn_down_exps_b;  // [E, X]
  TensorView ffn_exp_probs_b;  // [X]      expert selection bias (glm4moe)
  TensorView ffn_down_exps_s;  // [X]      optional per-expert scale of the down output (gemma4)
  // Gemma 4 MoE layers (cfg.moe_with_dense_ffn): the router reads
  // rms_norm(x) / sqrt(E) * ffn_gate_inp_s; the experts' input and both
  // branches' outputs have their own norms.
  TensorView ffn_gate_inp_s;   // [E]
  TensorView ffn_pre_norm_2;   // [E]      the experts' input norm
  TensorView ffn_post_norm_1;  // [E]      the dense FFN's output norm
  TensorView ffn_post_norm_2;  // [E]      the experts' output norm
  // Latent experts (cfg.moe_latent = L > 0, Nemotron 3 Super): the expert
  // tables above then read and write L, not E.
  TensorView ffn_latent_down;  // [E, L]   x -> the experts' input
  TensorView ffn_latent_up;    // [L, E]   their weighted sum -> E
  // Shared expert (qwen3next, qwen35moe), Fs = n_ff_shexp.
  TensorView ffn_gate_inp_shexp;  // [E]     its sigmoid gate (empty: ungated, glm4moe)
  TensorView ffn_gate_shexp;      // [E, Fs]  absent when cfg.ffn_relu_sqr
  TensorView ffn_up_shexp;        // [E, Fs]
  TensorView ffn_down_shexp;      // [Fs, E]
  TensorView gate_up_shexp_joint;  // [E, 2 Fs] joined at load, as gate_up_joint above
  // Gated DeltaNet layers (hybrid models). Hk/Hv = key/value heads of head
  // dim S, C = 2 * Hk * S + Hv * S conv channels, K = conv width.
  TensorView ssm_qkv;     // [E, C]       attn_qkv: q, k, v before the conv
  TensorView ssm_gate;    // [E, Hv * S]  attn_gate: z of the gated output norm
  TensorView ssm_in;      // [E, C + Hv * S] legacy qwen3next: q, k, v, z grouped per key head;
                          // Mamba-2: see below
  TensorView ssm_conv1d;  // [K, C]
  TensorView ssm_dt;      // [Hv]         time-step bias
  TensorView ssm_a;       // [Hv]         -exp(A_log)
  TensorView ssm_ba;      // [E, 2 * Hv]  qwen3next: per key head [beta..., alpha...]
  TensorView ssm_beta;    // [E, Hv]      qwen35*
  TensorView ssm_alpha;   // [E, Hv]
  TensorView ssm_norm;    // [S]          gated RMS norm of the output (no +1 offset)
  TensorView ssm_out;     // [Hv * S, E]
  // ssm_qkv, ssm_gate, then ssm_ba (or ssm_beta, ssm_alpha) joined at load,
  // as qkv_joint above: [E, C + Hv * S + 2 * Hv].
  TensorView ssm_proj_joint;
  // Mamba-2 layers (granitehybrid): ssm_in [E, 2 d_inner + C + H] yields z,
  // xBC and dt; ssm_conv1d [K, C], ssm_dt and ssm_a [H] (ssm_a stored [1, H]),
  // ssm_norm [d_inner / G, G], ssm_out [d_inner, E] as above, and:
  TensorView ssm_conv1d_b;  // [C]  conv bias (optional)
  TensorView ssm_d;         // [1, H] skip: y += x * D per head
  // Short-conv layers (lfm2): ssm_in [E, 3 E] (shortconv.in_proj: B, C, x),
  // ssm_conv1d [K, E] (shortconv.conv), ssm_out [E, E] (shortconv.out_proj).
  // Post-norm encoder layers (bert, nomic-bert): layer norms with biases.
  TensorView wqkv;              // [E, Hq * Dk + 2 * Hkv * Dk] nomic-bert: q, k, v in one
  TensorView attn_out_norm;     // [E]  after the attention residual
  TensorView attn_out_norm_b;   // [E]
  TensorView ffn_up_b;          // [F]  bert; optional for nemotron_h
  TensorView ffn_down_b;        // [E]  bert; optional for nemotron_h
  TensorView layer_out_norm;    // [E]  after the FFN residual
  TensorView layer_out_norm_b;  // [E]
  // Gemma 4 (P = n_embd_per_layer).
  TensorView out_scale;     // [1]     layer_output_scale: the layer's output times this
  TensorView pl_inp_gate;   // [E, P]  inp_gate: per-layer input gate
  TensorView pl_proj;       // [P, E]  proj
  TensorView pl_post_norm;  // [E]     post_norm
};

// An MTP block (ModelConfig::nextn, model/mtp_head.h): a decoder layer
// behind its own input projection, and its head.
struct MtpWeights {
  LayerWeights layer;          // the block's layer (file block n_layer + j)
  TensorView eh_proj;          // [2 E, E]  [enorm(embedding); hnorm(hidden)] -> the layer's input
  TensorView enorm;            // [E]
  TensorView hnorm;            // [E]
  TensorView shared_head_norm;  // [E]          optional (absent: output_norm)
  TensorView shared_head_head;  // [E, n_vocab] optional (absent: output)
  TensorView embed_tokens;      // [E, n_vocab] optional (absent: token_embd)
};

struct ModelWeights {
  TensorView token_embd;   // [E, n_vocab]
  TensorView rope_freqs;   // [n_rot / 2]  optional per-pair frequency divisors (llama 3.1)
  TensorView rope_long;    // [n_rot / 2]  LongRoPE divisors beyond the original context (phi3)
  TensorView rope_short;   // [n_rot / 2]  LongRoPE divisors within it
  TensorView output_norm;  // [E]
  TensorView output;       // [E, n_vocab] (the token_embd data when tied)
  TensorView output_b;     // [n_vocab] optional (cfg.output_bias)
  // Encoders (bert, nomic-bert; no output_norm / output).
  TensorView token_types;        // [E, n_token_types] segment embeddings (row 0 is used)
  TensorView pos_embd;           // [E, n_ctx_train]   bert: learned absolute positions
  TensorView token_embd_norm;    // [E]  layer norm of the summed embeddings
  TensorView token_embd_norm_b;  // [E]
  // Gemma 4 per-layer inputs (P = n_embd_per_layer, L = n_layer).
  TensorView per_layer_tok_embd;    // [P * L, n_vocab]
  TensorView per_layer_model_proj;  // [E, P * L]
  TensorView per_layer_proj_norm;   // [P]
  std::vector<LayerWeights> layers;
  std::vector<MtpWeights> mtp;  // [cfg.nextn.n_layer] when cfg.nextn.loaded, else empty
};

// One tensor of the list.
struct TensorSpec {
  std::string name;                  // GGUF name: "blk.3.attn_q.weight"
  std::array<int64_t, kMaxDims> ne;  // expected shape
  bool required = true;
  OpKind consumer = OpKind::kMulMat;  // the op that reads it (placement asks about it)
  TensorView* view = nullptr;         // where the loaded view goes
  // When the tensor is absent, load this one instead (tied output -> token_embd).
  const char* fallback = nullptr;
};

using TensorVisitor = std::function<Status(const TensorSpec&)>;

// Visits every tensor `cfg` implies, in file-like order (globals, then each
// layer, then the MTP blocks when cfg.nextn.loaded); stops at and returns
// the first error of `visit`. Sizes `w.layers` to cfg.n_layer and `w.mtp`.
Status for_each_tensor(const ModelConfig& cfg, ModelWeights& w, const TensorVisitor& visit);

}  // namespace folio::model
