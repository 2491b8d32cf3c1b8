#include "model/config.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <optional>

#include "model/arch/arch.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

constexpr int64_t kMaxLayers = 1 << 12;
constexpr int64_t kMaxDim = int64_t{1} << 24;

Status positive(const char* what, int64_t v, int64_t limit = kMaxDim) {
  if (v <= 0 || v > limit)
    return invalid_argument("model: {} = {} is out of range [1, {}]", what, v, limit);
  return Status();
}

Status positive_float(const char* what, float v) {
  if (!(v > 0.0f) || !std::isfinite(v))
    return invalid_argument("model: {} = {} must be a positive number", what, v);
  return Status();
}

Result<RopeScaling> parse_scaling(std::string_view s, const std::string& key) {
  if (s == "none") return RopeScaling::kNone;
  if (s == "linear") return RopeScaling::kLinear;
  if (s == "yarn") return RopeScaling::kYarn;
  return unsupported(
      "model: key '{}': rope scaling type '{}' is not supported (none, linear, yarn)", key, s);
}

// The key of the family's norm epsilon.
std::string norm_eps_key(const ModelConfig& c) {
  if (c.family != nullptr && c.family->norm_eps_key != nullptr) {
    return arch_key(c, c.family->norm_eps_key);
  }
  const bool encoder = c.family != nullptr && c.family->encoder;
  return arch_key(c, encoder ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon");
}

// The keys every family shares (llama.cpp's llama_model::load_hparams).
Status read_common(const gguf::GgufFile& f, ModelConfig& c) {
  FOLIO_ASSIGN_OR_RETURN(c.n_ctx_train, require_int(f, arch_key(c, "context_length")));
  FOLIO_ASSIGN_OR_RETURN(c.n_embd, require_int(f, arch_key(c, "embedding_length")));
  FOLIO_ASSIGN_OR_RETURN(int64_t n_layer, require_int(f, arch_key(c, "block_count")));
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "block_count").c_str(), n_layer, kMaxLayers));
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "embedding_length").c_str(), c.n_embd));
  c.n_layer = static_cast<int>(n_layer);

  // Vocabulary size: <arch>.vocab_size, else the tokenizer's token count.
  if (f.has(arch_key(c, "vocab_size"))) {
    FOLIO_ASSIGN_OR_RETURN(c.n_vocab, require_int(f, arch_key(c, "vocab_size")));
  } else if (f.has("tokenizer.ggml.tokens")) {
    Result<const gguf::Array*> toks = f.get_array("tokenizer.ggml.tokens");
    if (!toks.ok())
      return invalid_argument("model: key 'tokenizer.ggml.tokens': {}", toks.status().message());
    c.n_vocab = static_cast<int64_t>((*toks)->size());
  } else {
    return not_found("model: missing required key '{}' (and no tokenizer.ggml.tokens)",
                     arch_key(c, "vocab_size"));
  }

  FOLIO_ASSIGN_OR_RETURN(std::vector<int64_t> heads,
                         per_layer(f, arch_key(c, "attention.head_count"), c.n_layer, true, 0));
  FOLIO_ASSIGN_OR_RETURN(
      std::vector<int64_t> heads_kv,
      per_layer(f, arch_key(c, "attention.head_count_kv"), c.n_layer, false, -1));
  FOLIO_ASSIGN_OR_RETURN(c.n_ff,
                         per_layer(f, arch_key(c, "feed_forward_length"), c.n_layer, false, 0));
  c.n_head.resize(heads.size());
  c.n_head_kv.resize(heads.size());
  const std::string head_key = arch_key(c, "attention.head_count");
  const std::string kv_key = arch_key(c, "attention.head_count_kv");
  for (size_t i = 0; i < heads.size(); ++i) {
    // 0 heads: no attention in this layer (the recurrent layers of hybrid
    // files); layers that run attention are checked in validate_config.
    if (heads[i] < 0 || heads[i] > (1 << 16)) {
      return invalid_argument("model: key '{}' = {} (layer {}) is out of range [0, 65536]",
                              head_key, heads[i], i);
    }
    c.n_head[i] = static_cast<int>(heads[i]);
    // head_count_kv defaults to head_count, layer by layer; 0 marks a layer
    // without attention (granitehybrid, lfm2, nemotron_h read it so).
    const int64_t kv = heads_kv[i] < 0 ? heads[i] : heads_kv[i];
    if (kv < 0 || kv > (1 << 16) || (kv > 0 && heads[i] % kv != 0)) {
      return invalid_argument("model: key '{}' = {} (layer {}) must be >= 0 and divide {} = {}",
                              kv_key, kv, i, head_key, heads[i]);
    }
    c.n_head_kv[i] = static_cast<int>(kv);
  }
  // Head dims default to n_embd / head_count of layer 0, as llama.cpp's; a
  // file whose layer 0 has no attention takes the first layer that has.
  int64_t heads0 = 0;
  for (int64_t h : heads) {
    if (h > 0) {
      heads0 = h;
      break;
    }
  }
  const int64_t default_head_dim = heads0 > 0 && c.n_embd % heads0 == 0 ? c.n_embd / heads0 : 0;
  FOLIO_ASSIGN_OR_RETURN(c.head_dim_k,
                         optional_int(f, arch_key(c, "attention.key_length"), default_head_dim));
  FOLIO_ASSIGN_OR_RETURN(c.head_dim_v,
                         optional_int(f, arch_key(c, "attention.value_length"), default_head_dim));
  FOLIO_RETURN_IF_ERROR(
      positive(arch_key(c, "attention.key_length").c_str(), c.head_dim_k, 1 << 16));
  FOLIO_RETURN_IF_ERROR(
      positive(arch_key(c, "attention.value_length").c_str(), c.head_dim_v, 1 << 16));

  // Decoders normalise with RMS norm, encoders with layer norm: each family
  // has its own epsilon key (llama.cpp requires the one it uses).
  const std::string eps_key = norm_eps_key(c);
  if (!f.has(eps_key)) return not_found("model: missing required key '{}'", eps_key);
  FOLIO_ASSIGN_OR_RETURN(c.norm_eps, optional_float(f, eps_key, 0.0f));

  // Rope: base, dims, scaling (llama.cpp defaults: base 1e4, linear type, factor
  // from rope.scaling.factor or the older rope.scale_linear).
  RopeConfig& r = c.rope;
  FOLIO_ASSIGN_OR_RETURN(r.freq_base, optional_float(f, arch_key(c, "rope.freq_base"), 10000.0f));
  FOLIO_ASSIGN_OR_RETURN(int64_t n_rot,
                         optional_int(f, arch_key(c, "rope.dimension_count"), c.head_dim_k));
  if (n_rot <= 0 || n_rot > c.head_dim_k || n_rot % 2 != 0) {
    return invalid_argument("model: rope dims {} ('{}') must be even and in [2, head_dim {}]",
                            n_rot, arch_key(c, "rope.dimension_count"), c.head_dim_k);
  }
  r.n_dims = static_cast<int>(n_rot);
  float factor = 0.0f;
  FOLIO_ASSIGN_OR_RETURN(factor, optional_float(f, arch_key(c, "rope.scaling.factor"), 0.0f));
  if (factor == 0.0f) {
    FOLIO_ASSIGN_OR_RETURN(factor, optional_float(f, arch_key(c, "rope.scale_linear"), 0.0f));
  }
  const std::string type_key = arch_key(c, "rope.scaling.type");
  r.scaling = RopeScaling::kLinear;
  if (f.has(type_key)) {
    Result<std::string_view> s = f.get_string(type_key);
    if (!s.ok()) return invalid_argument("model: key '{}': {}", type_key, s.status().message());
    FOLIO_ASSIGN_OR_RETURN(r.scaling, parse_scaling(*s, type_key));
  }
  if (factor == 0.0f) factor = 1.0f;
  FOLIO_RETURN_IF_ERROR(positive_float("rope scaling factor", factor));
  if (r.scaling == RopeScaling::kLinear && factor == 1.0f) r.scaling = RopeScaling::kNone;
  r.scaling_factor = r.scaling == RopeScaling::kNone ? 1.0f : factor;
  FOLIO_ASSIGN_OR_RETURN(
      int64_t orig,
      optional_int(f, arch_key(c, "rope.scaling.original_context_length"), c.n_ctx_train));
  r.n_ctx_orig = static_cast<int>(orig);
  // YaRN's extrapolation mix: 1 with yarn scaling, else 0; its magnitude
  // and correction dims keep llama.cpp's defaults (1, beta_fast 32,
  // beta_slow 1): llama.cpp reads no yarn_ext_factor / yarn_attn_factor key
  // for these families and yarn_beta_* only for mistral3 (read_yarn_betas).
  r.ext_factor = r.scaling == RopeScaling::kYarn ? 1.0f : 0.0f;
  r.attn_factor = 1.0f;
  // A rope magnitude beside YaRN's (LongRoPE's sqrt(1 + ln(s) / ln(n_orig)), phi3).
  FOLIO_ASSIGN_OR_RETURN(const float rope_attn_factor,
                         optional_float(f, arch_key(c, "rope.scaling.attn_factor"), 1.0f));
  FOLIO_RETURN_IF_ERROR(positive_float("rope.scaling.attn_factor", rope_attn_factor));
  r.attn_factor *= rope_attn_factor;
  r.freq_base_swa = r.freq_base;

  // Mixture of experts (dense when expert_count is absent or 0).
  FOLIO_ASSIGN_OR_RETURN(int64_t n_expert, optional_int(f, arch_key(c, "expert_count"), 0));
  FOLIO_ASSIGN_OR_RETURN(int64_t n_used, optional_int(f, arch_key(c, "expert_used_count"), 0));
  FOLIO_ASSIGN_OR_RETURN(c.moe.n_ff_exp,
                         optional_int(f, arch_key(c, "expert_feed_forward_length"), 0));
  if (n_expert < 0 || n_expert > 4096 || n_used < 0 || n_used > n_expert) {
    return invalid_argument("model: {} = {} and {} = {} are inconsistent",
                            arch_key(c, "expert_count"), n_expert, arch_key(c, "expert_used_count"),
                            n_used);
  }
  c.moe.n_expert = static_cast<int>(n_expert);
  c.moe.n_expert_used = static_cast<int>(n_used);
  FOLIO_RETURN_IF_ERROR(read_expert_groups(f, c));
  // The gating function is a trait of the family (llama.cpp fixes it in each
  // graph); the families that read `expert_gating_func` call
  // read_expert_gating.
  c.moe.gating = ExpertGating::kSoftmax;

  // attention.scale and final_logit_softcapping are read by the families
  // llama.cpp reads them for (read_attention_scale, read_final_softcap).
  c.swa_layers.assign(static_cast<size_t>(c.n_layer), 0);
  return Status();
}

