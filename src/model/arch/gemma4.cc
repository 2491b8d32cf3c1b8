// gemma4: Gemma 4 text models (llama.cpp's hparams and graph): E2B / E4B
// (per-layer inputs, shared KV layers) and the dense 31B shape.
//   - token embeddings scaled by sqrt(n_embd); neox rope; GELU (tanh) gated
//     FFN; sandwich norms as gemma3 (post_attention_norm, post_ffw_norm);
//   - sliding-window layers from the attention.sliding_window_pattern array,
//     with their own head dims (attention.key_length_swa / value_length_swa),
//     rotated dims (rope.dimension_count_swa, default rope.dimension_count)
//     and rope base (rope.freq_base_swa, default 10000, never scaled);
//     full-attention layers rope with the rope_freqs.weight divisors
//     ("proportional" rope: 1e30 divisors leave the unrotated dims alone);
//   - attention scale 1 with q/k RMS norms; V is RMS-normalised without a
//     weight; a layer without attn_v.weight uses its k projection (before
//     the k norm and rope) as V;
//   - the last attention.shared_kv_layers layers compute no K/V and hold no
//     cache: they attend over layer n_kv - 2 (sliding-window layers) or
//     n_kv - 1 (full-attention layers), n_kv = n_layer - shared, as
//     llama.cpp's reuse rule (ModelConfig::kv_source);
//   - per-layer inputs (embedding_length_per_layer_input P > 0):
//       pl = (rms_norm(per_layer_model_proj x / sqrt(E)) * per_layer_proj_norm
//             + per_layer_token_embd[t] * sqrt(P)) / sqrt(2)      [P, L, T]
//     and after each layer's FFN residual
//       x += post_norm(proj(gelu(inp_gate x) * pl[:, il, :]));
//   - optional layer_output_scale.weight: the layer's output times it;
//   - optional final_logit_softcapping;
//   - mixture of experts (26B-A4B: expert_count > 0, every layer with
//     ffn_gate_inp): beside the dense FFN, which then ends in post_ffw_norm_1,
//       router logits = ffn_gate_inp (rms_norm(x) / sqrt(E) * ffn_gate_inp.scale)
//       experts       = post_ffw_norm_2(moe(rms_norm(x) * pre_ffw_norm_2))
//     with softmax routing, the top k weights renormalised, GELU-gated
//     experts (ffn_gate_up_exps, or ffn_gate_exps and ffn_up_exps) and the
//     optional per-expert scale ffn_down_exps.scale on their outputs; the two
//     branches are summed before post_ffw_norm. x is the residual after
//     attention.
#include <cmath>

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/hparams.h"

