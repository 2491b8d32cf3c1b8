// Gated DeltaNet layer of the hybrid models (llama.cpp's
// build_layer_attn_linear for qwen3next / qwen35 / qwen35moe).
//
// Shapes: E = n_embd, T = batch tokens, Hk / Hv key / value heads of dim S,
// C = 2 * Hk * S + Hv * S conv channels, K = conv width.
//   x [E, T] -> (recurrent order) qkv [C, T], z [Hv * S, T], beta, g [Hv, T]
//   conv: window [K - 1 + t, C] per sequence (cached taps, then its inputs in
//         time order) -> conv_out [C, T] (SiLU fused); q, k, v are strided
//         views of conv_out: q [S, Hk, t, n], k likewise, v [S, Hv, t, n]
//   DeltaNet (q, k L2-normalised, q * 1/sqrt(S)) -> o [S, Hv, T]
//   out = W_out (rms_norm(o) * ssm_norm * silu(z)) [E, T] (batch order)
//
// The conv, the state pools, decode runs, prefill steps and checkpoints are
// RecurrentLayer's (recurrent_layer.h); this file supplies the projections,
// the DeltaNet scan (fused decode: kGatedDeltaNetUpdate) and the gated
// output norm.
#include <algorithm>
#include <cmath>

#include "model/blocks/recurrent_layer.h"

namespace folio::model {

namespace {

constexpr size_t kF = sizeof(float);

class DeltaNetLayer final : public RecurrentLayer {
 public:
  DeltaNetLayer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                const RecurrentInputs& ri, cache::KvCache& cache)
      : RecurrentLayer(ctx, cfg, l, il, ri, cache),
        s_(cfg.ssm.d_state),
        hk_(cfg.ssm.n_k_heads),
        hv_(cfg.ssm.n_v_heads) {
    gp_.scale = 1.0f / std::sqrt(static_cast<float>(s_));
    gp_.l2_norm_qk = true;
    gp_.eps = cfg.norm_eps;
    gp_.head_map = cfg.ssm.head_map;
  }

 private:
  void project(BlockInput& xs) override;
  void scan_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) override;
  bool scan_fused(int64_t r0, int64_t n, const TensorView& ids) override;
  TensorView output() override;
  // beta_, g_ [Hv, T] from ssm_ba's product [2 * Hv, T] (per key head:
  // beta then alpha), or from the two products [Hv, T] (in place).
  void project_ba(const TensorView& ba);
  void project_beta_alpha(const TensorView& beta, const TensorView& alpha);
  Op delta_net_op(OpKind kind, int64_t r0, int64_t t, int64_t n) const;

  const int64_t s_, hk_, hv_;
  GatedDeltaNetParams gp_;
  TensorView z_;     // [Hv * S, T]
  TensorView beta_;  // [Hv, T]
  TensorView g_;     // [Hv, T]
  TensorView o_;     // [S, Hv, T]
};

// Legacy qwen3next files: ssm_in yields, per key head, [q (S), k (S), v (r *
// S), z (r * S)] (r = Hv / Hk); the conv wants [q of all heads, k..., v...].
void split_qkvz(ForwardContext& ctx, const TensorView& mixed, const TensorView& qkv,
                const TensorView& z, int64_t s, int64_t hk, int64_t hv) {
  const int64_t t = mixed.ne[1], r = hv / hk, grp = 2 * s + 2 * r * s;
  const int64_t c = qkv.ne[0], dz = z.ne[0], w = mixed.ne[0];
  auto part = [&](int64_t src_off, const TensorView& dst, int64_t dst_off, int64_t dst_row,
                  int64_t width) {
    const TensorView from = view_of(mixed, static_cast<size_t>(src_off) * kF, {width, hk, t, 1},
                                    {kF, grp * kF, w * kF, w * t * kF});
    const TensorView to = view_of(dst, static_cast<size_t>(dst_off) * kF, {width, hk, t, 1},
                                  {kF, width * kF, dst_row * kF, dst_row * t * kF});
    ctx.cpy(from, to);
  };
  part(0, qkv, 0, c, s);
  part(s, qkv, hk * s, c, s);
  part(2 * s, qkv, 2 * hk * s, c, r * s);
  part(2 * s + r * s, z, 0, dz, r * s);
}