// The gated DeltaNet shape of a hybrid model (keys named as llama.cpp's).
Status validate_ssm(const ModelConfig& c) {
  const SsmConfig& s = c.ssm;
  if (c.recurrent_layers.size() != static_cast<size_t>(c.n_layer)) {
    return invalid_argument("model: {} recurrent-layer flags for {} layers",
                            c.recurrent_layers.size(), c.n_layer);
  }
  bool any_attention = false;
  for (int l = 0; l < c.n_layer; ++l) any_attention |= c.has_attention(l);
  if (!any_attention) {
    return unsupported(
        "model: every layer is a recurrent layer; hybrid models need at least one attention "
        "layer");
  }
  const std::string conv_key = s.kind == SsmKind::kShortConv ? arch_key(c, "shortconv.l_cache")
                                                             : arch_key(c, "ssm.conv_kernel");
  FOLIO_RETURN_IF_ERROR(positive(conv_key.c_str(), s.d_conv, 64));
  if (s.d_conv < 2) {
    return invalid_argument("model: '{}' = {} must be at least 2", conv_key, s.d_conv);
  }
  if (s.kind == SsmKind::kShortConv) {
    if (s.d_inner != c.n_embd || s.conv_channels() != c.n_embd) {
      return invalid_argument("model: short-conv layers need {} conv channels (n_embd), not {}",
                              c.n_embd, s.conv_channels());
    }
    return Status();
  }
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "ssm.state_size").c_str(), s.d_state, 1 << 12));
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "ssm.group_count").c_str(), s.n_k_heads, 1 << 12));
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "ssm.time_step_rank").c_str(), s.n_v_heads, 1 << 12));
  FOLIO_RETURN_IF_ERROR(positive(arch_key(c, "ssm.inner_size").c_str(), s.d_inner));
  if (s.n_v_heads % s.n_k_heads != 0) {
    return invalid_argument("model: '{}' = {} is not a multiple of '{}' = {}",
                            arch_key(c, "ssm.time_step_rank"), s.n_v_heads,
                            arch_key(c, "ssm.group_count"), s.n_k_heads);
  }
  if (s.kind == SsmKind::kMamba2) {
    if (s.d_inner % s.n_v_heads != 0) {
      return invalid_argument("model: '{}' = {} is not a multiple of '{}' = {}",
                              arch_key(c, "ssm.inner_size"), s.d_inner,
                              arch_key(c, "ssm.time_step_rank"), s.n_v_heads);
    }
  } else if (s.d_inner != int64_t{s.n_v_heads} * s.d_state) {
    return invalid_argument(
        "model: '{}' = {} must equal '{}' * '{}' = {} (key and value heads share the state size)",
        arch_key(c, "ssm.inner_size"), s.d_inner, arch_key(c, "ssm.time_step_rank"),
        arch_key(c, "ssm.state_size"), int64_t{s.n_v_heads} * s.d_state);
  }
  return Status();
}

}  // namespace

