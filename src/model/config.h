// ModelConfig: every hyperparameter a forward pass needs, read from a GGUF
// file's `<arch>.*` metadata (llama.cpp's key names and defaults). The common
// keys are read here; each architecture family (model/arch/) adds its quirks
// (rope mode, biases, norms, sliding-window layout, scales) through the
// registry, so no per-architecture switch lives outside model/arch/.
//
// Every value is validated at this boundary: a missing required key, a value
// of the wrong type or an impossible combination (n_head not a multiple of
// n_head_kv, odd rope dims, ...) is a Status naming the key and the value.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/op.h"
#include "cache/kv_geometry.h"
#include "core/status.h"
#include "gguf/gguf_file.h"

namespace folio::model {

struct ArchFamily;

enum class RopeScaling : int { kNone, kLinear, kYarn };
const char* rope_scaling_name(RopeScaling s);

// How a layer's query/key/value/output projections may carry biases.
// kIgnored: loaded where present and never applied, as llama.cpp creates
// them for the family and its graph leaves them out (ernie4_5's output
// bias, minimax-m2's q/k/v biases).
enum class BiasMode : int { kNone, kOptional, kRequired, kIgnored };

// How router logits become expert weights: softmax (or sigmoid) over all
// experts, top-k by probability; or kSoftmaxWeight (gpt-oss): top-k by logit,
// then a softmax over the k chosen logits.
enum class ExpertGating : int { kSoftmax, kSigmoid, kSoftmaxWeight };

// How an embedding model turns its token vectors into one vector per input
// (`<arch>.pooling_type`, llama.cpp's values): none (a vector per token),
// the mean of the tokens, the first token (BERT's [CLS]) or the last one.
// kRank (a reranker's classification head) is read but not supported.
enum class PoolingType : int { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };
const char* pooling_type_name(PoolingType p);

struct RopeConfig {
  RopeMode mode = RopeMode::kNormal;
  int n_dims = 0;              // rotated dims per head (rope.dimension_count)
  int n_dims_swa = 0;          // on sliding-window layers (gemma4: rope.dimension_count_swa)
  float freq_base = 10000.0f;  // rope.freq_base
  float freq_base_swa =
      10000.0f;                 // sliding-window layers (gemma3: rope.freq_base_swa, default 1e4)
  float freq_scale_swa = 1.0f;  // sliding-window layers are never scaled (gemma3)
  RopeScaling scaling = RopeScaling::kNone;
  float scaling_factor = 1.0f;  // rope.scaling.factor (1: none)
  int n_ctx_orig = 0;           // rope.scaling.original_context_length (YaRN), default n_ctx_train
  float ext_factor = 0.0f;      // YaRN extrapolation mix: 1 for yarn, 0 otherwise
  float attn_factor = 1.0f;     // YaRN magnitude (ggml adds its own 1 + 0.1 ln(factor))
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // Multi-section rope (rope.dimension_sections): rotary pairs per position
  // section (t, h, w, e). qwen35 reads them but ropes neox (its sections
  // cover every pair, and text holds the token position in t, h and w: see
  // model/arch/qwen3next.cc); qwen3vl ropes with mode kImrope, whose pairs
  // outside t, h and w take the e position, 0 for text
  // (ForwardInputs::pos_sections).
  std::array<int, 4> sections{0, 0, 0, 0};
};

struct MoeConfig {
  int n_expert = 0;           // expert_count (0: dense model)
  int n_expert_used = 0;      // expert_used_count
  int64_t n_ff_exp = 0;       // expert_feed_forward_length
  bool norm_weights = false;  // renormalise the top-k gate weights to sum 1
  ExpertGating gating = ExpertGating::kSoftmax;
  bool biases = false;  // router bias and per-expert gate/up/down biases (gpt-oss)
  // exp_probs_b.bias [X] (glm4moe): added to the probabilities for choosing
  // the top k only; the weights are the unbiased probabilities.
  bool selection_bias = false;
  float weights_scale = 1.0f;  // expert_weights_scale: the k weights times this (after norm)
  int n_dense_lead = 0;        // leading_dense_block_count: layers before it have a dense FFN
  // interleave_moe_layer_step (ernie4_5-moe): from n_dense_lead on, layer il
  // routes when (il + 1) % layer_step == 0; 1: every layer.
  int layer_step = 1;
  // Expert groups (expert_group_count, expert_group_used_count; DeepSeek V3):
  // the experts split into n_groups groups of n_expert / n_groups; a group
  // scores the sum of its two largest selection probabilities, and the top k
  // are chosen within the n_groups_used best groups. 0 or 1: no groups.
  int n_groups = 0;
  int n_groups_used = 0;
};

// Multi-head latent attention (deepseek2: DeepSeek V2 / V3 / R1, Kimi K2).
// Keys and queries meet in a latent space: each token caches one row of
// Dl = kv_lora_rank compressed values (RMS-normed) and R = rope dims of a
// rope key shared by every head (ModelConfig::head_dim_k = Dl + R), and V is
// the first Dl values of that row (head_dim_v = Dl). A query head's nope
// part (Dn = head_dim_qk - R) is multiplied into the latent space by k_b,
// the attention output of each head is taken back by v_b (Dv values), then
// wo. See model/blocks/latent_attention.cc.
struct MlaConfig {
  int64_t q_lora_rank = 0;   // attention.q_lora_rank: q = q_b(norm(q_a x)); 0: q = wq x ("lite")
  int64_t kv_lora_rank = 0;  // attention.kv_lora_rank: Dl (0: no latent attention)
  int64_t head_dim_qk = 0;   // attention.key_length_mla: Dn + R of a query head
  int64_t head_dim_v = 0;    // attention.value_length_mla: Dv of a head after v_b
  float yarn_log_mul = 0.0f;  // rope.scaling.yarn_log_multiplier / 0.1 (llama.cpp's mscale_all_dim)

