// Mixture-of-experts FFN (qwen3moe, Mixtral-style llama). Shapes: x [E, n],
// router logits / probabilities [X, n], chosen experts I32 [k, n], their
// weights [1, k, n], expert activations [Fx, k, n], expert outputs [E, k, n]
// (latent experts, Nemotron 3 Super: inputs [L, n] = ffn_latent_down x,
// outputs [L, k, n], their sum taken back to [E, n] by ffn_latent_up).
//
// Order of operations follows llama.cpp's build_moe_ffn: router logits (+
// the router bias), probabilities from them (softmax or sigmoid; with
// kSoftmaxWeight the logits themselves), top-k by probability (plus the
// selection bias exp_probs_b where there is one: it picks the experts but is
// not part of their weights), weights = the chosen probabilities
// (kSoftmaxWeight: a softmax over the k chosen logits), optionally divided by
// their sum (clamped below at 2^-14), times expert_weights_scale, expert
// outputs scaled by their weight and summed in rank order (out = e0 + e1 + ...).
// Expert biases (cfg.moe.biases) are rows of [F, X] tables gathered by the
// chosen ids (get_rows) and added to the gate, up and down outputs, as
// ggml's add_id does.
//
// The router (probabilities, selection bias, expert groups, top-k, the
// weights' renormalisation and scale) is one kMoeRoute op, so on a device
// routing stays there: no read-back, no wait.
#include <algorithm>

#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

// Expert u's rows of e [E, k, n] as an [E, n] view.
TensorView expert_slice(const TensorView& e, int64_t u) {
  TensorView v = e;
  if (v.data != nullptr) v.data = static_cast<char*>(v.data) + static_cast<size_t>(u) * e.nb[1];
  v.ne = {e.ne[0], e.ne[2], 1, 1};
  v.nb = {e.nb[0], e.nb[2], e.nb[2] * static_cast<size_t>(e.ne[2]),
          e.nb[2] * static_cast<size_t>(e.ne[2])};
  return v;
}

}  // namespace

TensorView moe_ffn(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                   const TensorView& x, const TensorView& router_logits) {
  const int64_t n = x.ne[1];
  const int k = cfg.moe.n_expert_used;

  const TensorView logits =
      router_logits.empty() ? ctx.mul_mat(l.ffn_gate_inp, x) : router_logits;  // [X, n]
  if (!l.ffn_gate_inp_b.empty()) ctx.add(logits, l.ffn_gate_inp_b, logits);
  MoeRouteParams rp;
  rp.gating = cfg.moe.gating == ExpertGating::kSigmoid         ? MoeGating::kSigmoid
              : cfg.moe.gating == ExpertGating::kSoftmaxWeight ? MoeGating::kSoftmaxWeight
                                                               : MoeGating::kSoftmax;
  rp.k = k;
  rp.n_groups = std::max(cfg.moe.n_groups, 1);
  rp.n_groups_used = cfg.moe.n_groups > 1 ? cfg.moe.n_groups_used : 1;
  // gpt-oss's softmax over the chosen logits sums to 1: no renormalisation, no scale.
  const bool softmax_weight = cfg.moe.gating == ExpertGating::kSoftmaxWeight;
  rp.norm = cfg.moe.norm_weights && !softmax_weight;
  rp.scale = softmax_weight ? 1.0f : cfg.moe.weights_scale;
  const ForwardContext::MoeRoute route = ctx.moe_route(logits, l.ffn_exp_probs_b, rp);
  const TensorView ids = route.ids;                                     // I32 [k, n]
  const TensorView weights = reshape(route.weights, {1, k, n, 1});      // [1, k, n]

  // Adds expert ids[u, t]'s bias row to t [F, k, n] (bias table [F, X]).
  auto add_expert_bias = [&](const TensorView& t, const TensorView& bias) {
    if (bias.empty()) return;
    const TensorView rows = ctx.get_rows(bias, ids);  // [F, k * n] in (u, t) order
    ctx.add(t, reshape(rows, {t.ne[0], k, n, 1}), t);
  };
  // Latent experts read L = ffn_latent_down's width instead of E.
  const TensorView xe = l.ffn_latent_down.empty() ? x : ctx.mul_mat(l.ffn_latent_down, x);
  const int64_t ex = xe.ne[0];
  const TensorView x3 = reshape(xe, {ex, 1, n, 1});
  TensorView h;  // [Fx, k, n]
  if (!l.ffn_gate_up_exps.empty()) {  // [2 Fx, k, n]: the GLU reads gate then up
    h = ctx.glu(ctx.mul_mat_id(l.ffn_gate_up_exps, x3, ids), TensorView{}, cfg.ffn_glu);
  } else {
    const TensorView up = ctx.mul_mat_id(l.ffn_up_exps, x3, ids);  // [Fx, k, n]
    add_expert_bias(up, l.ffn_up_exps_b);
    TensorView gate;  // [Fx, k, n]; none for relu^2 experts
    if (!l.ffn_gate_exps.empty()) {
      gate = ctx.mul_mat_id(l.ffn_gate_exps, x3, ids);
      add_expert_bias(gate, l.ffn_gate_exps_b);
    }
    h = ffn_activation(ctx, cfg, gate, up);
  }
  const TensorView experts = ctx.mul_mat_id(l.ffn_down_exps, h, ids);  // [ex, k, n]
  if (!l.ffn_down_exps_s.empty()) {  // expert ids[u, t]'s scale: a [1, X] table's rows
    const TensorView s = ctx.get_rows(reshape(l.ffn_down_exps_s, {1, cfg.moe.n_expert, 1, 1}), ids);
    ctx.mul(experts, reshape(s, {1, k, n, 1}), experts);
  }
  add_expert_bias(experts, l.ffn_down_exps_b);

  // The outputs times their weights, summed in rank order: in a one-token
  // step one kMoeSum where a device fuses it (bit for bit the same).
  if (k >= 2 && n == 1) {
    const TensorView out = ctx.moe_sum(experts, weights);  // [ex, 1]
    return l.ffn_latent_up.empty() ? out : ctx.mul_mat(l.ffn_latent_up, out);
  }
  ctx.mul(experts, weights, experts);
  TensorView out;  // [ex, n]
  if (k == 1) {
    out = ctx.scale(expert_slice(experts, 0), 1.0f);  // contiguous copy
  } else {
    out = ctx.add(expert_slice(experts, 0), expert_slice(experts, 1));
    for (int u = 2; u < k; ++u) ctx.add(out, expert_slice(experts, u), out);
  }
  return l.ffn_latent_up.empty() ? out : ctx.mul_mat(l.ffn_latent_up, out);  // [E, n]
}

}  // namespace folio::model