const char* pooling_type_name(PoolingType p) {
  switch (p) {
    case PoolingType::kNone:
      return "none";
    case PoolingType::kMean:
      return "mean";
    case PoolingType::kCls:
      return "cls";
    case PoolingType::kLast:
      return "last";
    case PoolingType::kRank:
      return "rank";
  }
  return "?";
}

const char* rope_scaling_name(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone:
      return "none";
    case RopeScaling::kLinear:
      return "linear";
    case RopeScaling::kYarn:
      return "yarn";
  }
  return "?";
}


bool ModelConfig::is_embedding() const {
  return family != nullptr && family->encoder;
}

bool ModelConfig::is_hybrid() const {
  for (uint8_t r : recurrent_layers) {
    if (r != 0) return true;
  }
  return false;
}

cache::KvGeometry ModelConfig::cache_geometry() const {
  cache::KvGeometry g;
  g.name = arch;
  for (int l = 0; l < n_layer_kv(); ++l) {
    cache::LayerGeometry layer;
    if (!has_attention(l) && !is_recurrent(l)) {
      layer.stateless = true;
    } else if (is_recurrent(l)) {
      layer.recurrent = true;
      if (ssm.kind == SsmKind::kShortConv) {  // conv taps only
        layer.state = {ssm.d_conv - 1, ssm.conv_channels(), 0, 0, 0};
      } else {
        layer.state = {ssm.d_conv - 1, ssm.conv_channels(), ssm.d_state, ssm.n_v_heads,
                       ssm.kind == SsmKind::kMamba2 ? ssm.head_v_dim() : 0};
      }
      if (has_attention(l)) {  // parallel mixers: K/V beside the state
        layer.with_kv = true;
        layer.kv = {n_head_kv_of(l), static_cast<int32_t>(head_dim_k_of(l)),
                    static_cast<int32_t>(head_dim_v_of(l)), is_swa(l) ? n_swa : 0};
      }
    } else if (mla.enabled()) {  // one latent row per token; V is its first Dl values
      layer.kv = {1, static_cast<int32_t>(head_dim_k), static_cast<int32_t>(head_dim_v), 0, true};
    } else {
      layer.kv = {n_head_kv_of(l), static_cast<int32_t>(head_dim_k_of(l)),
                  static_cast<int32_t>(head_dim_v_of(l)), is_swa(l) ? n_swa : 0};
    }
    g.layers.push_back(layer);
  }
  return g;
}

