// The state machinery shared by the recurrent layers (see recurrent_layer.h).
#include "model/blocks/recurrent_layer.h"

#include "backend/backend.h"

namespace folio::model {

namespace {

// Elements [i, i + n) of an I32 vector tensor.
TensorView ids_range(const TensorView& ids, int64_t i, int64_t n) {
  return view_of(ids, static_cast<size_t>(i) * sizeof(int32_t), {n, 1, 1, 1},
                 {sizeof(int32_t), n * sizeof(int32_t), n * sizeof(int32_t), n * sizeof(int32_t)});
}

}  // namespace

TensorView view_of(const TensorView& t, size_t off, std::array<int64_t, kMaxDims> ne,
                   std::array<size_t, kMaxDims> nb) {
  TensorView v = t;
  if (v.data != nullptr) v.data = static_cast<char*>(t.data) + off;
  v.ne = ne;
  v.nb = nb;
  return v;
}

RecurrentLayer::RecurrentLayer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l,
                               int il, const RecurrentInputs& ri, cache::KvCache& cache,
                               bool conv_silu)
    : ctx_(ctx),
      cfg_(cfg),
      l_(l),
      ri_(ri),
      rp_(*ri.plan),
      conv_pool_(cache.conv_state(il)),
      ssm_pool_(cache.ssm_state(il)),
      c_(cfg.ssm.conv_channels()),
      taps_(cfg.ssm.d_conv - 1),
      conv_silu_(conv_silu) {}

TensorView RecurrentLayer::state_of(int32_t slot) const {
  return view_of(ssm_pool_, static_cast<size_t>(slot) * ssm_pool_.nb[3],
                 {ssm_pool_.ne[0], ssm_pool_.ne[1], ssm_pool_.ne[2], 1}, ssm_pool_.nb);
}

TensorView RecurrentLayer::taps_of(int32_t slot) const {
  return view_of(conv_pool_, static_cast<size_t>(slot) * conv_pool_.nb[2], {taps_, c_, 1, 1},
                 {kF, conv_pool_.nb[1], conv_pool_.nb[2], conv_pool_.nb[2]});
}

TensorView RecurrentLayer::window_taps(const TensorView& win, int64_t s, int64_t at) const {
  return view_of(win, static_cast<size_t>(s) * win.nb[2] + static_cast<size_t>(at) * kF,
                 {taps_, c_, 1, 1}, {kF, win.nb[1], win.nb[2], win.nb[2]});
}

void RecurrentLayer::copy_state(int32_t src, int32_t dst) {
  if (ssm_pool_.empty()) return;  // conv-only layer
  ctx_.cpy(state_of(src), state_of(dst));
}

void RecurrentLayer::copy_taps(int32_t src, int32_t dst) {
  ctx_.cpy(taps_of(src), taps_of(dst));
}

TensorView RecurrentLayer::conv_plain(int64_t r0, int64_t t, std::span<const int32_t> slots) {
  const auto n = static_cast<int64_t>(slots.size());
  const int64_t width = taps_ + t;
  const TensorView win =
      ctx_.tensor_near(conv_in_, DType::F32, {width, c_, n, 1});  // [K - 1 + t, C, n]
  // Each sequence's taps, then its inputs transposed to time-major.
  for (int64_t s = 0; s < n; ++s)
    ctx_.cpy(taps_of(slots[static_cast<size_t>(s)]), window_taps(win, s, 0));
  const size_t row = static_cast<size_t>(c_) * kF;
  const size_t wrow = static_cast<size_t>(width) * kF;
  ctx_.cpy(view_of(conv_in_, static_cast<size_t>(r0) * row, {c_, t, n, 1},
                   {kF, row, row * t, row * t * n}),
           view_of(win, static_cast<size_t>(taps_) * kF, {c_, t, n, 1},
                   {wrow, kF, wrow * c_, wrow * c_ * n}));
  Op op;
  op.kind = OpKind::kSsmConv;
  op.src[0] = win;
  op.src[1] = l_.ssm_conv1d;
  op.src[2] = l_.ssm_conv1d_b;  // empty without a bias
  op.dst = view_of(conv_out_, static_cast<size_t>(r0) * row, {c_, t, n, 1},
                   {kF, row, row * t, row * t * n});
  op.params = SsmConvParams{conv_silu_};
  ctx_.run(op);
  // The new taps: the last K - 1 window entries of each channel.
  for (int64_t s = 0; s < n; ++s)
    ctx_.cpy(window_taps(win, s, t), taps_of(slots[static_cast<size_t>(s)]));
  return win;
}

