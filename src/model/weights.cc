#include "model/weights.h"

#include <fmt/format.h>

namespace folio::model {

namespace {

std::array<int64_t, kMaxDims> shape(int64_t a, int64_t b = 1, int64_t c = 1) {
  return {a, b, c, 1};
}

// The tensors of a Mamba-2 layer (granitehybrid; see SsmConfig).
Status visit_mamba2_tensors(const ModelConfig& cfg, int il, LayerWeights& l,
                            const TensorVisitor& visit) {
  const SsmConfig& s = cfg.ssm;
  const int64_t e = cfg.n_embd, c = s.conv_channels(), h = s.n_v_heads;
  auto add = [&](const char* base, std::array<int64_t, kMaxDims> ne, bool required,
                 OpKind consumer, TensorView* view) {
    return visit(
        TensorSpec{fmt::format("blk.{}.{}", il, base), ne, required, consumer, view, nullptr});
  };
  FOLIO_RETURN_IF_ERROR(
      add("ssm_in.weight", shape(e, 2 * s.d_inner + 2 * s.n_k_heads * s.d_state + h), true,
          OpKind::kMulMat, &l.ssm_in));
  FOLIO_RETURN_IF_ERROR(
      add("ssm_conv1d.weight", shape(s.d_conv, c), true, OpKind::kSsmConv, &l.ssm_conv1d));
  FOLIO_RETURN_IF_ERROR(
      add("ssm_conv1d.bias", shape(c), false, OpKind::kSsmConv, &l.ssm_conv1d_b));
  FOLIO_RETURN_IF_ERROR(add("ssm_dt.bias", shape(h), true, OpKind::kAdd, &l.ssm_dt));
  FOLIO_RETURN_IF_ERROR(add("ssm_a", shape(1, h), true, OpKind::kSsmScan, &l.ssm_a));
  FOLIO_RETURN_IF_ERROR(add("ssm_d", shape(1, h), true, OpKind::kMul, &l.ssm_d));
  FOLIO_RETURN_IF_ERROR(add("ssm_norm.weight", shape(s.d_inner / s.n_k_heads, s.n_k_heads),
                            !cfg.ssm_norm_optional, OpKind::kMul, &l.ssm_norm));
  return add("ssm_out.weight", shape(s.d_inner, e), true, OpKind::kMulMat, &l.ssm_out);
}

// The tensors of a short-conv layer (lfm2): in_proj yields B, C and x.
Status visit_short_conv_tensors(const ModelConfig& cfg, int il, LayerWeights& l,
                                const TensorVisitor& visit) {
  const int64_t e = cfg.n_embd;
  auto add = [&](const char* base, std::array<int64_t, kMaxDims> ne, OpKind consumer,
                 TensorView* view) {
    return visit(TensorSpec{fmt::format("blk.{}.{}", il, base), ne, true, consumer, view, nullptr});
  };
  FOLIO_RETURN_IF_ERROR(
      add("shortconv.in_proj.weight", shape(e, 3 * e), OpKind::kMulMat, &l.ssm_in));
  FOLIO_RETURN_IF_ERROR(
      add("shortconv.conv.weight", shape(cfg.ssm.d_conv, e), OpKind::kSsmConv, &l.ssm_conv1d));
  return add("shortconv.out_proj.weight", shape(e, e), OpKind::kMulMat, &l.ssm_out);
}

// The tensors of a gated DeltaNet layer (hybrid models; see SsmConfig).
Status visit_ssm_tensors(const ModelConfig& cfg, int il, LayerWeights& l,
                         const TensorVisitor& visit) {
  const SsmConfig& s = cfg.ssm;
  const int64_t e = cfg.n_embd, c = s.conv_channels(), hv = s.n_v_heads;
  auto add = [&](const char* base, std::array<int64_t, kMaxDims> ne, OpKind consumer,
                 TensorView* view) {
    return visit(TensorSpec{fmt::format("blk.{}.{}", il, base), ne, true, consumer, view, nullptr});
  };
  if (s.fused_qkvz) {
    FOLIO_RETURN_IF_ERROR(
        add("ssm_in.weight", shape(e, c + s.d_inner), OpKind::kMulMat, &l.ssm_in));
  } else {
    FOLIO_RETURN_IF_ERROR(add("attn_qkv.weight", shape(e, c), OpKind::kMulMat, &l.ssm_qkv));
    FOLIO_RETURN_IF_ERROR(
        add("attn_gate.weight", shape(e, s.d_inner), OpKind::kMulMat, &l.ssm_gate));
  }
  FOLIO_RETURN_IF_ERROR(
      add("ssm_conv1d.weight", shape(s.d_conv, c), OpKind::kSsmConv, &l.ssm_conv1d));
  FOLIO_RETURN_IF_ERROR(add("ssm_dt.bias", shape(hv), OpKind::kAdd, &l.ssm_dt));
  FOLIO_RETURN_IF_ERROR(add("ssm_a", shape(hv), OpKind::kMul, &l.ssm_a));
  if (s.fused_ba) {
    FOLIO_RETURN_IF_ERROR(add("ssm_ba.weight", shape(e, 2 * hv), OpKind::kMulMat, &l.ssm_ba));
  } else {
    FOLIO_RETURN_IF_ERROR(add("ssm_beta.weight", shape(e, hv), OpKind::kMulMat, &l.ssm_beta));
    FOLIO_RETURN_IF_ERROR(add("ssm_alpha.weight", shape(e, hv), OpKind::kMulMat, &l.ssm_alpha));
  }
  FOLIO_RETURN_IF_ERROR(add("ssm_norm.weight", shape(s.d_state), OpKind::kRmsNorm, &l.ssm_norm));
  return add("ssm_out.weight", shape(s.d_inner, e), OpKind::kMulMat, &l.ssm_out);
}

// The tensors of an encoder (bert, nomic-bert: llama.cpp's names). Every
// layer: attention (separate q/k/v with biases, or one attn_qkv), output
// projection, layer norm, FFN (up/down with biases, or gated), layer norm.
Status visit_encoder_tensors(const ModelConfig& cfg, ModelWeights& w, const TensorVisitor& visit) {
  const int64_t e = cfg.n_embd, dk = cfg.head_dim_k, dv = cfg.head_dim_v;
  auto add = [&](std::string name, std::array<int64_t, kMaxDims> ne, bool required, OpKind consumer,
                 TensorView* view) {
    return visit(TensorSpec{std::move(name), ne, required, consumer, view, nullptr});
  };
  FOLIO_RETURN_IF_ERROR(
      add("token_embd.weight", shape(e, cfg.n_vocab), true, OpKind::kGetRows, &w.token_embd));
  FOLIO_RETURN_IF_ERROR(add("token_types.weight", shape(e, cfg.n_token_types), true,
                            OpKind::kGetRows, &w.token_types));
  if (cfg.learned_pos) {
    FOLIO_RETURN_IF_ERROR(add("position_embd.weight", shape(e, cfg.n_ctx_train), true,
                              OpKind::kGetRows, &w.pos_embd));
  }
  FOLIO_RETURN_IF_ERROR(
      add("token_embd_norm.weight", shape(e), true, OpKind::kNorm, &w.token_embd_norm));
  FOLIO_RETURN_IF_ERROR(
      add("token_embd_norm.bias", shape(e), true, OpKind::kNorm, &w.token_embd_norm_b));
  for (int il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
    const int64_t f = cfg.n_ff[static_cast<size_t>(il)];
    auto n = [il](const char* base) { return fmt::format("blk.{}.{}", il, base); };
    if (cfg.fused_qkv) {
      FOLIO_RETURN_IF_ERROR(add(n("attn_qkv.weight"), shape(e, hq * dk + hkv * (dk + dv)), true,
                                OpKind::kMulMat, &l.wqkv));
    } else {
      FOLIO_RETURN_IF_ERROR(add(n("attn_q.weight"), shape(e, hq * dk), true, OpKind::kMulMat, &l.wq));
      FOLIO_RETURN_IF_ERROR(add(n("attn_k.weight"), shape(e, hkv * dk), true, OpKind::kMulMat, &l.wk));
      FOLIO_RETURN_IF_ERROR(add(n("attn_v.weight"), shape(e, hkv * dv), true, OpKind::kMulMat, &l.wv));
    }
    if (cfg.qkv_bias != BiasMode::kNone) {
      const bool req = cfg.qkv_bias == BiasMode::kRequired;
      FOLIO_RETURN_IF_ERROR(add(n("attn_q.bias"), shape(hq * dk), req, OpKind::kAdd, &l.bq));
      FOLIO_RETURN_IF_ERROR(add(n("attn_k.bias"), shape(hkv * dk), req, OpKind::kAdd, &l.bk));
      FOLIO_RETURN_IF_ERROR(add(n("attn_v.bias"), shape(hkv * dv), req, OpKind::kAdd, &l.bv));
    }
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_output.weight"), shape(hq * dv, e), true, OpKind::kMulMat, &l.wo));
    if (cfg.out_bias != BiasMode::kNone) {
      FOLIO_RETURN_IF_ERROR(add(n("attn_output.bias"), shape(e),
                                cfg.out_bias == BiasMode::kRequired, OpKind::kAdd, &l.bo));
    }
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_output_norm.weight"), shape(e), true, OpKind::kNorm, &l.attn_out_norm));
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_output_norm.bias"), shape(e), true, OpKind::kNorm, &l.attn_out_norm_b));
    FOLIO_RETURN_IF_ERROR(add(n("ffn_up.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_up));
    if (cfg.ffn_gated) {
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_gate.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_gate));
    } else {
      FOLIO_RETURN_IF_ERROR(add(n("ffn_up.bias"), shape(f), true, OpKind::kAdd, &l.ffn_up_b));
    }
    FOLIO_RETURN_IF_ERROR(
        add(n("ffn_down.weight"), shape(f, e), true, OpKind::kMulMat, &l.ffn_down));
    if (!cfg.ffn_gated) {
      FOLIO_RETURN_IF_ERROR(add(n("ffn_down.bias"), shape(e), true, OpKind::kAdd, &l.ffn_down_b));
    }
    FOLIO_RETURN_IF_ERROR(
        add(n("layer_output_norm.weight"), shape(e), true, OpKind::kNorm, &l.layer_out_norm));
    FOLIO_RETURN_IF_ERROR(
        add(n("layer_output_norm.bias"), shape(e), true, OpKind::kNorm, &l.layer_out_norm_b));
  }
  return Status();
}

// Multi-head latent attention (deepseek2, cfg.mla): split attn_k_b /
// attn_v_b as current files hold them (llama.cpp's is_mla()).
Status visit_latent_attention_tensors(const ModelConfig& cfg, int il, LayerWeights& l,
                                      const TensorVisitor& visit) {
  const MlaConfig& m = cfg.mla;
  const int64_t e = cfg.n_embd, hq = cfg.n_head_of(il), r = cfg.rope.n_dims;
  const int64_t dl = m.kv_lora_rank, dqk = m.head_dim_qk, dn = m.head_dim_nope(r);
  auto n = [il](const char* base) { return fmt::format("blk.{}.{}", il, base); };
  auto add = [&](std::string name, std::array<int64_t, kMaxDims> ne, OpKind consumer,
                 TensorView* view) {
    return visit(TensorSpec{std::move(name), ne, true, consumer, view, nullptr});
  };
  if (m.q_lora_rank > 0) {
    FOLIO_RETURN_IF_ERROR(add(n("attn_q_a.weight"), shape(e, m.q_lora_rank), OpKind::kMulMat, &l.wq_a));
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_q_a_norm.weight"), shape(m.q_lora_rank), OpKind::kRmsNorm, &l.attn_q_a_norm));
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_q_b.weight"), shape(m.q_lora_rank, hq * dqk), OpKind::kMulMat, &l.wq_b));
  } else {
    FOLIO_RETURN_IF_ERROR(add(n("attn_q.weight"), shape(e, hq * dqk), OpKind::kMulMat, &l.wq));
  }
  FOLIO_RETURN_IF_ERROR(
      add(n("attn_kv_a_mqa.weight"), shape(e, dl + r), OpKind::kMulMat, &l.wkv_a_mqa));
  FOLIO_RETURN_IF_ERROR(
      add(n("attn_kv_a_norm.weight"), shape(dl), OpKind::kRmsNorm, &l.attn_kv_a_norm));
  FOLIO_RETURN_IF_ERROR(add(n("attn_k_b.weight"), shape(dn, dl, hq), OpKind::kMulMat, &l.wk_b));
  FOLIO_RETURN_IF_ERROR(
      add(n("attn_v_b.weight"), shape(dl, m.head_dim_v, hq), OpKind::kMulMat, &l.wv_b));
  return add(n("attn_output.weight"), shape(hq * m.head_dim_v, e), OpKind::kMulMat, &l.wo);
}

}  // namespace

Status for_each_tensor(const ModelConfig& cfg, ModelWeights& w, const TensorVisitor& visit) {
  const int64_t e = cfg.n_embd;
  w.layers.resize(static_cast<size_t>(cfg.n_layer));
  auto add = [&](std::string name, std::array<int64_t, kMaxDims> ne, bool required, OpKind consumer,
                 TensorView* view, const char* fallback = nullptr) {
    return visit(TensorSpec{std::move(name), ne, required, consumer, view, fallback});
  };
  if (cfg.is_embedding()) return visit_encoder_tensors(cfg, w, visit);

  FOLIO_RETURN_IF_ERROR(
      add("token_embd.weight", shape(e, cfg.n_vocab), true, OpKind::kGetRows, &w.token_embd));
  if (cfg.rope_freq_factors) {
    FOLIO_RETURN_IF_ERROR(
        add("rope_freqs.weight", shape(cfg.rope.n_dims / 2), false, OpKind::kRope, &w.rope_freqs));
  }
  if (cfg.rope_long_short) {
    FOLIO_RETURN_IF_ERROR(add("rope_factors_long.weight", shape(cfg.rope.n_dims / 2), false,
                              OpKind::kRope, &w.rope_long));
    FOLIO_RETURN_IF_ERROR(add("rope_factors_short.weight", shape(cfg.rope.n_dims / 2), false,
                              OpKind::kRope, &w.rope_short));
  }
  FOLIO_RETURN_IF_ERROR(
      add(cfg.output_norm_as_token_embd_norm ? "token_embd_norm.weight" : "output_norm.weight",
          shape(e), true, OpKind::kRmsNorm, &w.output_norm));
  FOLIO_RETURN_IF_ERROR(add("output.weight", shape(e, cfg.n_vocab), false, OpKind::kMulMat,
                            &w.output, "token_embd.weight"));
  if (cfg.output_bias) {
    FOLIO_RETURN_IF_ERROR(
        add("output.bias", shape(cfg.n_vocab), false, OpKind::kAdd, &w.output_b));
  }
  const int64_t pl = cfg.n_embd_per_layer;
  if (pl > 0) {
    FOLIO_RETURN_IF_ERROR(add("per_layer_token_embd.weight", shape(pl * cfg.n_layer, cfg.n_vocab),
                              true, OpKind::kGetRows, &w.per_layer_tok_embd));
    FOLIO_RETURN_IF_ERROR(add("per_layer_model_proj.weight", shape(e, pl * cfg.n_layer), true,
                              OpKind::kMulMat, &w.per_layer_model_proj));
    FOLIO_RETURN_IF_ERROR(add("per_layer_proj_norm.weight", shape(pl), true, OpKind::kRmsNorm,
                              &w.per_layer_proj_norm));
  }

  // One decoder layer: layer il of `lc` (the model's config, or an MTP
  // block's one-layer config), named as file block `block`.
  auto visit_layer = [&](const ModelConfig& lc, int il, int block, LayerWeights& l) -> Status {
    const ModelConfig& cfg = lc;
    const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
    const int64_t dk = cfg.head_dim_k_of(il), dv = cfg.head_dim_v_of(il);
    // Shared-KV layers (gemma4) compute no K/V: their k/v weights may be absent.
    const bool kv_req = cfg.has_kv(il);
    auto n = [block](const char* base) { return fmt::format("blk.{}.{}", block, base); };
    const bool bias_req = cfg.qkv_bias == BiasMode::kRequired;
    if (!cfg.post_norms_only) {
      FOLIO_RETURN_IF_ERROR(
          add(n("attn_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.attn_norm));
    }
    if (cfg.is_recurrent(il)) {
      switch (cfg.ssm.kind) {
        case SsmKind::kMamba2:
          FOLIO_RETURN_IF_ERROR(visit_mamba2_tensors(cfg, il, l, visit));
          break;
        case SsmKind::kShortConv:
          FOLIO_RETURN_IF_ERROR(visit_short_conv_tensors(cfg, il, l, visit));
          break;
        case SsmKind::kGatedDeltaNet:
          FOLIO_RETURN_IF_ERROR(visit_ssm_tensors(cfg, il, l, visit));
          break;
      }
    }
    // Attention (beside the recurrent mixer where cfg.parallel_mixers).
    if (cfg.has_attention(il) && cfg.mla.enabled()) {
      FOLIO_RETURN_IF_ERROR(visit_latent_attention_tensors(cfg, il, l, visit));
    } else if (cfg.has_attention(il)) {
      if (cfg.fused_qkv) {
        FOLIO_RETURN_IF_ERROR(add(n("attn_qkv.weight"), shape(e, hq * dk + hkv * (dk + dv)), true,
                                  OpKind::kMulMat, &l.wqkv));
      } else {
        FOLIO_RETURN_IF_ERROR(add(n("attn_q.weight"),
                                  shape(e, hq * dk * (cfg.attn_output_gate ? 2 : 1)), true,
                                  OpKind::kMulMat, &l.wq));
        FOLIO_RETURN_IF_ERROR(
            add(n("attn_k.weight"), shape(e, hkv * dk), kv_req, OpKind::kMulMat, &l.wk));
        FOLIO_RETURN_IF_ERROR(add(n("attn_v.weight"), shape(e, hkv * dv),
                                  kv_req && !cfg.attn_v_optional, OpKind::kMulMat, &l.wv));
      }
      if (cfg.qkv_bias != BiasMode::kNone) {
        const bool ignored = cfg.qkv_bias == BiasMode::kIgnored;
        FOLIO_RETURN_IF_ERROR(add(n("attn_q.bias"),
                                  shape(hq * dk * (cfg.attn_output_gate ? 2 : 1)), bias_req,
                                  OpKind::kAdd, ignored ? &l.bq_ignored : &l.bq));
        FOLIO_RETURN_IF_ERROR(add(n("attn_k.bias"), shape(hkv * dk), bias_req, OpKind::kAdd,
                                  ignored ? &l.bk_ignored : &l.bk));
        FOLIO_RETURN_IF_ERROR(add(n("attn_v.bias"), shape(hkv * dv), bias_req, OpKind::kAdd,
                                  ignored ? &l.bv_ignored : &l.bv));
      }
      FOLIO_RETURN_IF_ERROR(
          add(n("attn_output.weight"), shape(hq * dv, e), true, OpKind::kMulMat, &l.wo));
      if (cfg.out_bias != BiasMode::kNone) {
        FOLIO_RETURN_IF_ERROR(add(n("attn_output.bias"), shape(e),
                                  cfg.out_bias == BiasMode::kRequired, OpKind::kAdd,
                                  cfg.out_bias == BiasMode::kIgnored ? &l.bo_ignored : &l.bo));
      }
      if (cfg.attn_sinks) {
        FOLIO_RETURN_IF_ERROR(
            add(n("attn_sinks.weight"), shape(hq), true, OpKind::kFlashAttn, &l.attn_sinks));
      }
      if (cfg.qk_norm) {
        const int64_t qn = cfg.qk_norm_full ? hq * dk : dk, kn = cfg.qk_norm_full ? hkv * dk : dk;
        FOLIO_RETURN_IF_ERROR(
            add(n("attn_q_norm.weight"), shape(qn), true, OpKind::kRmsNorm, &l.attn_q_norm));
        FOLIO_RETURN_IF_ERROR(
            add(n("attn_k_norm.weight"), shape(kn), kv_req, OpKind::kRmsNorm, &l.attn_k_norm));
      }
      if (cfg.post_norms) {
        FOLIO_RETURN_IF_ERROR(add(n("post_attention_norm.weight"), shape(e), true, OpKind::kRmsNorm,
                                  &l.attn_post_norm));
      }
    }
    if (!cfg.single_block_layers && !cfg.post_norms_only) {
      FOLIO_RETURN_IF_ERROR(
          add(n(cfg.ffn_norm_post_attention ? "post_attention_norm.weight"
                : cfg.ffn_norm_bare_name    ? "ffn_norm"
                                            : "ffn_norm.weight"),
              shape(e), true, OpKind::kRmsNorm, &l.ffn_norm));
    }
    const bool gated = !cfg.ffn_relu_sqr;  // relu^2 FFNs have no gate
    if (cfg.is_moe(il)) {
      const int64_t x = cfg.moe.n_expert, fx = cfg.moe.n_ff_exp;
      const int64_t ex = cfg.moe_latent > 0 ? cfg.moe_latent : e;  // experts' input width
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_gate_inp.weight"), shape(e, x), true, OpKind::kMulMat, &l.ffn_gate_inp));
      if (cfg.moe_latent > 0) {
        FOLIO_RETURN_IF_ERROR(add(n("ffn_latent_down.weight"), shape(e, ex), true, OpKind::kMulMat,
                                  &l.ffn_latent_down));
        FOLIO_RETURN_IF_ERROR(add(n("ffn_latent_up.weight"), shape(ex, e), true, OpKind::kMulMat,
                                  &l.ffn_latent_up));
      }
      if (cfg.moe_gate_up_fused) {
        FOLIO_RETURN_IF_ERROR(add(n("ffn_gate_up_exps.weight"), shape(ex, 2 * fx, x), true,
                                  OpKind::kMulMatId, &l.ffn_gate_up_exps));
      } else {
        if (gated) {
          FOLIO_RETURN_IF_ERROR(add(n("ffn_gate_exps.weight"), shape(ex, fx, x), true,
                                    OpKind::kMulMatId, &l.ffn_gate_exps));
        }
        FOLIO_RETURN_IF_ERROR(add(n("ffn_up_exps.weight"), shape(ex, fx, x), true,
                                  OpKind::kMulMatId, &l.ffn_up_exps));
      }
      FOLIO_RETURN_IF_ERROR(add(n("ffn_down_exps.weight"), shape(fx, ex, x), true,
                                OpKind::kMulMatId, &l.ffn_down_exps));
      if (cfg.moe_with_dense_ffn) {  // the dense FFN's tensors: below
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_down_exps.scale"), shape(x), false, OpKind::kMul, &l.ffn_down_exps_s));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_gate_inp.scale"), shape(e), true, OpKind::kMul, &l.ffn_gate_inp_s));
        FOLIO_RETURN_IF_ERROR(add(n("pre_ffw_norm_2.weight"), shape(e), true, OpKind::kRmsNorm,
                                  &l.ffn_pre_norm_2));
        FOLIO_RETURN_IF_ERROR(add(n("post_ffw_norm_1.weight"), shape(e), true, OpKind::kRmsNorm,
                                  &l.ffn_post_norm_1));
        FOLIO_RETURN_IF_ERROR(add(n("post_ffw_norm_2.weight"), shape(e), true, OpKind::kRmsNorm,
                                  &l.ffn_post_norm_2));
      }
      if (cfg.moe.selection_bias) {
        FOLIO_RETURN_IF_ERROR(
            add(n("exp_probs_b.bias"), shape(x), true, OpKind::kAdd, &l.ffn_exp_probs_b));
      }
      if (cfg.moe.biases) {  // expert biases are gathered by expert id (get_rows)
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_gate_inp.bias"), shape(x), true, OpKind::kAdd, &l.ffn_gate_inp_b));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_gate_exps.bias"), shape(fx, x), true, OpKind::kGetRows, &l.ffn_gate_exps_b));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_up_exps.bias"), shape(fx, x), true, OpKind::kGetRows, &l.ffn_up_exps_b));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_down_exps.bias"), shape(e, x), true, OpKind::kGetRows, &l.ffn_down_exps_b));
      }
      if (cfg.n_ff_shexp > 0) {
        const int64_t fs = cfg.n_ff_shexp;
        if (cfg.shexp_gated) {
          FOLIO_RETURN_IF_ERROR(add(n("ffn_gate_inp_shexp.weight"), shape(e), true,
                                    OpKind::kMulMat, &l.ffn_gate_inp_shexp));
        }
        if (gated) {
          FOLIO_RETURN_IF_ERROR(add(n("ffn_gate_shexp.weight"), shape(e, fs), true,
                                    OpKind::kMulMat, &l.ffn_gate_shexp));
        }
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_up_shexp.weight"), shape(e, fs), true, OpKind::kMulMat, &l.ffn_up_shexp));
        FOLIO_RETURN_IF_ERROR(add(n("ffn_down_shexp.weight"), shape(fs, e), true, OpKind::kMulMat,
                                  &l.ffn_down_shexp));
      }
    }
    // The dense FFN: every FFN layer but the routed ones (gemma4's routed
    // layers run one beside their experts); single-block mixer layers have none.
    if (cfg.has_ffn(il) && (!cfg.is_moe(il) || cfg.moe_with_dense_ffn)) {
      const int64_t f = cfg.n_ff[static_cast<size_t>(il)];
      if (cfg.ffn_fused_gate_up) {
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_up.weight"), shape(e, 2 * f), true, OpKind::kMulMat, &l.ffn_up));
      } else if (!gated) {
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_up.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_up));
        FOLIO_RETURN_IF_ERROR(add(n("ffn_up.bias"), shape(f), false, OpKind::kAdd, &l.ffn_up_b));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_down.bias"), shape(e), false, OpKind::kAdd, &l.ffn_down_b));
      } else {
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_gate.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_gate));
        FOLIO_RETURN_IF_ERROR(
            add(n("ffn_up.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_up));
      }
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_down.weight"), shape(f, e), true, OpKind::kMulMat, &l.ffn_down));
    }
    if (cfg.post_norms) {
      FOLIO_RETURN_IF_ERROR(
          add(n("post_ffw_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.ffn_post_norm));
    }
    if (pl > 0) {
      FOLIO_RETURN_IF_ERROR(
          add(n("inp_gate.weight"), shape(e, pl), true, OpKind::kMulMat, &l.pl_inp_gate));
      FOLIO_RETURN_IF_ERROR(add(n("proj.weight"), shape(pl, e), true, OpKind::kMulMat, &l.pl_proj));
      FOLIO_RETURN_IF_ERROR(
          add(n("post_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.pl_post_norm));
    }
    if (cfg.layer_out_scale) {
      FOLIO_RETURN_IF_ERROR(
          add(n("layer_output_scale.weight"), shape(1), false, OpKind::kMul, &l.out_scale));
    }
    return Status();
  };
  for (int il = 0; il < cfg.n_layer; ++il) {
    FOLIO_RETURN_IF_ERROR(visit_layer(cfg, il, il, w.layers[static_cast<size_t>(il)]));
  }
  w.mtp.clear();
  if (!cfg.nextn.loaded) return Status();
  w.mtp.resize(static_cast<size_t>(cfg.nextn.n_layer));
  for (int j = 0; j < cfg.nextn.n_layer; ++j) {
    MtpWeights& m = w.mtp[static_cast<size_t>(j)];
    const int block = cfg.n_layer + j;
    FOLIO_RETURN_IF_ERROR(visit_layer(cfg.mtp_block_config(j), 0, block, m.layer));
    auto n = [block](const char* base) { return fmt::format("blk.{}.nextn.{}", block, base); };
    FOLIO_RETURN_IF_ERROR(
        add(n("eh_proj.weight"), shape(2 * e, e), true, OpKind::kMulMat, &m.eh_proj));
    FOLIO_RETURN_IF_ERROR(add(n("enorm.weight"), shape(e), true, OpKind::kRmsNorm, &m.enorm));
    FOLIO_RETURN_IF_ERROR(add(n("hnorm.weight"), shape(e), true, OpKind::kRmsNorm, &m.hnorm));
    FOLIO_RETURN_IF_ERROR(add(n("shared_head_norm.weight"), shape(e), false, OpKind::kRmsNorm,
                              &m.shared_head_norm));
    FOLIO_RETURN_IF_ERROR(add(n("shared_head_head.weight"), shape(e, cfg.n_vocab), false,
                              OpKind::kMulMat, &m.shared_head_head));
    FOLIO_RETURN_IF_ERROR(add(n("embed_tokens.weight"), shape(e, cfg.n_vocab), false,
                              OpKind::kGetRows, &m.embed_tokens));
  }
  return Status();
}

}  // namespace folio::model
