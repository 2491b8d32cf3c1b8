// Mamba-2 layer of the hybrid models (llama.cpp's build_mamba2_layer, for
// granitehybrid, nemotron_h and falcon-h1).
//
// Shapes: E = n_embd, T = batch tokens, H heads of P channels (d_inner = H P),
// G groups of N state values, C = d_inner + 2 G N conv channels, K = conv
// width.
//   x [E, T] -> (recurrent order) ssm_in: [z (d_inner), xBC (C), dt (H)] per
//   token; xBC copied to a contiguous conv input [C, T]
//   conv (+ conv bias, SiLU) -> conv_out [C, T]; x, B, C are strided views
//         of conv_out: x [P, H, t, n], B and C [N, G, t, n]
//   dt + dt_bias -> kSsmScan (softplus, exp(dt A), the selective scan on the
//         state [N, P, H]; decode: kSsmScanUpdate on the pool) -> y [P, H, T]
//   y += x * D;  y *= silu(z);  y = rms_norm per group of d_inner / G
//   channels * ssm_norm [d_inner / G, G] (where the layer has ssm_norm);
//   out = W_out y [E, T] (batch order)
// exactly the order of llama.cpp's graph.
//
// The conv, the state pools, decode runs, prefill steps and checkpoints are
// RecurrentLayer's (recurrent_layer.h). Decode runs use the fused
// kSsmScanUpdate (the state read from and written back to each sequence's
// pool slot in place) where a backend runs it (a device holding the layer
// must run it itself: ForwardContext::run_if_supported); elsewhere (the
// Vulkan device has no shader for it) they gather the states by slot
// (kGetRows), run the plain kSsmScan with T = 1 and scatter them back
// (kSetRows), bit for bit the same.
#include "model/blocks/recurrent_layer.h"

namespace folio::model {

namespace {

class Mamba2Layer final : public RecurrentLayer {
 public:
  Mamba2Layer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
              const RecurrentInputs& ri, cache::KvCache& cache)
      : RecurrentLayer(ctx, cfg, l, il, ri, cache),
        h_(cfg.ssm.n_v_heads),
        p_(cfg.ssm.head_v_dim()),
        g_(cfg.ssm.n_k_heads),
        n_(cfg.ssm.d_state),
        d_inner_(cfg.ssm.d_inner) {}

 private:
  void project(BlockInput& xs) override;
  void scan_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) override;
  bool scan_fused(int64_t r0, int64_t n, const TensorView& ids) override;
  TensorView output() override;
  // kind (kSsmScan / kSsmScanUpdate) over rows r0 .. r0 + t * n: x, dt, A, B,
  // C and y set; the state operands are the caller's.
  Op scan_op(OpKind kind, int64_t r0, int64_t t, int64_t n) const;

  const int64_t h_, p_, g_, n_, d_inner_;
  TensorView zxbcdt_;  // [2 d_inner + 2 G N + H, T] the input projection
  TensorView dt_;      // [H, T] dt + dt_bias
  TensorView y_;       // [P, H, T] scan output
};

void Mamba2Layer::project(BlockInput& xs) {
  const int64_t t = xs.n_tokens();
  zxbcdt_ = xs.mul_mat(l_.ssm_in);  // [W, T]
  const int64_t w = zxbcdt_.ne[0];
  const size_t row = static_cast<size_t>(w) * kF;
  conv_in_ = ctx_.tensor_near(zxbcdt_, DType::F32, {c_, t, 1, 1});
  ctx_.cpy(view_of(zxbcdt_, static_cast<size_t>(d_inner_) * kF, {c_, t, 1, 1},
                   {kF, row, row * t, row * t}),
           conv_in_);
  const TensorView dt = view_of(zxbcdt_, static_cast<size_t>(d_inner_ + c_) * kF, {h_, t, 1, 1},
                                {kF, row, row * t, row * t});
  dt_ = ctx_.add(dt, l_.ssm_dt);  // [H, T]
  y_ = ctx_.tensor_near(zxbcdt_, DType::F32, {p_, h_, t, 1});
}