float ModelConfig::kq_scale() const {
  return attn_scale != 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim_k));
}

RopeParams ModelConfig::rope_params(int layer) const {
  RopeParams p;
  p.mode = rope.mode;
  const bool swa = is_swa(layer);
  p.n_dims = swa && rope.n_dims_swa > 0 ? rope.n_dims_swa : rope.n_dims;
  p.freq_base = swa ? rope.freq_base_swa : rope.freq_base;
  p.freq_scale = swa ? rope.freq_scale_swa : 1.0f / rope.scaling_factor;
  p.ext_factor = rope.ext_factor;
  p.attn_factor = rope.attn_factor;
  p.beta_fast = rope.beta_fast;
  p.beta_slow = rope.beta_slow;
  p.n_ctx_orig = rope.n_ctx_orig;
  p.sections = rope.sections;
  return p;
}

Status validate_config(const ModelConfig& c) {
  FOLIO_RETURN_IF_ERROR(positive("n_vocab", c.n_vocab, int64_t{1} << 31));
  FOLIO_RETURN_IF_ERROR(positive("context_length", c.n_ctx_train, int64_t{1} << 31));
  FOLIO_RETURN_IF_ERROR(positive("head_dim_k (attention.key_length)", c.head_dim_k, 1 << 16));
  FOLIO_RETURN_IF_ERROR(positive("head_dim_v (attention.value_length)", c.head_dim_v, 1 << 16));
  FOLIO_RETURN_IF_ERROR(positive_float(norm_eps_key(c).c_str(), c.norm_eps));
  FOLIO_RETURN_IF_ERROR(positive_float(arch_key(c, "rope.freq_base").c_str(), c.rope.freq_base));
  FOLIO_RETURN_IF_ERROR(
      positive_float(arch_key(c, "rope.freq_base_swa").c_str(), c.rope.freq_base_swa));
  if (c.rope.scaling == RopeScaling::kYarn) {
    FOLIO_RETURN_IF_ERROR(
        positive("rope.scaling.original_context_length", c.rope.n_ctx_orig, int64_t{1} << 31));
  }
  if (!std::isfinite(c.attn_scale) || !std::isfinite(c.final_softcap) || c.final_softcap < 0.0f ||
      !std::isfinite(c.attn_softcap) || c.attn_softcap < 0.0f) {
    return invalid_argument("model: attention scale / soft-capping values must be finite and >= 0");
  }
  if (c.n_swa < 0) return invalid_argument("model: sliding window {} is negative", c.n_swa);
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.is_moe(l) || !c.has_ffn(l)) continue;
    const int64_t ff = c.n_ff[static_cast<size_t>(l)];
    if (ff <= 0 || ff > kMaxDim) {
      return invalid_argument("model: '{}' = {} (layer {}) must be positive for a dense FFN",
                              arch_key(c, "feed_forward_length"), ff, l);
    }
  }
  for (int l = 0; l < c.n_layer; ++l) {
    if (c.has_attention(l) && c.n_head_of(l) <= 0) {
      return invalid_argument("model: '{}' = {} (layer {}): an attention layer needs heads",
                              arch_key(c, "attention.head_count"), c.n_head_of(l), l);
    }
    if (c.has_attention(l) && c.n_head_kv_of(l) <= 0) {
      return invalid_argument("model: '{}' = {} (layer {}) must be positive and divide {} = {}",
                              arch_key(c, "attention.head_count_kv"), c.n_head_kv_of(l), l,
                              arch_key(c, "attention.head_count"), c.n_head_of(l));
    }
  }
  if (c.is_hybrid()) FOLIO_RETURN_IF_ERROR(validate_ssm(c));
  if (c.attn_output_gate && c.head_dim_k != c.head_dim_v) {
    return invalid_argument("model: gated attention needs equal key and value head dims ({} / {})",
                            c.head_dim_k, c.head_dim_v);
  }
  if (c.n_ff_shexp < 0 || c.n_ff_shexp > kMaxDim) {
    return invalid_argument("model: '{}' = {} is out of range",
                            arch_key(c, "expert_shared_feed_forward_length"), c.n_ff_shexp);
  }
  if (c.moe.n_expert > 0) {
    if (c.moe.n_expert_used < 1) {
      return invalid_argument("model: '{}' must be in [1, {}] for a mixture-of-experts model",
                              arch_key(c, "expert_used_count"), c.moe.n_expert);
    }
    FOLIO_RETURN_IF_ERROR(
        positive(arch_key(c, "expert_feed_forward_length").c_str(), c.moe.n_ff_exp));
  }
  return Status();
}