void DeltaNetLayer::project(BlockInput& xs) {
  const int64_t t = xs.n_tokens();
  if (t == 1 && !l_.ssm_proj_joint.empty()) {  // joined at load: one product, parts as views
    const TensorView p = xs.mul_mat(l_.ssm_proj_joint);  // [C + Hv * S + 2 * Hv, 1]
    const int64_t at = c_ + hv_ * s_;
    conv_in_ = leading_part(p, 0, c_);
    z_ = leading_part(p, c_, hv_ * s_);
    if (cfg_.ssm.fused_ba) {
      project_ba(leading_part(p, at, 2 * hv_));
    } else {
      project_beta_alpha(leading_part(p, at, hv_), leading_part(p, at + hv_, hv_));
    }
    o_ = ctx_.tensor_near(conv_in_, DType::F32, {s_, hv_, t, 1});
    return;
  }
  if (cfg_.ssm.fused_qkvz) {
    const TensorView mixed = xs.mul_mat(l_.ssm_in);  // [C + Hv * S, T]
    conv_in_ = ctx_.tensor_near(mixed, DType::F32, {c_, t, 1, 1});
    z_ = ctx_.tensor_near(mixed, DType::F32, {hv_ * s_, t, 1, 1});
    split_qkvz(ctx_, mixed, conv_in_, z_, s_, hk_, hv_);
  } else {
    conv_in_ = xs.mul_mat(l_.ssm_qkv);  // [C, T]
    z_ = xs.mul_mat(l_.ssm_gate);   // [Hv * S, T]
  }
  if (cfg_.ssm.fused_ba) {
    project_ba(xs.mul_mat(l_.ssm_ba));
  } else {
    // Both projections before what reads them: on a device they share a
    // barrier stage with the ones above, and the sigmoid with the add.
    const TensorView beta = xs.mul_mat(l_.ssm_beta);  // [Hv, T]
    const TensorView alpha = xs.mul_mat(l_.ssm_alpha);  // [Hv, T]
    project_beta_alpha(beta, alpha);
  }
  o_ = ctx_.tensor_near(conv_in_, DType::F32, {s_, hv_, t, 1});
}

void DeltaNetLayer::project_ba(const TensorView& ba) {
  // ssm_ba per key head: [beta (r), alpha (r)]; value head h = kh * r + j.
  const int64_t t = ba.ne[1];
  const int64_t r = hv_ / hk_;
  const std::array<size_t, kMaxDims> nb{kF, 2 * r * kF, 2 * hv_ * kF, 2 * hv_ * t * kF};
  beta_ = ctx_.unary(view_of(ba, 0, {r, hk_, t, 1}, nb), UnaryKind::kSigmoid);  // [r, Hk, T]
  g_ = ctx_.add(view_of(ba, static_cast<size_t>(r) * kF, {r, hk_, t, 1}, nb),
                reshape(l_.ssm_dt, {r, hk_, 1, 1}));
  ctx_.unary(g_, UnaryKind::kSoftplus, g_);
  ctx_.mul(g_, reshape(l_.ssm_a, {r, hk_, 1, 1}), g_);
  beta_ = reshape(beta_, {hv_, t, 1, 1});
  g_ = reshape(g_, {hv_, t, 1, 1});
}

void DeltaNetLayer::project_beta_alpha(const TensorView& beta, const TensorView& alpha) {
  beta_ = beta;  // [Hv, T]
  g_ = alpha;    // [Hv, T]
  ctx_.unary(beta_, UnaryKind::kSigmoid, beta_);
  ctx_.add(g_, l_.ssm_dt, g_);
  ctx_.unary(g_, UnaryKind::kSoftplus, g_);
  ctx_.mul(g_, l_.ssm_a, g_);  // -exp(A_log) * softplus(alpha + dt_bias)
}