Op Mamba2Layer::scan_op(OpKind kind, int64_t r0, int64_t t, int64_t n) const {
  // Rows r0 .. r0 + t * n of conv_out / dt / y as [.., t, n].
  const size_t row = static_cast<size_t>(c_) * kF;
  const size_t at = static_cast<size_t>(r0) * row;
  const size_t hrow = static_cast<size_t>(h_) * kF;
  const size_t yrow = static_cast<size_t>(d_inner_) * kF;
  Op op;
  op.kind = kind;
  op.src[0] = view_of(conv_out_, at, {p_, h_, t, n}, {kF, p_ * kF, row, row * t});
  op.src[1] = view_of(dt_, static_cast<size_t>(r0) * hrow, {h_, t, n, 1},
                      {kF, hrow, hrow * t, hrow * t * n});
  op.src[2] = l_.ssm_a;
  op.src[3] = view_of(conv_out_, at + static_cast<size_t>(d_inner_) * kF, {n_, g_, t, n},
                      {kF, n_ * kF, row, row * t});
  op.src[4] = view_of(conv_out_, at + static_cast<size_t>(d_inner_ + g_ * n_) * kF, {n_, g_, t, n},
                      {kF, n_ * kF, row, row * t});
  op.dst = view_of(y_, static_cast<size_t>(r0) * yrow, {p_, h_, t, n},
                   {kF, p_ * kF, yrow, yrow * t});
  return op;
}

void Mamba2Layer::scan_plain(int64_t r0, int64_t t, int64_t n, const TensorView& state) {
  Op op = scan_op(OpKind::kSsmScan, r0, t, n);
  op.src[5] = state;  // [N, P, H, n], updated in place
  op.dst2 = state;
  ctx_.run(op);
}

bool Mamba2Layer::scan_fused(int64_t r0, int64_t n, const TensorView& ids) {
  Op op = scan_op(OpKind::kSsmScanUpdate, r0, 1, n);
  op.src[5] = ssm_pool_;  // [N, P, H, n_slots]: the slots of ids, updated in place
  op.src[6] = ids;
  op.dst2 = ssm_pool_;
  return ctx_.run_if_supported(op);
}

TensorView Mamba2Layer::output() {
  const int64_t t = y_.ne[2];
  const size_t row = static_cast<size_t>(c_) * kF;
  const TensorView x = view_of(conv_out_, 0, {p_, h_, t, 1}, {kF, p_ * kF, row, row * t});
  const TensorView xd = ctx_.mul(x, reshape(l_.ssm_d, {1, h_, 1, 1}));  // [P, H, T]
  ctx_.add(y_, xd, y_);
  const size_t zrow = static_cast<size_t>(zxbcdt_.ne[0]) * kF;
  const TensorView z =
      ctx_.unary(view_of(zxbcdt_, 0, {p_, h_, t, 1}, {kF, p_ * kF, zrow, zrow * t}),
                 UnaryKind::kSilu);  // [P, H, T]
  ctx_.mul(y_, z, y_);
  // RMS norm over each group's d_inner / G channels, then the per-group
  // weight (none without ssm_norm: cfg.ssm_norm_optional).
  if (!l_.ssm_norm.empty()) {
    const int64_t dg = d_inner_ / g_;
    const TensorView yg = reshape(y_, {dg, g_, t, 1});
    ctx_.rms_norm(yg, TensorView{}, cfg_.norm_eps, yg);
    ctx_.mul(yg, reshape(l_.ssm_norm, {dg, g_, 1, 1}), yg);
  }
  return output_product(l_.ssm_out, reshape(y_, {d_inner_, t, 1, 1}));  // [E, T]
}

}  // namespace

TensorView mamba2(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                  const TensorView& x, const RecurrentInputs& ri, cache::KvCache& cache,
                  ResidualFusion* rf) {
  if (cache.conv_state(il).empty() || cache.ssm_state(il).empty()) {
    ctx.fail(invalid_argument(
        "forward: layer {} is a Mamba-2 layer; the KV cache holds no recurrent state for it (use "
        "a hybrid cache, cache/hybrid_kv_cache.h)",
        il));
    return ctx.f32(cfg.n_embd, x.ne[1]);
  }
  Mamba2Layer layer(ctx, cfg, l, il, ri, cache);
  return layer.run(x, rf);
}

}  // namespace folio::model