Result<ModelConfig> ModelConfig::from_gguf(const gguf::GgufFile& file) {
  ModelConfig c;
  if (!file.has("general.architecture"))
    return not_found("model: missing required key 'general.architecture'");
  Result<std::string_view> arch = file.get_string("general.architecture");
  if (!arch.ok())
    return invalid_argument("model: key 'general.architecture': {}", arch.status().message());
  c.arch = std::string(*arch);
  c.family = find_arch(c.arch);
  if (c.family == nullptr) {
    return unsupported("model: unknown architecture '{}' (supported: {})", c.arch, known_archs());
  }
  FOLIO_RETURN_IF_ERROR(read_common(file, c));
  FOLIO_RETURN_IF_ERROR(c.family->configure(file, c));
  // Experts' gate and up in one ffn_gate_up_exps table where the file has
  // one (llama.cpp's create_tensor_gate_up_exps takes either layout).
  for (int l = 0; l < c.n_layer; ++l) {
    if (!c.is_moe(l)) continue;
    if (file.find_tensor(fmt::format("blk.{}.ffn_gate_up_exps.weight", l)) != nullptr) {
      c.moe_gate_up_fused = true;
    }
    break;
  }
  if (c.nextn.n_layer > 0) {
    const int block = c.n_layer;  // the first MTP block's index in the file
    c.nextn.moe = c.moe.n_expert > 0 && block >= c.moe.n_dense_lead &&
                  (block + 1) % std::max(c.moe.layer_step, 1) == 0;
  }
  FOLIO_RETURN_IF_ERROR(validate_config(c));
  return c;
}