  bool enabled() const { return kv_lora_rank > 0; }
  int64_t head_dim_nope(int64_t n_rot) const { return head_dim_qk - n_rot; }
};

// Which recurrent mixer the hybrid model's recurrent layers run.
enum class SsmKind : int {
  kGatedDeltaNet,  // qwen3next, qwen35, qwen35moe
  kMamba2,         // granitehybrid, nemotron_h, nemotron_h_moe
  kShortConv,      // lfm2: a gated conv, no state matrix
};

// Recurrent layers of the hybrid models (llama.cpp's ssm.* keys).
// Gated DeltaNet (qwen3next, qwen35, qwen35moe): key heads H_k =
// group_count, value heads H_v = time_step_rank, both of head dim S =
// state_size; inner_size = H_v * S. The conv runs over the q, k and v
// channels: C = 2 * H_k * S + H_v * S.
// Mamba-2 (granitehybrid): G = group_count groups of B and C, each of N =
// state_size values; H = time_step_rank heads of P = inner_size / H
// channels; the conv runs over x, B and C: C = inner_size + 2 * G * N (the
// same formula with H_k = G, S = N). The state of a head is N values per
// channel: [N, P, H].
// Short conv (lfm2): the conv runs over n_embd channels (d_inner = n_embd,
// no heads, no state: C = d_inner), d_conv = shortconv.l_cache.
struct SsmConfig {
  SsmKind kind = SsmKind::kGatedDeltaNet;
  int d_conv = 0;                    // ssm.conv_kernel: conv width K (K - 1 cached taps)
  int64_t d_state = 0;               // ssm.state_size: S (key and value head dim)
  int64_t d_inner = 0;               // ssm.inner_size: H_v * S
  int n_k_heads = 0;                 // ssm.group_count: H_k
  int n_v_heads = 0;                 // ssm.time_step_rank: H_v
  HeadMap head_map = HeadMap::kDiv;  // value head -> key head (qwen3next kDiv, qwen35* kMod)
  bool fused_ba = false;             // beta and alpha in one ssm_ba tensor (qwen3next)
  bool fused_qkvz =
      false;  // legacy qwen3next files: one ssm_in tensor instead of attn_qkv + attn_gate