namespace folio::model {

namespace {

// The 26B-A4B mixture of experts (see the file comment).
Status configure_gemma4_moe(const gguf::GgufFile& f, ModelConfig& c) {
  MoeConfig& m = c.moe;  // expert_used_count in [1, expert_count]: read_common, validate_config
  m.gating = ExpertGating::kSoftmax;
  m.norm_weights = true;
  m.weights_scale = 1.0f;
  m.n_dense_lead = 0;
  for (int il = 0; il < c.n_layer; ++il) {
    if (f.find_tensor(fmt::format("blk.{}.ffn_gate_inp.weight", il)) == nullptr) {
      return unsupported("model: gemma4 layer {} has no ffn_gate_inp.weight: a mixture of experts "
                         "with dense layers between is not supported",
                         il);
    }
  }
  c.moe_with_dense_ffn = true;
  c.moe_gate_up_fused = f.find_tensor("blk.0.ffn_gate_up_exps.weight") != nullptr;
  return Status();
}

Status configure_gemma4(const gguf::GgufFile& f, ModelConfig& c) {
  c.rope.mode = RopeMode::kNeox;
  c.qk_norm = true;
  c.post_norms = true;
  c.ffn_glu = GluKind::kGeGlu;
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.attn_scale = 1.0f;
  FOLIO_RETURN_IF_ERROR(read_final_softcap(f, c));
  c.rope_freq_factors = true;
  c.attn_v_optional = true;
  c.layer_out_scale = true;
  if (c.moe.n_expert > 0) FOLIO_RETURN_IF_ERROR(configure_gemma4_moe(f, c));
  const std::string pattern_key = arch_key(c, "attention.sliding_window_pattern");
  const gguf::Value* pattern = f.find(pattern_key);
  if (pattern == nullptr || pattern->array() == nullptr) {
    return not_found("model: missing required key '{}' (one flag per layer)", pattern_key);
  }
  FOLIO_RETURN_IF_ERROR(read_swa_layout(f, c, /*default_period=*/0, /*required=*/true));

  auto get_int = [&](const char* suffix, bool required, int64_t def) -> Result<int64_t> {
    const std::string key = arch_key(c, suffix);
    if (!f.has(key)) {
      if (required) return not_found("model: missing required key '{}'", key);
      return def;
    }
    Result<int64_t> v = f.get_i64(key);
    if (!v.ok()) return invalid_argument("model: key '{}': {}", key, v.status().message());
    return *v;
  };
  FOLIO_ASSIGN_OR_RETURN(c.head_dim_k_swa, get_int("attention.key_length_swa", true, 0));
  FOLIO_ASSIGN_OR_RETURN(c.head_dim_v_swa, get_int("attention.value_length_swa", true, 0));
  if (c.head_dim_k != c.head_dim_v || c.head_dim_k_swa != c.head_dim_v_swa ||
      c.head_dim_k_swa <= 0 || c.head_dim_k_swa > (1 << 16)) {
    return invalid_argument(
        "model: gemma4 needs equal key and value head dims (full {} / {}, sliding window {} / {})",
        c.head_dim_k, c.head_dim_v, c.head_dim_k_swa, c.head_dim_v_swa);
  }
  FOLIO_ASSIGN_OR_RETURN(const int64_t n_rot_swa,
                         get_int("rope.dimension_count_swa", false, c.rope.n_dims));
  if (n_rot_swa <= 0 || n_rot_swa > c.head_dim_k_swa || n_rot_swa % 2 != 0) {
    return invalid_argument("model: rope dims {} ('{}') must be even and in [2, head_dim {}]",
                            n_rot_swa, arch_key(c, "rope.dimension_count_swa"), c.head_dim_k_swa);
  }
  c.rope.n_dims_swa = static_cast<int>(n_rot_swa);

  const std::string base_key = arch_key(c, "rope.freq_base_swa");
  Result<float> base = f.get_f32(base_key, 10000.0f);
  if (!base.ok()) return invalid_argument("model: key '{}': {}", base_key, base.status().message());
  c.rope.freq_base_swa = *base;
  c.rope.freq_scale_swa = 1.0f;

  FOLIO_ASSIGN_OR_RETURN(c.n_embd_per_layer, get_int("embedding_length_per_layer_input", true, 0));
  if (c.n_embd_per_layer < 0 || c.n_embd_per_layer > (1 << 16)) {
    return invalid_argument("model: '{}' = {} is out of range",
                            arch_key(c, "embedding_length_per_layer_input"), c.n_embd_per_layer);
  }
  FOLIO_ASSIGN_OR_RETURN(const int64_t shared, get_int("attention.shared_kv_layers", false, 0));
  if (shared < 0 || (shared > 0 && shared > c.n_layer - 2)) {
    return invalid_argument("model: '{}' = {} must be in [0, n_layer - 2 = {}]",
                            arch_key(c, "attention.shared_kv_layers"), shared, c.n_layer - 2);
  }
  c.n_kv_shared = static_cast<int>(shared);
  // A shared layer reads a layer of its own kind (window, head dims, KV heads).
  for (int il = c.n_layer_kv(); il < c.n_layer; ++il) {
    const int src = c.kv_source(il);
    if (c.is_swa(src) != c.is_swa(il) || c.n_head_kv_of(src) != c.n_head_kv_of(il)) {
      return invalid_argument(
          "model: gemma4 shared-KV layer {} ({}) would read layer {} ({}, {} KV heads vs {})", il,
          c.is_swa(il) ? "sliding window" : "full attention", src,
          c.is_swa(src) ? "sliding window" : "full attention", c.n_head_kv_of(src),
          c.n_head_kv_of(il));
    }
  }
  return Status();
}

// Self-attention of layer il (see the header comment). h [E, T] -> [E, T].
TensorView gemma4_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                            int il, const TensorView& h, const ForwardInputs& in,
                            cache::KvCache& cache) {
  const LayerWeights& l = w.layers[static_cast<size_t>(il)];
  const int64_t t = h.ne[1];
  const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
  const int64_t d = cfg.head_dim_k_of(il);  // key and value head dim
  const RopeParams rp = cfg.rope_params(il);
  const TensorView factors = cfg.is_swa(il) ? TensorView{} : w.rope_freqs;

  TensorView q = reshape(ctx.mul_mat(l.wq, h), {d, hq, t, 1});
  ctx.rms_norm(q, l.attn_q_norm, cfg.norm_eps, q);
  q = ctx.rope(q, in.pos, rp, factors);

  TensorView o;  // [D, Hq, T]
  if (cfg.has_kv(il)) {
    TensorView k = reshape(ctx.mul_mat(l.wk, h), {d, hkv, t, 1});
    TensorView v;
    if (!l.wv.empty()) {
      v = reshape(ctx.mul_mat(l.wv, h), {d, hkv, t, 1});
      ctx.rms_norm(v, TensorView{}, cfg.norm_eps, v);
    } else {  // V = the k projection, normalised without a weight
      v = ctx.rms_norm(k, TensorView{}, cfg.norm_eps);
    }
    ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
    k = ctx.rope(k, in.pos, rp, factors);
    o = attend_through_cache(ctx, cfg, il, q, k, reshape(v, {d * hkv, t, 1, 1}), in, cache);
  } else {
    o = attend_cached(ctx, cfg, il, cfg.kv_source(il), q, in, cache);
  }
  return ctx.mul_mat(l.wo, reshape(o, {d * hq, t, 1, 1}));  // [E, T]
}

// A mixture-of-experts layer's FFN (see the file comment): x [E, n] the
// residual after attention, hf its ffn_norm -> the two branches' sum [E, n].
TensorView gemma4_moe_block(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                            const TensorView& x, const TensorView& hf, bool fuse) {
  const float eps = cfg.norm_eps;
  const TensorView mlp = dense_ffn(ctx, cfg, l, hf);  // [E, n]
  ctx.rms_norm(mlp, l.ffn_post_norm_1, eps, mlp);
  const TensorView router_in = ctx.rms_norm(x, TensorView{}, eps);  // [E, n]
  ctx.scale(router_in, 1.0f / std::sqrt(static_cast<float>(cfg.n_embd)), 0.0f, router_in);
  ctx.mul(router_in, l.ffn_gate_inp_s, router_in);
  const TensorView logits = ctx.mul_mat(l.ffn_gate_inp, router_in);  // [X, n]
  const TensorView experts =
      moe_ffn(ctx, cfg, l, ctx.rms_norm(x, l.ffn_pre_norm_2, eps), logits);  // [E, n]
  post_norm_add(ctx, mlp, experts, l.ffn_post_norm_2, eps, fuse);
  return mlp;
}

// The per-layer inputs of every layer, [P, T, L] (layer il: the [P, T]
// slice il), from the scaled token embeddings x [E, T].
TensorView per_layer_inputs(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                            const ForwardInputs& in, const TensorView& x) {
  const int64_t p = cfg.n_embd_per_layer, n_l = cfg.n_layer, t = x.ne[1];
  const TensorView emb = ctx.get_rows(w.per_layer_tok_embd, in.tokens);  // [P * L, T]
  ctx.scale(emb, std::sqrt(static_cast<float>(p)), 0.0f, emb);
  const TensorView proj = ctx.mul_mat(w.per_layer_model_proj, x);  // [P * L, T]
  ctx.scale(proj, 1.0f / std::sqrt(static_cast<float>(cfg.n_embd)), 0.0f, proj);
  const TensorView proj3 = reshape(proj, {p, n_l, t, 1});
  ctx.rms_norm(proj3, w.per_layer_proj_norm, cfg.norm_eps, proj3);
  ctx.add(proj3, reshape(emb, {p, n_l, t, 1}), proj3);
  ctx.scale(proj3, 1.0f / std::sqrt(2.0f), 0.0f, proj3);
  // [P, L, T] -> [P, T, L]: one strided copy, so each layer reads a
  // contiguous slice.
  TensorView src = proj3;
  src.ne = {p, t, n_l, 1};
  src.nb[1] = proj3.nb[2];
  src.nb[2] = proj3.nb[1];
  const TensorView out = ctx.f32(p, t, n_l);
  ctx.cpy(src, out);
  return out;
}

TensorView forward_gemma4(const ModelConfig& cfg, const ModelWeights& w, const ForwardInputs& in,
                          cache::KvCache& cache, ForwardContext& ctx) {
  const int64_t e = cfg.n_embd, t = in.n_tokens;
  const float eps = cfg.norm_eps;
  TensorView x = embed_tokens(ctx, cfg, w, in);  // [E, T]
  const int64_t p = cfg.n_embd_per_layer;
  const TensorView pl_all = p > 0 ? per_layer_inputs(ctx, cfg, w, in, x) : TensorView{};
  for (int il = 0; il < cfg.n_layer; ++il) {
    const LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const bool last = il + 1 == cfg.n_layer;
    x = ctx.place_near(x, l.attn_norm);  // where offloaded layers begin (outside the mark)
    const ForwardContext::Mark mark = ctx.mark();
    const TensorView h = ctx.rms_norm(x, l.attn_norm, eps);
    TensorView a = gemma4_attention(ctx, cfg, w, il, h, in, cache);
    // A one-token step's post norm, residual add and FFN norm: one dispatch
    // where a device fuses them (kRmsNormAddRmsNorm, bit for bit the same).
    const bool fuse = t == 1 && !last;
    if (!fuse) ctx.rms_norm(a, l.attn_post_norm, eps, a);
    TensorView pl = p > 0 ? slice_rows(reshape(pl_all, {p, t * cfg.n_layer, 1, 1}), il * t, t)
                          : TensorView{};  // [P, T]
    if (last) {
      if (in.n_outputs == 0) return {};
      x = gather_outputs(ctx, x, in);
      a = gather_outputs(ctx, a, in);
      if (p > 0) pl = gather_outputs(ctx, pl, in);
    }
    const int64_t n = x.ne[1];
    const TensorView hf = ctx.f32_near(l.ffn_norm, e, n);
    if (fuse) {
      ctx.rms_norm_add_rms_norm(x, a, l.attn_post_norm, l.ffn_norm, eps, x, hf);
    } else {
      ctx.add_rms_norm(x, a, l.ffn_norm, eps, x, hf);
    }
    // A one-token step's post norms with their adds: one dispatch each
    // where a device fuses them (kRmsNormAdd).
    const TensorView f =
        cfg.is_moe(il) ? gemma4_moe_block(ctx, cfg, l, x, hf, t == 1) : dense_ffn(ctx, cfg, l, hf);
    post_norm_add(ctx, x, f, l.ffn_post_norm, eps, t == 1);
    if (p > 0) {
      const TensorView g = ctx.mul_mat(l.pl_inp_gate, x);  // [P, n]
      ctx.unary(g, UnaryKind::kGelu, g);
      ctx.mul(g, pl, g);
      const TensorView pe = ctx.mul_mat(l.pl_proj, g);  // [E, n]
      post_norm_add(ctx, x, pe, l.pl_post_norm, eps, t == 1);
    }
    if (!l.out_scale.empty()) ctx.mul(x, l.out_scale, x);
    if (!last) ctx.release(mark);
  }
  return output_logits(ctx, cfg, w, x);
}

constexpr ArchFamily kGemma4[] = {
    {"gemma4", configure_gemma4, forward_gemma4},
};

}  // namespace

std::span<const ArchFamily> gemma4_archs() {
  return kGemma4;
}

}  // namespace folio::model
