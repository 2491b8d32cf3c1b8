// The hyperparameter keys of a GGUF file (`<arch>.<suffix>`), each read in one
// place, the way llama.cpp's loader reads it (llama_model_loader::get_key /
// get_key_or_arr in src/llama-model.cpp's load_hparams and the families'
// load_arch_hparams in src/models/*.cpp): required or optional, the value an
// absent key takes, what 0 means, a scalar or one value per layer, and which
// families read it at all. A key llama.cpp reads only for some families is
// read only by those families' configure hooks (through the accessor here),
// so a value llama.cpp's own saver writes for every architecture (it writes
// every hyperparameter it holds: final_logit_softcapping 30,
// expert_gating_func 0, attention.scale 0, yarn factors, ...) changes nothing
// where llama.cpp ignores it.
//
// The generic readers name the key and the value in every error; the
// accessors below them are the keys whose reading is more than a type check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "model/config.h"

namespace folio::model {

// `<arch>.<suffix>`.
std::string arch_key(const ModelConfig& cfg, const char* suffix);

// A required integer key: NotFound when absent, InvalidArgument when not an integer.
Result<int64_t> require_int(const gguf::GgufFile& f, const std::string& key);
// An optional integer key: `fallback` when absent.
Result<int64_t> optional_int(const gguf::GgufFile& f, const std::string& key, int64_t fallback);
// An optional number (any integer or float type): `fallback` when absent.
Result<float> optional_float(const gguf::GgufFile& f, const std::string& key, float fallback);
// An optional bool: `fallback` when absent.
Result<bool> optional_bool(const gguf::GgufFile& f, const std::string& key, bool fallback);
// A per-layer integer (get_key_or_arr): a scalar for every layer or an array
// of n_layer values; absent -> `fallback` for every layer, or NotFound when
// `required`.
Result<std::vector<int64_t>> per_layer(const gguf::GgufFile& f, const std::string& key, int n_layer,
                                       bool required, int64_t fallback);
// The integer key `<arch>.<suffix>`, `fallback` when it is absent.
Result<int64_t> arch_int_or(const gguf::GgufFile& f, const ModelConfig& cfg, const char* suffix,
                            int64_t fallback);

// `expert_gating_func`, for the families whose graph takes the gating from
// the file (glm4moe, lfm2moe; every other family fixes it, and llama.cpp
// ignores the key there): 1 softmax, 2 sigmoid, 3 softmax_weight; 0 (none)
// or absent mean "not set" and give `fallback`; without a fallback the key
// is required and must not be 0 (llama.cpp would abort building the graph).
Result<ExpertGating> read_expert_gating(const gguf::GgufFile& f, const ModelConfig& cfg,
                                        std::optional<ExpertGating> fallback);
// The routed experts' weight keys (glm4moe, nemotron_h_moe): the k weights
// renormalised when expert_weights_norm (default false), times
// expert_weights_scale (absent or 0: 1, as llama.cpp; must be finite).
Status read_expert_weights(const gguf::GgufFile& f, ModelConfig& cfg);
// expert_group_count / expert_group_used_count (read for every family, as
// llama.cpp's load_hparams does; both optional, default 0): with more than
// one group, the experts must split evenly into groups of at least 2 (a
// group scores its two best experts), fewer groups than experts, and
// 1 <= used < groups groups holding at least expert_used_count experts.
Status read_expert_groups(const gguf::GgufFile& f, ModelConfig& cfg);
// leading_dense_block_count (glm4moe, lfm2moe): optional, default 0, at most
// n_layer; the layers before it run a dense FFN.
Status read_leading_dense(const gguf::GgufFile& f, ModelConfig& cfg);
// final_logit_softcapping (gemma3, gemma4): optional, default 0 (off); the
// other families never soft-cap, whatever the file holds.
Status read_final_softcap(const gguf::GgufFile& f, ModelConfig& cfg);
// attention.scale (granitehybrid): optional, 0 or absent = 1/sqrt(head_dim);
// the other families compute their scale.
Status read_attention_scale(const gguf::GgufFile& f, ModelConfig& cfg);
// rope.scaling.yarn_beta_fast / _slow (mistral3): optional, defaults 32 and
// 1, which every other family uses.
Status read_yarn_betas(const gguf::GgufFile& f, ModelConfig& cfg);
// The sliding-window layout (gemma3, gpt-oss): cfg.n_swa from
// `attention.sliding_window` (absent or 0: no sliding window; `required`:
// absent is an error) and cfg.swa_layers from
// `attention.sliding_window_pattern`: one flag per layer (an array), or a
// period P (default `default_period`) that makes layer il local unless
// il % P == P - 1 (P = 0: every layer local), as llama.cpp's set_swa_pattern.
Status read_swa_layout(const gguf::GgufFile& f, ModelConfig& cfg, int64_t default_period,
                       bool required);
// The latent-attention keys of deepseek2 (llama.cpp's load_arch_hparams for
// it) into cfg.mla: kv_lora_rank (required), q_lora_rank (required unless
// the file is a "lite" one, which llama.cpp tells by its layer count: 26 or
// 27 blocks, or 48 with a 128256-token vocabulary; those have a plain wq),
// key_length_mla / value_length_mla (optional; absent: the file predates the
// split attn_k_b / attn_v_b tensors, refused), and
// rope.scaling.yarn_log_multiplier (optional; stored divided by 0.1).
// key_length must be kv_lora_rank + rope dims and value_length kv_lora_rank.
Status read_latent_attention(const gguf::GgufFile& f, ModelConfig& cfg);
// Next-token-prediction (MTP) blocks that newer files append to block_count
// (`nextn_predict_layers`, qwen3next, glm4moe): not part of the main forward,
// so the config ends before them; their shapes go to cfg.nextn, and their
// tensors load only when asked (LoadOptions::load_mtp, as llama.cpp's).
Status drop_nextn_layers(const gguf::GgufFile& f, ModelConfig& cfg);
// rope.dimension_sections (qwen35, qwen35moe, qwen3vl): up to 4 rotary pair
// counts (t, h, w, e), each in [0, 65536], into cfg.rope.sections (the
// rest 0); `required` as llama.cpp reads it per family (absent: all 0).
Status read_rope_sections(const gguf::GgufFile& f, ModelConfig& cfg, bool required);
// rope.scaling.alpha (hunyuan-dense's NTK-aware scaling): optional, default
// 0 (none); alpha > 0 raises rope.freq_base to base * alpha^(D / (D - 2)),
// D = head_dim_k, as llama.cpp does at load.
Status read_rope_scaling_alpha(const gguf::GgufFile& f, ModelConfig& cfg);
// interleave_moe_layer_step (ernie4_5-moe): required, >= 1, into
// cfg.moe.layer_step. llama.cpp loads expert tensors for every layer from
// leading_dense_block_count on but routes only the layers with (il + 1) %
// step == 0 and would run the others' dense FFN without weights, so a file
// where such a layer exists is refused.
Status read_moe_layer_step(const gguf::GgufFile& f, ModelConfig& cfg);
// The Mamba-2 mixer's keys (granitehybrid, nemotron_h): ssm.conv_kernel,
// state_size, inner_size, group_count and time_step_rank, all required, into
// cfg.ssm (kind kMamba2); inner_size must split into the groups and heads.
Status read_mamba2_ssm(const gguf::GgufFile& f, ModelConfig& cfg);

}  // namespace folio::model