  int64_t head_v_dim() const { return n_v_heads > 0 ? d_inner / n_v_heads : 0; }  // S or P
  int64_t conv_channels() const { return 2 * n_k_heads * d_state + d_inner; }
};

// The next-token-prediction (MTP, `nextn`) blocks a file carries after its
// main blocks (nextn_predict_layers; qwen35*, qwen3next, glm4moe): each a
// decoder layer with the main layers' structure plus its own input
// projection and head (ModelWeights::mtp, model/mtp_head.h). Their shapes
// are kept here; ModelConfig::n_layer and the per-layer vectors cover the
// main blocks only.
struct NextnConfig {
  int n_layer = 0;             // blocks in the file (0: none)
  std::vector<int> n_head;     // [n_layer] of each block
  std::vector<int> n_head_kv;  // [n_layer]
  std::vector<int64_t> n_ff;   // [n_layer]
  bool moe = false;            // the blocks route to experts (the main model's last layer does)
  // Their tensors are loaded (LoadOptions::load_mtp and a family that runs
  // them: ArchFamily::mtp_layer); otherwise they stay in the file, untouched.
  bool loaded = false;
};

struct ModelConfig {
  std::string arch;  // general.architecture ("llama", "qwen3", ...)
  const ArchFamily* family = nullptr;

  int64_t n_vocab = 0;
  int64_t n_embd = 0;
  int n_layer = 0;
  int64_t n_ctx_train = 0;
  std::vector<int> n_head;     // [n_layer] query heads
  std::vector<int> n_head_kv;  // [n_layer]
  std::vector<int64_t> n_ff;   // [n_layer] dense FFN width (0 where unused)
  int64_t head_dim_k = 0;      // attention.key_length (default n_embd / n_head)
  int64_t head_dim_v = 0;      // attention.value_length
  // Sliding-window layers' head dims (gemma4: attention.key_length_swa /
  // value_length_swa); 0: the same as head_dim_k / head_dim_v.
  int64_t head_dim_k_swa = 0;
  int64_t head_dim_v_swa = 0;
  float norm_eps = 1e-5f;      // attention.layer_norm_rms_epsilon

  RopeConfig rope;
  MoeConfig moe;
  MlaConfig mla;

  // Sliding-window attention: window size (0: none) and which layers use it.
  int n_swa = 0;
  std::vector<uint8_t> swa_layers;  // [n_layer] 1: sliding-window layer

  float embd_scale = 1.0f;     // token embeddings are multiplied by this (gemma: sqrt(n_embd))
  // Granite multipliers: each block's output is scaled by residual_scale
  // before its residual add; logits are multiplied by 1 / logit_scale.
  float residual_scale = 1.0f;
  float logit_scale = 1.0f;
  bool attn_rope = true;  // false: attention layers take no rotary embedding (granitehybrid)
  // > 0: layer il takes no rotary embedding when (il + 1) % no_rope_layer_step == 0
  // (smollm3: every 4th layer).
  int no_rope_layer_step = 0;
  // Only sliding-window layers rope (exaone4 with windows); global layers take none.
  bool rope_swa_layers_only = false;
  float attn_scale = 0.0f;     // q.k scale (0 -> 1/sqrt(head_dim_k))
  float attn_softcap = 0.0f;   // attention logit soft-capping (0: off)
  float final_softcap = 0.0f;  // final logit soft-capping (0: off)

  // Architecture traits (set by the family).
  BiasMode qkv_bias = BiasMode::kNone;  // attn_{q,k,v}.bias
  BiasMode out_bias = BiasMode::kNone;  // attn_output.bias
  bool qk_norm = false;                 // attn_{q,k}_norm.weight, RMS over head_dim
  bool qk_norm_after_rope = false;      // q/k normed after the rope, not before (hunyuan-dense)
  // q/k RMS norms over each token's whole projection, all heads at once:
  // attn_q_norm [Hq * Dk], attn_k_norm [Hkv * Dk] (minimax-m2).
  bool qk_norm_full = false;
  bool post_norms = false;              // post_attention_norm / post_ffw_norm (gemma)
  // Only the post norms (exaone4): no attn_norm / ffn_norm; each block reads the
  // residual stream itself and its output is RMS-normalised before the add.
  bool post_norms_only = false;
  bool rope_freq_factors = false;       // optional rope_freqs.weight (llama 3.1)
  bool attn_sinks = false;              // attn_sinks.weight: per-head softmax logit (gpt-oss)
  // Optional rope_factors_long / _short.weight (LongRoPE, phi3): the long ones
  // when the cache's n_ctx exceeds rope.n_ctx_orig.
  bool rope_long_short = false;
  bool ffn_fused_gate_up = false;       // ffn_up.weight [E, 2F] holds gate then up (phi3)
  bool output_bias = false;             // optional output.bias [n_vocab] on the logits (qwen2)
  // Llama-4-style attention temperature (attention.temperature_scale, mistral3):
  // q of a token at position p is multiplied by
  // 1 + attn_temp_scale * ln(floor(p / attn_temp_floor) + 1) (0: off).
  float attn_temp_scale = 0.0f;
  int64_t attn_temp_floor = 0;
  GluKind ffn_glu = GluKind::kSwiGlu;   // dense and expert FFN activation