Op DeltaNetLayer::delta_net_op(OpKind kind, int64_t r0, int64_t t, int64_t n) const {
  // Rows r0 .. r0 + t * n of conv_out / g / beta / o as [.., t, n].
  const size_t row = static_cast<size_t>(c_) * kF;
  const size_t at = static_cast<size_t>(r0) * row;
  Op op;
  op.kind = kind;
  op.src[0] = view_of(conv_out_, at, {s_, hk_, t, n}, {kF, s_ * kF, row, row * t});
  op.src[1] = view_of(conv_out_, at + static_cast<size_t>(hk_ * s_) * kF, {s_, hk_, t, n},
                      {kF, s_ * kF, row, row * t});
  op.src[2] = view_of(conv_out_, at + static_cast<size_t>(2 * hk_ * s_) * kF, {s_, hv_, t, n},
                      {kF, s_ * kF, row, row * t});
  const size_t hrow = static_cast<size_t>(hv_) * kF;
  op.src[3] = view_of(g_, static_cast<size_t>(r0) * hrow, {hv_, t, n, 1},
                      {kF, hrow, hrow * t, hrow * t * n});
  op.src[4] = view_of(beta_, static_cast<size_t>(r0) * hrow, {hv_, t, n, 1},
                      {kF, hrow, hrow * t, hrow * t * n});
  const size_t orow = static_cast<size_t>(s_ * hv_) * kF;
  op.dst =
      view_of(o_, static_cast<size_t>(r0) * orow, {s_, hv_, t, n}, {kF, s_ * kF, orow, orow * t});
  op.params = gp_;
  return op;
}

void DeltaNetLayer::scan_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) {
  Op op = delta_net_op(OpKind::kGatedDeltaNet, r0, t, n);
  op.src[5] = state;  // [S, S, Hv, n], updated in place
  op.dst2 = state;
  ctx_.run(op);
}

bool DeltaNetLayer::scan_fused(int64_t r0, int64_t n, const TensorView& ids) {
  Op dn = delta_net_op(OpKind::kGatedDeltaNetUpdate, r0, 1, n);
  dn.src[5] = ssm_pool_;
  dn.src[6] = ids;
  dn.dst2 = ssm_pool_;
  return ctx_.run_if_supported(dn);
}

TensorView DeltaNetLayer::output() {
  // Gated RMS norm per value head, output projection.
  const int64_t t = o_.ne[2];
  const TensorView on = ctx_.rms_norm(o_, l_.ssm_norm, cfg_.norm_eps);  // [S, Hv, T]
  const TensorView z = reshape(z_, {s_, hv_, t, 1});
  ctx_.unary(z, UnaryKind::kSilu, z);
  ctx_.mul(on, z, on);
  return output_product(l_.ssm_out, reshape(on, {s_ * hv_, t, 1, 1}));  // [E, T]
}

}  // namespace

RecurrentInputs upload_recurrent_inputs(ForwardContext& ctx, const ForwardInputs& in) {
  RecurrentInputs ri;
  FOLIO_CHECK(in.plan != nullptr);
  ri.plan = &in.plan->recurrent;
  ri.slots = ctx.upload_i32(ri.plan->slots);
  if (!ri.plan->order.empty()) {
    ri.order = ctx.upload_i32(ri.plan->order);
    ri.inverse = ctx.upload_i32(ri.plan->inverse);
  }
  return ri;
}

TensorView gated_delta_net(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                           int il, const TensorView& x, const RecurrentInputs& ri,
                           cache::KvCache& cache, ResidualFusion* rf) {
  if (cache.conv_state(il).empty() || cache.ssm_state(il).empty()) {
    ctx.fail(invalid_argument(
        "forward: layer {} is a gated DeltaNet layer; the KV cache holds no recurrent state for "
        "it (use a hybrid cache, cache/hybrid_kv_cache.h)",
        il));
    return ctx.f32(cfg.n_embd, x.ne[1]);
  }
  DeltaNetLayer layer(ctx, cfg, l, il, ri, cache);
  return layer.run(x, rf);
}

}  // namespace folio::model