void RecurrentLayer::decode_run(size_t a, size_t b) {
  const auto n = static_cast<int64_t>(b - a);
  const int64_t r0 = rp_.steps[a].row_begin;
  const TensorView ids = ids_range(ri_.slots, static_cast<int64_t>(a), n);

  Op conv;
  conv.kind = OpKind::kSsmConvUpdate;
  conv.src[0] = slice_rows(conv_in_, r0, n);  // [C, n]
  conv.src[1] = l_.ssm_conv1d;
  conv.src[2] = l_.ssm_conv1d_b;
  conv.src[3] = conv_pool_;
  conv.src[4] = ids;
  conv.dst = slice_rows(conv_out_, r0, n);  // [C, n]
  conv.dst2 = conv_pool_;
  conv.params = SsmConvParams{conv_silu_};
  if (!ctx_.run_if_supported(conv)) {
    (void)conv_plain(r0, 1, std::span<const int32_t>(rp_.slots).subspan(a, b - a));
  }

  if (!ssm_pool_.empty() && !scan_fused(r0, n, ids)) {
    const std::array<int64_t, kMaxDims>& pe = ssm_pool_.ne;
    const TensorView table = reshape(ssm_pool_, {pe[0] * pe[1] * pe[2], pe[3], 1, 1});
    const TensorView st = ctx_.get_rows(table, ids);  // [S0 * S1 * H, n]
    scan_plain(r0, 1, n, reshape(st, {pe[0], pe[1], pe[2], n}));
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

void RecurrentLayer::prefill_step(size_t i) {
  const cache::RecurrentStep& st = rp_.steps[i];
  const int32_t slot = st.slot;
  const TensorView win = conv_plain(st.row_begin, st.n_tokens, std::span<const int32_t>(&slot, 1));
  const TensorView state = state_of(slot);  // the slot, in place
  int32_t done = 0;
  for (int32_t k = 0; k <= st.n_ckpt; ++k) {
    const cache::StateCheckpoint* cp =
        k < st.n_ckpt ? &rp_.checkpoints[static_cast<size_t>(st.ckpt_begin + k)] : nullptr;
    const int32_t end = cp != nullptr ? cp->after : st.n_tokens;
    if (end > done && !ssm_pool_.empty()) scan_plain(st.row_begin + done, end - done, 1, state);
    done = end;
    if (cp == nullptr || !ctx_.ok()) continue;
    copy_state(slot, cp->slot);
    ctx_.cpy(window_taps(win, 0, end), taps_of(cp->slot));  // the K - 1 inputs before the boundary
  }
}

TensorView RecurrentLayer::run(const TensorView& x, ResidualFusion* rf) {
  BlockInput xs(ctx_, x, rf);
  if (!ri_.order.empty()) xs = BlockInput(ctx_, ctx_.get_rows(xs.value(), ri_.order), nullptr);
  const int64_t t = xs.n_tokens();
  project(xs);  // [E, T] in recurrent order
  conv_out_ = ctx_.tensor_near(conv_in_, DType::F32, {c_, t, 1, 1});
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
  out_rf_ = ri_.inverse.empty() ? rf : nullptr;
  const TensorView y = output();  // [E, T]
  return ri_.inverse.empty() ? y : ctx_.get_rows(y, ri_.inverse);
}

TensorView RecurrentLayer::output_product(const TensorView& w, const TensorView& y) {
  return model::output_product(ctx_, w, y, out_rf_);
}

}  // namespace folio::model