  // Hybrid models (qwen3next, qwen35*, granitehybrid, lfm2*): recurrent
  // layers (gated DeltaNet, Mamba-2, short conv) beside full-attention layers.
  SsmConfig ssm;
  std::vector<uint8_t> recurrent_layers;  // [n_layer] 1: recurrent layer (empty: none)
  bool attn_output_gate = false;  // attn_q yields [query, gate] per head; out *= sigmoid(gate)
  bool ffn_norm_post_attention = false;  // the pre-FFN norm is named post_attention_norm
  // The pre-FFN norm is named blk.N.ffn_norm, without ".weight" (falcon-h1:
  // its converter maps pre_ff_layernorm.weight whole, and llama.cpp reads that name).
  bool ffn_norm_bare_name = false;
  // Parallel mixers (falcon-h1): every layer is recurrent and also runs
  // attention, both on the same normalised input; their outputs are summed
  // before the residual add. has_attention() is then true on recurrent layers.
  bool parallel_mixers = false;
  // The Mamba-2 ssm_norm.weight may be absent (falcon-h1); then the mixer
  // skips its grouped RMS norm, as llama.cpp's build_mamba2_layer does.
  bool ssm_norm_optional = false;
  int64_t n_ff_shexp =
      0;  // shared expert width (0: none); gated by sigmoid(ffn_gate_inp_shexp . x)
  // false: the shared expert's output is added ungated (glm4moe, granitehybrid)
  bool shexp_gated = true;
  // The final norm is stored as token_embd_norm.weight (lfm2), not output_norm.weight.
  bool output_norm_as_token_embd_norm = false;

  // Embedding models (the encoder families bert, nomic-bert: ArchFamily::encoder).
  bool causal_attn = true;  // attention.causal; false: a token sees its whole sequence
  PoolingType pooling = PoolingType::kNone;  // pooling_type
  int64_t n_token_types = 0;  // tokenizer.ggml.token_type_count: rows of token_types.weight
  bool learned_pos = false;   // absolute positions from position_embd.weight, no rope (bert)
  bool fused_qkv = false;     // q, k, v from one attn_qkv.weight (nomic-bert, phi3)
  bool ffn_gated = true;      // false: down(gelu(up x + b) + b) with biases, no ffn_gate (bert)

  // Single-block layers (nemotron_h): each layer is one pre-norm block,
  // x += block(rms_norm(x) * attn_norm), and the block is a recurrent mixer,
  // attention (feed_forward_length 0) or an FFN alone (feed_forward_length >
  // 0); no ffn_norm. See has_attention / has_ffn.
  bool single_block_layers = false;
  // The dense FFN, the experts and the shared expert have no gate: down(relu(up x + b)^2 + b)
  // with optional biases (nemotron_h).
  bool ffn_relu_sqr = false;
  // Routed experts work in a latent width (moe_latent_size, Nemotron 3 Super):
  // optional ffn_latent_down [E, L] before them and ffn_latent_up [L, E]
  // after; 0: the experts read and write n_embd.
  int64_t moe_latent = 0;
  // Gemma 4 26B-A4B: every MoE layer also runs the dense FFN; the two
  // branches are summed (see model/arch/gemma4.cc), with the router on its
  // own input (LayerWeights::ffn_gate_inp_s).
  bool moe_with_dense_ffn = false;
  bool moe_gate_up_fused = false;  // experts' gate and up in one ffn_gate_up_exps table