ModelConfig ModelConfig::mtp_block_config(int j) const {
  ModelConfig b = *this;
  const auto i = static_cast<size_t>(j);
  b.n_layer = 1;
  b.n_head = {nextn.n_head[i]};
  b.n_head_kv = {nextn.n_head_kv[i]};
  b.n_ff = {nextn.n_ff[i]};
  b.swa_layers = {0};
  b.n_swa = 0;
  b.recurrent_layers.clear();
  b.n_kv_shared = 0;
  b.n_embd_per_layer = 0;
  b.moe.n_dense_lead = nextn.moe ? 0 : 1;
  b.moe.layer_step = 1;
  b.nextn = NextnConfig{};
  return b;
}

std::string ModelConfig::summary() const {
  int first_attn = 0;  // heads of the first attention layer (hybrids start with recurrent ones)
  while (first_attn + 1 < n_layer && !has_attention(first_attn)) ++first_attn;
  std::string s = fmt::format("{}: {} layers, n_embd {}, n_vocab {}, heads {}/{}, head_dim {}",
                              arch, n_layer, n_embd, n_vocab, n_head_of(first_attn),
                              n_head_kv_of(first_attn), head_dim_k);
  if (moe.n_expert > 0) {
    s += fmt::format(", experts {} (top {}, n_ff {})", moe.n_expert, moe.n_expert_used,
                     moe.n_ff_exp);
  } else {
    int first_ffn = 0;  // single-block layers: the first layer that runs an FFN
    while (first_ffn + 1 < n_layer && !has_ffn(first_ffn)) ++first_ffn;
    s += fmt::format(", n_ff {}", n_ff[static_cast<size_t>(first_ffn)]);
  }
  s += learned_pos ? std::string(", learned positions")
       : !attn_rope ? std::string(", no rope")
                    : fmt::format(", rope base {:g}", rope.freq_base);
  if (attn_rope && no_rope_layer_step > 0) {
    s += fmt::format(" (none on every {}th layer)", no_rope_layer_step);
  }
  if (rope.scaling != RopeScaling::kNone) {
    s += fmt::format(" ({} x{:g})", rope_scaling_name(rope.scaling), rope.scaling_factor);
  }
  if (n_swa > 0) s += fmt::format(", sliding window {} (base {:g})", n_swa, rope.freq_base_swa);
  if (attn_softcap > 0.0f) s += fmt::format(", attention softcap {:g}", attn_softcap);
  if (final_softcap > 0.0f) s += fmt::format(", final softcap {:g}", final_softcap);
  if (n_kv_shared > 0) s += fmt::format(", last {} layers share earlier layers' K/V", n_kv_shared);
  if (n_embd_per_layer > 0) s += fmt::format(", per-layer inputs of {}", n_embd_per_layer);
  if (attn_sinks) s += ", attention sinks";
  if (is_hybrid()) {
    int n_rec = 0;
    for (int l = 0; l < n_layer; ++l) n_rec += is_recurrent(l) ? 1 : 0;
    if (ssm.kind == SsmKind::kShortConv) {
      s += fmt::format(", {} short-conv layers (conv {})", n_rec, ssm.d_conv);
    } else if (ssm.kind == SsmKind::kMamba2) {
      s += fmt::format(", {} Mamba-2 layers (conv {}, {} heads x {}, {} groups, state {})", n_rec,
                       ssm.d_conv, ssm.n_v_heads, ssm.head_v_dim(), ssm.n_k_heads, ssm.d_state);
      if (parallel_mixers) s += " each beside its attention";
    } else {
      s += fmt::format(", {} gated DeltaNet layers (conv {}, heads {}/{} x {})", n_rec, ssm.d_conv,
                       ssm.n_k_heads, ssm.n_v_heads, ssm.d_state);
    }
  }
  if (mla.enabled()) {
    s += fmt::format(", latent attention (rows of {} + rope {}, q_lora {}, heads {} / {})",
                     mla.kv_lora_rank, rope.n_dims, mla.q_lora_rank, mla.head_dim_qk,
                     mla.head_dim_v);
  }
  if (moe.n_groups > 1) s += fmt::format(", {} of {} expert groups", moe.n_groups_used, moe.n_groups);
  if (n_ff_shexp > 0) s += fmt::format(", shared expert n_ff {}", n_ff_shexp);
  if (single_block_layers) {
    int n_attn = 0, n_ffn = 0;
    for (int l = 0; l < n_layer; ++l) {
      n_attn += has_attention(l) ? 1 : 0;
      n_ffn += has_ffn(l) ? 1 : 0;
    }
    s += fmt::format(", {} attention and {} FFN layers (one block each)", n_attn, n_ffn);
  }
  if (is_embedding()) {
    s += fmt::format(", {}embedding model (pooling {})", causal_attn ? "causal " : "",
                     pooling_type_name(pooling));
  }
  return s + fmt::format(", n_ctx_train {}", n_ctx_train);
}

}  // namespace folio::model
