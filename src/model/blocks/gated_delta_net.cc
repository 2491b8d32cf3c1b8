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
// Recurrent order: the plan's steps (one per sequence, in order of first
// appearance) each own consecutive rows. When the batch interleaves a
// sequence's tokens with another's, x is gathered into that order (get_rows)
// and the output gathered back; usually the order is the identity.
//
// Per step, the state work, reading and writing the sequence's slot of the
// cache's pools in place:
//   - consecutive single-token steps (decode) form one run: where a backend
//     selects a kernel for them (run_if_supported), one kSsmConvUpdate and
//     one kGatedDeltaNetUpdate over the run, by slot ids, in place; otherwise
//     the unfused path: gather (conv window by strided copies; state with
//     kGetRows), the plain kSsmConv / kGatedDeltaNet with T = 1, scatter
//     (taps by strided copies; state with kSetRows). Both paths are bit-identical
//     (the fused ops are defined that way).
//   - a multi-token step (prefill chunk): one plain kSsmConv over its window,
//     then kGatedDeltaNet on the slot's state view itself (state_out aliases
//     state_in), split into segments at the plan's checkpoints: after each
//     segment the slot's state (and the taps at that point, from the window)
//     are copied into the checkpoint's slot. Splitting changes no value: the
//     plain op carries the state token by token in f32.
// The conv window is assembled, and the new taps and checkpoints written,
// with strided copies (kCpy) on whichever backend holds the pools.
#include <algorithm>
#include <cmath>

#include "backend/backend.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

namespace {

constexpr size_t kF = sizeof(float);

// A view of `t`'s memory at byte offset `off` with shape ne and strides nb.
TensorView view_of(const TensorView& t, size_t off, std::array<int64_t, kMaxDims> ne,
                   std::array<size_t, kMaxDims> nb) {
  TensorView v = t;
  if (v.data != nullptr) v.data = static_cast<char*>(t.data) + off;
  v.ne = ne;
  v.nb = nb;
  return v;
}

// Elements [i, i + n) of an I32 vector tensor.
TensorView ids_range(const TensorView& ids, int64_t i, int64_t n) {
  return view_of(ids, static_cast<size_t>(i) * sizeof(int32_t), {n, 1, 1, 1},
                 {sizeof(int32_t), n * sizeof(int32_t), n * sizeof(int32_t), n * sizeof(int32_t)});
}

class DeltaNetLayer {
 public:
  DeltaNetLayer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                const RecurrentInputs& ri, cache::KvCache& cache)
      : ctx_(ctx),
        cfg_(cfg),
        l_(l),
        ri_(ri),
        rp_(*ri.plan),
        conv_pool_(cache.conv_state(il)),
        ssm_pool_(cache.ssm_state(il)),
        s_(cfg.ssm.d_state),
        hk_(cfg.ssm.n_k_heads),
        hv_(cfg.ssm.n_v_heads),
        c_(cfg.ssm.conv_channels()),
        taps_(cfg.ssm.d_conv - 1) {
    gp_.scale = 1.0f / std::sqrt(static_cast<float>(s_));
    gp_.l2_norm_qk = true;
    gp_.eps = cfg.norm_eps;
    gp_.head_map = cfg.ssm.head_map;
  }

  TensorView run(const TensorView& x);