  // Gemma 4.
  // The last n_kv_shared layers (attention.shared_kv_layers) compute no K/V
  // and hold no cache: they attend over the K/V of an earlier layer
  // (kv_source). The cache holds the first n_layer - n_kv_shared layers only.
  int n_kv_shared = 0;
  bool attn_v_optional = false;  // attn_v.weight may be absent: V comes from the k projection
  bool layer_out_scale = false;  // optional layer_output_scale.weight [1]: layer output scale
  int64_t n_embd_per_layer = 0;  // embedding_length_per_layer_input P (0: no per-layer inputs)

  NextnConfig nextn;  // MTP blocks after the main ones

  int n_head_of(int layer) const { return n_head[static_cast<size_t>(layer)]; }
  int n_head_kv_of(int layer) const { return n_head_kv[static_cast<size_t>(layer)]; }
  // Whether layer il's attention ropes q and k (attn_rope, no_rope_layer_step).
  bool uses_rope(int layer) const {
    return attn_rope && (no_rope_layer_step <= 0 || (layer + 1) % no_rope_layer_step != 0) &&
           (!rope_swa_layers_only || is_swa(layer));
  }
  bool is_swa(int layer) const { return n_swa > 0 && swa_layers[static_cast<size_t>(layer)] != 0; }
  int64_t head_dim_k_of(int layer) const {
    return is_swa(layer) && head_dim_k_swa > 0 ? head_dim_k_swa : head_dim_k;
  }
  int64_t head_dim_v_of(int layer) const {
    return is_swa(layer) && head_dim_v_swa > 0 ? head_dim_v_swa : head_dim_v;
  }
  // Layers that own K/V (and cache storage): the first n_layer - n_kv_shared.
  int n_layer_kv() const { return n_layer - n_kv_shared; }
  bool has_kv(int layer) const { return layer < n_layer_kv(); }
  // The cache layer whose K/V `layer` attends over: itself, or for a shared
  // layer the last KV layer of its kind (llama.cpp's reuse rule: n_layer_kv - 2
  // for sliding-window layers, n_layer_kv - 1 for full-attention layers).
  int kv_source(int layer) const {
    if (has_kv(layer)) return layer;
    return n_layer_kv() - (is_swa(layer) ? 2 : 1);
  }
  bool is_recurrent(int layer) const {
    return !recurrent_layers.empty() && recurrent_layers[static_cast<size_t>(layer)] != 0;
  }
  // Whether a layer runs attention (and so owns K/V rows in the cache) and
  // whether it runs an FFN: every layer does both, but recurrent layers have
  // no attention (unless parallel_mixers), and single-block layers run one
  // of the two.
  bool has_attention(int layer) const {
    return (parallel_mixers || !is_recurrent(layer)) &&
           (!single_block_layers || n_ff[static_cast<size_t>(layer)] == 0);
  }
  bool has_ffn(int layer) const {
    return !single_block_layers ||
           (!is_recurrent(layer) && n_ff[static_cast<size_t>(layer)] > 0);
  }
  bool is_moe(int layer) const {
    return moe.n_expert > 0 && layer >= moe.n_dense_lead && (layer + 1) % moe.layer_step == 0 &&
           has_ffn(layer);
  }
  // Any recurrent layer: the model needs a hybrid cache (cache/hybrid_kv_cache.h).
  bool is_hybrid() const;
  // An encoder family: its forward yields the final hidden states (for
  // pooling into embeddings), not logits; it has no LM head.
  bool is_embedding() const;
  // What the KV cache holds for this model: K/V shapes of the attention
  // layers, recurrent state shapes of the recurrent layers.
  cache::KvGeometry cache_geometry() const;
  float kq_scale() const;
  // Rope parameters of one layer (base and scale differ on sliding-window layers).
  RopeParams rope_params(int layer) const;

  // The config of MTP block j (< nextn.n_layer) as a one-layer model: its
  // layer is layer 0, a full-attention layer (dense or routed FFN as the
  // block is), no recurrent layers, no MTP blocks of its own.
  ModelConfig mtp_block_config(int j) const;

  // Reads and validates the config of `file`. Unknown architecture,
  // missing required key or impossible value -> error naming it.
  static Result<ModelConfig> from_gguf(const gguf::GgufFile& file);
  // One line: "gemma3: 18 layers, n_embd 640, heads 4/1, head_dim 256, ..."
  std::string summary() const;
};

// Validates the derived config (called by from_gguf after the family hook).
Status validate_config(const ModelConfig& cfg);

}  // namespace folio::model
