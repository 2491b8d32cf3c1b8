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
// The k weights per token are gathered on the host from the probabilities
// (n * k floats): the op set has no per-row gather of single elements.
// Expert groups (DeepSeek V3, cfg.moe.n_groups > 1) mask the selection
// values on the host too (mask_expert_groups) before the top k. On a
// device that is an explicit transfer (probabilities and ids read back, the
// weights uploaded by the mul that uses them): one wait per MoE layer.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

// weights[u, t] = probs[ids[u, t], t], renormalised when `norm`, times `scale`.
void gather_weights(const TensorView& probs, const TensorView& ids, bool norm, float scale,
                    const TensorView& weights) {
  const int64_t k = ids.ne[0], n = ids.ne[1];
  for (int64_t t = 0; t < n; ++t) {
    const float* p = probs.row<const float>(t);
    const int32_t* id = ids.row<const int32_t>(t);
    float* wt = weights.row<float>(0, t);
    double sum = 0.0;
    for (int64_t u = 0; u < k; ++u) {
      wt[u] = p[id[u]];
      sum += wt[u];
    }
    if (norm) {
      const float s = std::max(static_cast<float>(sum), 6.103515625e-5f);
      for (int64_t u = 0; u < k; ++u) wt[u] = wt[u] / s;
    }
    if (scale != 1.0f) {
      for (int64_t u = 0; u < k; ++u) wt[u] *= scale;
    }
  }
}

}  // namespace

void mask_expert_groups(const TensorView& selection, int n_groups, int n_groups_used,
                        const TensorView& masked) {
  const int64_t x = selection.ne[0], n = selection.ne[1], per = x / n_groups;
  std::vector<float> score(static_cast<size_t>(n_groups));
  std::vector<int> order(static_cast<size_t>(n_groups));
  for (int64_t t = 0; t < n; ++t) {
    const float* s = selection.row<const float>(t);
    float* out = masked.row<float>(t);
    for (int g = 0; g < n_groups; ++g) {  // the sum of the group's two largest values
      float a = -std::numeric_limits<float>::infinity(), b = a;
      for (int64_t j = g * per; j < (g + 1) * per; ++j) {
        if (s[j] > a) {
          b = a;
          a = s[j];
        } else if (s[j] > b) {
          b = s[j];
        }
      }
      score[static_cast<size_t>(g)] = a + b;
      order[static_cast<size_t>(g)] = g;
    }
    // The best n_groups_used groups (ties: the lower index, as a stable sort).
    std::stable_sort(order.begin(), order.end(), [&](int l, int r) {
      return score[static_cast<size_t>(l)] > score[static_cast<size_t>(r)];
    });
    for (int64_t j = 0; j < x; ++j) out[j] = -std::numeric_limits<float>::infinity();
    for (int u = 0; u < n_groups_used; ++u) {
      const int64_t g = order[static_cast<size_t>(u)];
      for (int64_t j = g * per; j < (g + 1) * per; ++j) out[j] = s[j];
    }
  }
}

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

  const ExpertGating gating = cfg.moe.gating;
  const TensorView logits =
      router_logits.empty() ? ctx.mul_mat(l.ffn_gate_inp, x) : router_logits;  // [X, n]
  if (!l.ffn_gate_inp_b.empty()) ctx.add(logits, l.ffn_gate_inp_b, logits);
  const TensorView probs = gating == ExpertGating::kSigmoid ? ctx.unary(logits, UnaryKind::kSigmoid)
                           : gating == ExpertGating::kSoftmax ? ctx.soft_max(logits)
                                                              : logits;  // [X, n]
  const TensorView selection =
      l.ffn_exp_probs_b.empty() ? probs : ctx.add(probs, l.ffn_exp_probs_b);  // [X, n]
  TensorView chosen_from = selection;  // [X, n]
  if (cfg.moe.n_groups > 1) {  // only the experts of the best groups compete (on the host)
    const Result<TensorView> selection_host = ctx.to_host(selection);
    chosen_from = ctx.f32(cfg.moe.n_expert, n);
    if (!ctx.ok()) return ctx.f32(x.ne[0], n);
    mask_expert_groups(*selection_host, cfg.moe.n_groups, cfg.moe.n_groups_used, chosen_from);
  }
  const TensorView ids = ctx.top_k(chosen_from, k);                           // I32 [k, n]
  const Result<TensorView> probs_host = ctx.to_host(probs);
  const Result<TensorView> ids_host = ctx.to_host(ids);
  TensorView weights = ctx.f32(1, k, n);  // [1, k, n]
  if (!ctx.ok()) return ctx.f32(x.ne[0], n);
  const bool softmax_weight = gating == ExpertGating::kSoftmaxWeight;
  gather_weights(*probs_host, *ids_host, cfg.moe.norm_weights && !softmax_weight,
                 softmax_weight ? 1.0f : cfg.moe.weights_scale, weights);
  if (softmax_weight) {  // the k chosen logits -> softmax (sums to 1: no renormalisation)
    weights = reshape(ctx.soft_max(reshape(weights, {k, n, 1, 1})), {1, k, n, 1});
  }

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