 private:
  void project(const TensorView& xs);
  void decode_run(size_t a, size_t b);
  void prefill_step(size_t i);
  // Unfused conv of `n` sequences of `t` tokens each from recurrent row r0
  // (slots: theirs, in order): host window, kSsmConv, taps written back.
  // Returns the window [K - 1 + t, C, n] for checkpoint taps.
  TensorView conv_plain(int64_t r0, int64_t t, std::span<const int32_t> slots);
  void delta_net_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state);
  Op delta_net_op(OpKind kind, int64_t r0, int64_t t, int64_t n) const;
  // Slot views of the pools: state [S, S, Hv, 1], taps [K - 1, C, 1, 1].
  TensorView state_of(int32_t slot) const;
  TensorView taps_of(int32_t slot) const;
  // The K - 1 window entries of sequence s from time index `at`: [K - 1, C, 1, 1].
  TensorView window_taps(const TensorView& win, int64_t s, int64_t at) const;
  // Copies this layer's DeltaNet state (taps) of slot `src` into slot `dst`.
  void copy_state(int32_t src, int32_t dst);
  void copy_taps(int32_t src, int32_t dst);

  ForwardContext& ctx_;
  const ModelConfig& cfg_;
  const LayerWeights& l_;
  const RecurrentInputs& ri_;
  const cache::RecurrentPlan& rp_;
  TensorView conv_pool_;  // [K - 1, C, n_slots]
  TensorView ssm_pool_;   // [S, S, Hv, n_slots]
  const int64_t s_, hk_, hv_, c_, taps_;
  GatedDeltaNetParams gp_;
  TensorView qkv_;       // [C, T] conv input, recurrent order
  TensorView z_;         // [Hv * S, T]
  TensorView beta_;      // [Hv, T]
  TensorView g_;         // [Hv, T]
  TensorView conv_out_;  // [C, T]
  TensorView o_;         // [S, Hv, T]
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

void DeltaNetLayer::project(const TensorView& xs) {
  const int64_t t = xs.ne[1];
  if (cfg_.ssm.fused_qkvz) {
    const TensorView mixed = ctx_.mul_mat(l_.ssm_in, xs);  // [C + Hv * S, T]
    qkv_ = ctx_.tensor_near(mixed, DType::F32, {c_, t, 1, 1});
    z_ = ctx_.tensor_near(mixed, DType::F32, {hv_ * s_, t, 1, 1});
    split_qkvz(ctx_, mixed, qkv_, z_, s_, hk_, hv_);
  } else {
    qkv_ = ctx_.mul_mat(l_.ssm_qkv, xs);  // [C, T]
    z_ = ctx_.mul_mat(l_.ssm_gate, xs);   // [Hv * S, T]
  }
  if (cfg_.ssm.fused_ba) {
    // ssm_ba per key head: [beta (r), alpha (r)]; value head h = kh * r + j.
    const int64_t r = hv_ / hk_;
    const TensorView ba = ctx_.mul_mat(l_.ssm_ba, xs);  // [2 * Hv, T]
    const std::array<size_t, kMaxDims> nb{kF, 2 * r * kF, 2 * hv_ * kF, 2 * hv_ * t * kF};
    beta_ = ctx_.unary(view_of(ba, 0, {r, hk_, t, 1}, nb), UnaryKind::kSigmoid);  // [r, Hk, T]
    g_ = ctx_.add(view_of(ba, static_cast<size_t>(r) * kF, {r, hk_, t, 1}, nb),
                  reshape(l_.ssm_dt, {r, hk_, 1, 1}));
    ctx_.unary(g_, UnaryKind::kSoftplus, g_);
    ctx_.mul(g_, reshape(l_.ssm_a, {r, hk_, 1, 1}), g_);
  } else {
    beta_ = ctx_.mul_mat(l_.ssm_beta, xs);  // [Hv, T]
    ctx_.unary(beta_, UnaryKind::kSigmoid, beta_);
    g_ = ctx_.mul_mat(l_.ssm_alpha, xs);  // [Hv, T]
    ctx_.add(g_, l_.ssm_dt, g_);
    ctx_.unary(g_, UnaryKind::kSoftplus, g_);
    ctx_.mul(g_, l_.ssm_a, g_);  // -exp(A_log) * softplus(alpha + dt_bias)
  }
  beta_ = reshape(beta_, {hv_, t, 1, 1});
  g_ = reshape(g_, {hv_, t, 1, 1});
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

void DeltaNetLayer::delta_net_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) {
  Op op = delta_net_op(OpKind::kGatedDeltaNet, r0, t, n);
  op.src[5] = state;  // [S, S, Hv, n], updated in place
  op.dst2 = state;
  ctx_.run(op);
}

