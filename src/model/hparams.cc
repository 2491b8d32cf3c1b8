#include "model/hparams.h"

#include <fmt/format.h>
#include <cmath>
#include <optional>
#include <tuple>

namespace folio::model {

std::string arch_key(const ModelConfig& cfg, const char* suffix) {
  return fmt::format("{}.{}", cfg.arch, suffix);
}

Result<int64_t> require_int(const gguf::GgufFile& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return not_found("model: missing required key '{}'", key);
  Result<int64_t> r = f.get_i64(key);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

Result<int64_t> optional_int(const gguf::GgufFile& f, const std::string& key, int64_t fallback) {
  if (!f.has(key)) return fallback;
  Result<int64_t> r = f.get_i64(key);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

Result<float> optional_float(const gguf::GgufFile& f, const std::string& key, float fallback) {
  Result<float> r = f.get_f32(key, fallback);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

// A per-layer integer: a scalar (every layer) or an array of n_layer values.
// Absent -> `fallback` for every layer, or NotFound when `required`.
Result<std::vector<int64_t>> per_layer(const gguf::GgufFile& f, const std::string& key, int n_layer,
                                       bool required, int64_t fallback) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) {
    if (required) return not_found("model: missing required key '{}'", key);
    return std::vector<int64_t>(static_cast<size_t>(n_layer), fallback);
  }
  if (v->array() == nullptr) {
    FOLIO_ASSIGN_OR_RETURN(int64_t x, require_int(f, key));
    return std::vector<int64_t>(static_cast<size_t>(n_layer), x);
  }
  Result<std::vector<int64_t>> arr = f.get_int_array(key);
  if (!arr.ok()) return invalid_argument("model: key '{}': {}", key, arr.status().message());
  if (arr->size() != static_cast<size_t>(n_layer)) {
    return invalid_argument("model: key '{}' has {} values, expected one per layer ({})", key,
                            arr->size(), n_layer);
  }
  return std::move(arr).value();
}

Result<bool> optional_bool(const gguf::GgufFile& f, const std::string& key, bool fallback) {
  Result<bool> r = f.get_bool(key, fallback);
  if (!r.ok()) return invalid_argument("model: key '{}': {}", key, r.status().message());
  return r;
}

Status read_leading_dense(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string key = arch_key(c, "leading_dense_block_count");
  FOLIO_ASSIGN_OR_RETURN(const int64_t lead, optional_int(f, key, 0));
  if (lead < 0 || lead > c.n_layer) {
    return invalid_argument("model: key '{}' = {} must be in [0, {}]", key, lead, c.n_layer);
  }
  c.moe.n_dense_lead = static_cast<int>(lead);
  return Status();
}

Status read_final_softcap(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_ASSIGN_OR_RETURN(c.final_softcap,
                         optional_float(f, arch_key(c, "final_logit_softcapping"), 0.0f));
  return Status();
}

Status read_attention_scale(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_ASSIGN_OR_RETURN(c.attn_scale, optional_float(f, arch_key(c, "attention.scale"), 0.0f));
  return Status();
}

Status read_yarn_betas(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_ASSIGN_OR_RETURN(c.rope.beta_fast,
                         optional_float(f, arch_key(c, "rope.scaling.yarn_beta_fast"), 32.0f));
  FOLIO_ASSIGN_OR_RETURN(c.rope.beta_slow,
                         optional_float(f, arch_key(c, "rope.scaling.yarn_beta_slow"), 1.0f));
  return Status();
}

Status drop_nextn_layers(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_ASSIGN_OR_RETURN(const int64_t nextn,
                         optional_int(f, arch_key(c, "nextn_predict_layers"), 0));
  if (nextn == 0) return Status();
  if (nextn < 0 || nextn >= c.n_layer) {
    return invalid_argument("model: '{}' = {} with {} blocks", arch_key(c, "nextn_predict_layers"),
                            nextn, c.n_layer);
  }
  c.n_layer -= static_cast<int>(nextn);
  const auto n = static_cast<size_t>(c.n_layer);
  NextnConfig& m = c.nextn;
  m.n_layer = static_cast<int>(nextn);
  m.n_head.assign(c.n_head.begin() + static_cast<std::ptrdiff_t>(n), c.n_head.end());
  m.n_head_kv.assign(c.n_head_kv.begin() + static_cast<std::ptrdiff_t>(n), c.n_head_kv.end());
  m.n_ff.assign(c.n_ff.begin() + static_cast<std::ptrdiff_t>(n), c.n_ff.end());
  c.n_head.resize(n);
  c.n_head_kv.resize(n);
  c.n_ff.resize(n);
  c.swa_layers.resize(n);
  return Status();
}

Result<int64_t> arch_int_or(const gguf::GgufFile& f, const ModelConfig& c, const char* suffix,
                            int64_t fallback) {
  return optional_int(f, arch_key(c, suffix), fallback);
}

Status read_expert_weights(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string norm_key = arch_key(c, "expert_weights_norm");
  Result<bool> norm = f.get_bool(norm_key, false);
  if (!norm.ok()) return invalid_argument("model: key '{}': {}", norm_key, norm.status().message());
  c.moe.norm_weights = *norm;
  const std::string scale_key = arch_key(c, "expert_weights_scale");
  Result<float> scale = f.get_f32(scale_key, 0.0f);
  if (!scale.ok() || !std::isfinite(*scale)) {
    return invalid_argument("model: key '{}' must be a finite number", scale_key);
  }
  c.moe.weights_scale = *scale == 0.0f ? 1.0f : *scale;  // llama.cpp: 0 or 1 leave the weights
  return Status();
}

Result<ExpertGating> read_expert_gating(const gguf::GgufFile& f, const ModelConfig& c,
                                        std::optional<ExpertGating> fallback) {
  const std::string key = arch_key(c, "expert_gating_func");
  if (!fallback.has_value() && !f.has(key)) {
    return not_found("model: missing required key '{}'", key);
  }
  FOLIO_ASSIGN_OR_RETURN(const int64_t v, optional_int(f, key, 0));
  switch (v) {
    case 0:  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_NONE: not set
      if (fallback.has_value()) return *fallback;
      return invalid_argument("model: key '{}' = 0 (none) and {} has no default gating", key,
                              c.arch);
    case 1:
      return ExpertGating::kSoftmax;
    case 2:
      return ExpertGating::kSigmoid;
    case 3:
      return ExpertGating::kSoftmaxWeight;
    default:
      return unsupported(
          "model: key '{}' = {} (expected 0 unset, 1 softmax, 2 sigmoid or 3 softmax_weight)", key,
          v);
  }
}

Status read_mamba2_ssm(const gguf::GgufFile& f, ModelConfig& c) {
  SsmConfig& s = c.ssm;
  s.kind = SsmKind::kMamba2;
  FOLIO_ASSIGN_OR_RETURN(const int64_t conv, require_int(f, arch_key(c, "ssm.conv_kernel")));
  FOLIO_ASSIGN_OR_RETURN(s.d_state, require_int(f, arch_key(c, "ssm.state_size")));
  FOLIO_ASSIGN_OR_RETURN(s.d_inner, require_int(f, arch_key(c, "ssm.inner_size")));
  FOLIO_ASSIGN_OR_RETURN(const int64_t groups, require_int(f, arch_key(c, "ssm.group_count")));
  FOLIO_ASSIGN_OR_RETURN(const int64_t heads, require_int(f, arch_key(c, "ssm.time_step_rank")));
  for (const auto& [v, name] :
       {std::pair{conv, "ssm.conv_kernel"}, std::pair{groups, "ssm.group_count"},
        std::pair{heads, "ssm.time_step_rank"}}) {
    if (v <= 0 || v > (1 << 16)) {
      return invalid_argument("model: '{}' = {} is out of range", arch_key(c, name), v);
    }
  }
  s.d_conv = static_cast<int>(conv);
  s.n_k_heads = static_cast<int>(groups);
  s.n_v_heads = static_cast<int>(heads);
  if (s.d_inner % s.n_k_heads != 0 || s.d_inner % s.n_v_heads != 0) {
    return invalid_argument("model: '{}' = {} is not a multiple of '{}' = {} and '{}' = {}",
                            arch_key(c, "ssm.inner_size"), s.d_inner,
                            arch_key(c, "ssm.group_count"), s.n_k_heads,
                            arch_key(c, "ssm.time_step_rank"), s.n_v_heads);
  }
  return Status();
}

Status read_swa_layout(const gguf::GgufFile& f, ModelConfig& c, int64_t default_period,
                       bool required) {
  const std::string window_key = arch_key(c, "attention.sliding_window");
  if (required && !f.has(window_key))
    return not_found("model: missing required key '{}'", window_key);
  if (f.has(window_key)) {
    Result<int64_t> window = f.get_i64(window_key);
    if (!window.ok() || *window < 0 || *window > (int64_t{1} << 30)) {
      return invalid_argument("model: key '{}' must be an integer in [0, 2^30]", window_key);
    }
    c.n_swa = static_cast<int>(*window);
    if (required && c.n_swa == 0) {
      return invalid_argument("model: key '{}' must be positive", window_key);
    }
  }
  if (c.n_swa == 0) return Status();

  const std::string pattern_key = arch_key(c, "attention.sliding_window_pattern");
  const gguf::Value* v = f.find(pattern_key);
  if (v != nullptr && v->array() != nullptr) {
    const gguf::Array& a = *v->array();
    if (a.size() != static_cast<size_t>(c.n_layer)) {
      return invalid_argument("model: key '{}' has {} values, expected one per layer ({})",
                              pattern_key, a.size(), c.n_layer);
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (const std::vector<uint8_t>* b = a.bools()) {
        c.swa_layers[i] = (*b)[i];
      } else if (std::optional<int64_t> x = a.int_at(i)) {
        c.swa_layers[i] = *x != 0;
      } else {
        return invalid_argument("model: key '{}' must hold bools or integers", pattern_key);
      }
    }
  } else {
    int64_t period = default_period;
    if (v != nullptr) {
      Result<int64_t> p = f.get_i64(pattern_key);
      if (!p.ok() || *p < 0 || *p > (1 << 16)) {
        return invalid_argument("model: key '{}' must be an integer period in [0, 65536]",
                                pattern_key);
      }
      period = *p;
    }
    for (int il = 0; il < c.n_layer; ++il) {
      c.swa_layers[static_cast<size_t>(il)] = period == 0 || il % period < period - 1;
    }
  }
  return Status();
}

Status read_expert_groups(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string groups_key = arch_key(c, "expert_group_count");
  const std::string used_key = arch_key(c, "expert_group_used_count");
  FOLIO_ASSIGN_OR_RETURN(const int64_t groups, optional_int(f, groups_key, 0));
  FOLIO_ASSIGN_OR_RETURN(const int64_t used, optional_int(f, used_key, 0));
  const int64_t x = c.moe.n_expert;
  if (groups < 0 || used < 0 || (x == 0 && groups != 0) || (x > 0 && groups >= x)) {
    return invalid_argument("model: '{}' = {} must be 0 or less than '{}' = {}", groups_key,
                            groups, arch_key(c, "expert_count"), x);
  }
  if (groups > 1) {
    if (x % groups != 0 || x / groups < 2) {
      return invalid_argument("model: '{}' = {} experts do not split into '{}' = {} groups of 2 or more",
                              arch_key(c, "expert_count"), x, groups_key, groups);
    }
    if (used < 1 || used >= groups || used * (x / groups) < c.moe.n_expert_used) {
      return invalid_argument(
          "model: '{}' = {} must be in [1, {}) and its groups hold '{}' = {} experts", used_key,
          used, groups, arch_key(c, "expert_used_count"), c.moe.n_expert_used);
    }
  }
  c.moe.n_groups = static_cast<int>(groups);
  c.moe.n_groups_used = static_cast<int>(used);
  return Status();
}

Status read_latent_attention(const gguf::GgufFile& f, ModelConfig& c) {
  MlaConfig& m = c.mla;
  FOLIO_ASSIGN_OR_RETURN(m.kv_lora_rank, require_int(f, arch_key(c, "attention.kv_lora_rank")));
  const int blocks = c.n_layer;  // block_count, MTP blocks included (as llama.cpp counts here)
  const bool lite = blocks == 27 || blocks == 26 || (blocks == 48 && c.n_vocab == 128256);
  if (!lite) {
    FOLIO_ASSIGN_OR_RETURN(m.q_lora_rank, require_int(f, arch_key(c, "attention.q_lora_rank")));
  }
  FOLIO_ASSIGN_OR_RETURN(m.head_dim_qk, optional_int(f, arch_key(c, "attention.key_length_mla"), 0));
  FOLIO_ASSIGN_OR_RETURN(m.head_dim_v, optional_int(f, arch_key(c, "attention.value_length_mla"), 0));
  if (m.head_dim_qk == 0 || m.head_dim_v == 0) {
    return unsupported(
        "model: '{}' / '{}' absent: a file with the joint attn_kv_b tensor (converted before the "
        "split attn_k_b / attn_v_b) is not supported; convert it again",
        arch_key(c, "attention.key_length_mla"), arch_key(c, "attention.value_length_mla"));
  }
  const int64_t r = c.rope.n_dims;
  for (const auto& [v, name, lo] :
       {std::tuple{m.kv_lora_rank, "attention.kv_lora_rank", int64_t{1}},
        std::tuple{m.q_lora_rank, "attention.q_lora_rank", int64_t{0}},
        std::tuple{m.head_dim_qk, "attention.key_length_mla", r + 1},
        std::tuple{m.head_dim_v, "attention.value_length_mla", int64_t{1}}}) {
    if (v < lo || v > (1 << 16)) {
      return invalid_argument("model: '{}' = {} is out of range [{}, 65536]", arch_key(c, name), v,
                              lo);
    }
  }
  if (c.head_dim_k != m.kv_lora_rank + r || c.head_dim_v != m.kv_lora_rank) {
    return invalid_argument(
        "model: '{}' = {} and '{}' = {} must be kv_lora_rank + rope dims = {} and kv_lora_rank = {} "
        "(the latent row)",
        arch_key(c, "attention.key_length"), c.head_dim_k, arch_key(c, "attention.value_length"),
        c.head_dim_v, m.kv_lora_rank + r, m.kv_lora_rank);
  }
  const std::string mul_key = arch_key(c, "rope.scaling.yarn_log_multiplier");
  FOLIO_ASSIGN_OR_RETURN(const float mul, optional_float(f, mul_key, 0.0f));
  if (!std::isfinite(mul)) return invalid_argument("model: key '{}' must be finite", mul_key);
  m.yarn_log_mul = mul / 0.1f;  // the converter stores 0.1 * mscale_all_dim
  return Status();
}

Status read_rope_sections(const gguf::GgufFile& f, ModelConfig& c, bool required) {
  const std::string key = arch_key(c, "rope.dimension_sections");
  c.rope.sections = {0, 0, 0, 0};
  if (!f.has(key)) {
    if (required) return not_found("model: missing required key '{}'", key);
    return Status();
  }
  Result<std::vector<int64_t>> s = f.get_int_array(key);
  if (!s.ok()) return invalid_argument("model: key '{}': {}", key, s.status().message());
  if (s->empty() || s->size() > 4) {
    return invalid_argument("model: key '{}' has {} values, expected up to 4", key, s->size());
  }
  for (size_t i = 0; i < s->size(); ++i) {
    if ((*s)[i] < 0 || (*s)[i] > (1 << 16)) {
      return invalid_argument("model: key '{}' value {} is out of range", key, (*s)[i]);
    }
    c.rope.sections[i] = static_cast<int>((*s)[i]);
  }
  return Status();
}

Status read_rope_scaling_alpha(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string key = arch_key(c, "rope.scaling.alpha");
  FOLIO_ASSIGN_OR_RETURN(const float alpha, optional_float(f, key, 0.0f));
  if (!std::isfinite(alpha) || alpha < 0.0f) {
    return invalid_argument("model: key '{}' = {} must be a finite number >= 0", key, alpha);
  }
  if (alpha == 0.0f) return Status();
  const int64_t d = c.head_dim_k;
  if (d <= 2) {
    return invalid_argument("model: key '{}' needs a head dim above 2 (have {})", key, d);
  }
  c.rope.freq_base *= std::pow(alpha, static_cast<float>(d) / static_cast<float>(d - 2));
  c.rope.freq_base_swa = c.rope.freq_base;
  return Status();
}

Status read_moe_layer_step(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string key = arch_key(c, "interleave_moe_layer_step");
  FOLIO_ASSIGN_OR_RETURN(const int64_t step, require_int(f, key));
  if (step < 1 || step > c.n_layer) {
    return invalid_argument("model: key '{}' = {} must be in [1, {}]", key, step, c.n_layer);
  }
  for (int il = c.moe.n_dense_lead; il < c.n_layer; ++il) {
    if ((il + 1) % step != 0) {
      return unsupported(
          "model: '{}' = {} makes layer {} (after '{}' = {}) a dense layer that llama.cpp "
          "loads no dense FFN for",
          key, step, il, arch_key(c, "leading_dense_block_count"), c.moe.n_dense_lead);
    }
  }
  c.moe.layer_step = static_cast<int>(step);
  return Status();
}

}  // namespace folio::model
