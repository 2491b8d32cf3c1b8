#include "model/weights.h"

#include <fmt/format.h>

namespace folio::model {

namespace {

std::array<int64_t, kMaxDims> shape(int64_t a, int64_t b = 1, int64_t c = 1) {
  return {a, b, c, 1};
}

}  // namespace

Status for_each_tensor(const ModelConfig& cfg, ModelWeights& w, const TensorVisitor& visit) {
  const int64_t e = cfg.n_embd, dk = cfg.head_dim_k, dv = cfg.head_dim_v;
  w.layers.resize(static_cast<size_t>(cfg.n_layer));
  auto add = [&](std::string name, std::array<int64_t, kMaxDims> ne, bool required, OpKind consumer,
                 TensorView* view, const char* fallback = nullptr) {
    return visit(TensorSpec{std::move(name), ne, required, consumer, view, fallback});
  };

  FOLIO_RETURN_IF_ERROR(
      add("token_embd.weight", shape(e, cfg.n_vocab), true, OpKind::kGetRows, &w.token_embd));
  if (cfg.rope_freq_factors) {
    FOLIO_RETURN_IF_ERROR(
        add("rope_freqs.weight", shape(cfg.rope.n_dims / 2), false, OpKind::kRope, &w.rope_freqs));
  }
  FOLIO_RETURN_IF_ERROR(
      add("output_norm.weight", shape(e), true, OpKind::kRmsNorm, &w.output_norm));
  FOLIO_RETURN_IF_ERROR(add("output.weight", shape(e, cfg.n_vocab), false, OpKind::kMulMat,
                            &w.output, "token_embd.weight"));

  for (int il = 0; il < cfg.n_layer; ++il) {
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
    auto n = [il](const char* base) { return fmt::format("blk.{}.{}", il, base); };
    const bool bias_req = cfg.qkv_bias == BiasMode::kRequired;
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.attn_norm));
    FOLIO_RETURN_IF_ERROR(add(n("attn_q.weight"), shape(e, hq * dk), true, OpKind::kMulMat, &l.wq));
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_k.weight"), shape(e, hkv * dk), true, OpKind::kMulMat, &l.wk));
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_v.weight"), shape(e, hkv * dv), true, OpKind::kMulMat, &l.wv));
    if (cfg.qkv_bias != BiasMode::kNone) {
      FOLIO_RETURN_IF_ERROR(add(n("attn_q.bias"), shape(hq * dk), bias_req, OpKind::kAdd, &l.bq));
      FOLIO_RETURN_IF_ERROR(add(n("attn_k.bias"), shape(hkv * dk), bias_req, OpKind::kAdd, &l.bk));
      FOLIO_RETURN_IF_ERROR(add(n("attn_v.bias"), shape(hkv * dv), bias_req, OpKind::kAdd, &l.bv));
    }
    FOLIO_RETURN_IF_ERROR(
        add(n("attn_output.weight"), shape(hq * dv, e), true, OpKind::kMulMat, &l.wo));
    if (cfg.out_bias != BiasMode::kNone) {
      FOLIO_RETURN_IF_ERROR(add(n("attn_output.bias"), shape(e),
                                cfg.out_bias == BiasMode::kRequired, OpKind::kAdd, &l.bo));
    }
    if (cfg.qk_norm) {
      FOLIO_RETURN_IF_ERROR(
          add(n("attn_q_norm.weight"), shape(dk), true, OpKind::kRmsNorm, &l.attn_q_norm));
      FOLIO_RETURN_IF_ERROR(
          add(n("attn_k_norm.weight"), shape(dk), true, OpKind::kRmsNorm, &l.attn_k_norm));
    }
    if (cfg.post_norms) {
      FOLIO_RETURN_IF_ERROR(add(n("post_attention_norm.weight"), shape(e), true, OpKind::kRmsNorm,
                                &l.attn_post_norm));
    }
    FOLIO_RETURN_IF_ERROR(add(n("ffn_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.ffn_norm));
    if (cfg.is_moe(il)) {
      const int64_t x = cfg.moe.n_expert, fx = cfg.moe.n_ff_exp;
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_gate_inp.weight"), shape(e, x), true, OpKind::kMulMat, &l.ffn_gate_inp));
      FOLIO_RETURN_IF_ERROR(add(n("ffn_gate_exps.weight"), shape(e, fx, x), true, OpKind::kMulMatId,
                                &l.ffn_gate_exps));
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_up_exps.weight"), shape(e, fx, x), true, OpKind::kMulMatId, &l.ffn_up_exps));
      FOLIO_RETURN_IF_ERROR(add(n("ffn_down_exps.weight"), shape(fx, e, x), true, OpKind::kMulMatId,
                                &l.ffn_down_exps));
    } else {
      const int64_t f = cfg.n_ff[static_cast<size_t>(il)];
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_gate.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_gate));
      FOLIO_RETURN_IF_ERROR(add(n("ffn_up.weight"), shape(e, f), true, OpKind::kMulMat, &l.ffn_up));
      FOLIO_RETURN_IF_ERROR(
          add(n("ffn_down.weight"), shape(f, e), true, OpKind::kMulMat, &l.ffn_down));
    }
    if (cfg.post_norms) {
      FOLIO_RETURN_IF_ERROR(
          add(n("post_ffw_norm.weight"), shape(e), true, OpKind::kRmsNorm, &l.ffn_post_norm));
    }
  }
  return Status();
}

}  // namespace folio::model