TensorView DeltaNetLayer::state_of(int32_t slot) const {
  return view_of(ssm_pool_, static_cast<size_t>(slot) * ssm_pool_.nb[3], {s_, s_, hv_, 1},
                 ssm_pool_.nb);
}

TensorView DeltaNetLayer::taps_of(int32_t slot) const {
  return view_of(conv_pool_, static_cast<size_t>(slot) * conv_pool_.nb[2], {taps_, c_, 1, 1},
                 {kF, conv_pool_.nb[1], conv_pool_.nb[2], conv_pool_.nb[2]});
}

TensorView DeltaNetLayer::window_taps(const TensorView& win, int64_t s, int64_t at) const {
  return view_of(win, static_cast<size_t>(s) * win.nb[2] + static_cast<size_t>(at) * kF,
                 {taps_, c_, 1, 1}, {kF, win.nb[1], win.nb[2], win.nb[2]});
}

void DeltaNetLayer::copy_state(int32_t src, int32_t dst) {
  ctx_.cpy(state_of(src), state_of(dst));
}

void DeltaNetLayer::copy_taps(int32_t src, int32_t dst) {
  ctx_.cpy(taps_of(src), taps_of(dst));
}

TensorView DeltaNetLayer::conv_plain(int64_t r0, int64_t t, std::span<const int32_t> slots) {
  const auto n = static_cast<int64_t>(slots.size());
  const int64_t width = taps_ + t;
  const TensorView win =
      ctx_.tensor_near(qkv_, DType::F32, {width, c_, n, 1});  // [K - 1 + t, C, n]
  // Each sequence's taps, then its inputs transposed to time-major.
  for (int64_t s = 0; s < n; ++s)
    ctx_.cpy(taps_of(slots[static_cast<size_t>(s)]), window_taps(win, s, 0));
  const size_t row = static_cast<size_t>(c_) * kF;
  const size_t wrow = static_cast<size_t>(width) * kF;
  ctx_.cpy(
      view_of(qkv_, static_cast<size_t>(r0) * row, {c_, t, n, 1}, {kF, row, row * t, row * t * n}),
      view_of(win, static_cast<size_t>(taps_) * kF, {c_, t, n, 1},
              {wrow, kF, wrow * c_, wrow * c_ * n}));
  Op op;
  op.kind = OpKind::kSsmConv;
  op.src[0] = win;
  op.src[1] = l_.ssm_conv1d;
  op.dst = view_of(conv_out_, static_cast<size_t>(r0) * row, {c_, t, n, 1},
                   {kF, row, row * t, row * t * n});
  op.params = SsmConvParams{true};
  ctx_.run(op);
  // The new taps: the last K - 1 window entries of each channel.
  for (int64_t s = 0; s < n; ++s)
    ctx_.cpy(window_taps(win, s, t), taps_of(slots[static_cast<size_t>(s)]));
  return win;
}

void DeltaNetLayer::decode_run(size_t a, size_t b) {
  const auto n = static_cast<int64_t>(b - a);
  const int64_t r0 = rp_.steps[a].row_begin;
  const TensorView ids = ids_range(ri_.slots, static_cast<int64_t>(a), n);

  Op conv;
  conv.kind = OpKind::kSsmConvUpdate;
  conv.src[0] = slice_rows(qkv_, r0, n);  // [C, n]
  conv.src[1] = l_.ssm_conv1d;
  conv.src[3] = conv_pool_;
  conv.src[4] = ids;
  conv.dst = slice_rows(conv_out_, r0, n);  // [C, n]
  conv.dst2 = conv_pool_;
  conv.params = SsmConvParams{true};
  if (!ctx_.run_if_supported(conv)) {
    (void)conv_plain(r0, 1, std::span<const int32_t>(rp_.slots).subspan(a, b - a));
  }

  Op dn = delta_net_op(OpKind::kGatedDeltaNetUpdate, r0, 1, n);
  dn.src[5] = ssm_pool_;
  dn.src[6] = ids;
  dn.dst2 = ssm_pool_;
  if (!ctx_.run_if_supported(dn)) {
    const TensorView table =
        reshape(ssm_pool_, {s_ * s_ * hv_, ssm_pool_.ne[3], 1, 1});  // [S * S * Hv, n_slots]
    const TensorView st = ctx_.get_rows(table, ids);                 // [S * S * Hv, n]
    delta_net_plain(r0, 1, n, reshape(st, {s_, s_, hv_, n}));
    ctx_.set_rows(table, st, ids);
  }
  if (!ctx_.ok()) return;
  for (size_t i = a; i < b; ++i) {  // a checkpoint after a decode token: the new state
    const cache::RecurrentStep& st = rp_.steps[i];
    for (int32_t k = 0; k < st.n_ckpt; ++k) {
      const int32_t dst = rp_.checkpoints[static_cast<size_t>(st.ckpt_begin + k)].slot;
      copy_taps(st.slot, dst);
      copy_state(st.slot, dst);
    }
  }
}

void DeltaNetLayer::prefill_step(size_t i) {
  const cache::RecurrentStep& st = rp_.steps[i];
  const int32_t slot = st.slot;
  const TensorView win = conv_plain(st.row_begin, st.n_tokens, std::span<const int32_t>(&slot, 1));
  const TensorView state = state_of(slot);  // the slot, in place
  int32_t done = 0;
  for (int32_t k = 0; k <= st.n_ckpt; ++k) {
    const cache::StateCheckpoint* cp =
        k < st.n_ckpt ? &rp_.checkpoints[static_cast<size_t>(st.ckpt_begin + k)] : nullptr;
    const int32_t end = cp != nullptr ? cp->after : st.n_tokens;
    if (end > done) delta_net_plain(st.row_begin + done, end - done, 1, state);
    done = end;
    if (cp == nullptr || !ctx_.ok()) continue;
    copy_state(slot, cp->slot);
    ctx_.cpy(window_taps(win, 0, end), taps_of(cp->slot));  // the K - 1 inputs before the boundary
  }
}

TensorView DeltaNetLayer::run(const TensorView& x) {
  const int64_t t = x.ne[1];
  const TensorView xs = ri_.order.empty() ? x : ctx_.get_rows(x, ri_.order);  // [E, T]
  project(xs);
  conv_out_ = ctx_.tensor_near(qkv_, DType::F32, {c_, t, 1, 1});
  o_ = ctx_.tensor_near(qkv_, DType::F32, {s_, hv_, t, 1});
  const size_t n_steps = rp_.steps.size();
  for (size_t i = 0; i < n_steps && ctx_.ok();) {
    if (rp_.steps[i].n_tokens == 1) {
      size_t j = i;
      while (j < n_steps && rp_.steps[j].n_tokens == 1) ++j;
      decode_run(i, j);
      i = j;
    } else {
      prefill_step(i++);
    }
  }
  // Gated RMS norm per value head, output projection.
  const TensorView on = ctx_.rms_norm(o_, l_.ssm_norm, cfg_.norm_eps);  // [S, Hv, T]
  const TensorView z = reshape(z_, {s_, hv_, t, 1});
  ctx_.unary(z, UnaryKind::kSilu, z);
  ctx_.mul(on, z, on);
  const TensorView y = ctx_.mul_mat(l_.ssm_out, reshape(on, {s_ * hv_, t, 1, 1}));  // [E, T]
  return ri_.inverse.empty() ? y : ctx_.get_rows(y, ri_.inverse);
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
                           cache::KvCache& cache) {
  if (cache.conv_state(il).empty() || cache.ssm_state(il).empty()) {
    ctx.fail(invalid_argument(
        "forward: layer {} is a gated DeltaNet layer; the KV cache holds no recurrent state for "
        "it (use a hybrid cache, cache/hybrid_kv_cache.h)",
        il));
    return ctx.f32(cfg.n_embd, x.ne[1]);
  }
  DeltaNetLayer layer(ctx, cfg, l, il, ri, cache);
  return layer.run(x);
}

}  // namespace folio::model
