// LFM2's short-conv layer (llama.cpp's lfm2 shortconv block).
//
// Shapes: E = n_embd, T = batch tokens, K = shortconv.l_cache (conv width,
// K - 1 cached taps per channel).
//   x [E, T] -> (recurrent order) in_proj: [B (E), C (E), x (E)] per token
//   conv input B * x [E, T]
//   causal depthwise conv over each sequence's K - 1 cached taps and its new
//         inputs, no bias, no activation -> conv [E, T]
//   y = C * conv;  out = out_proj y [E, T] (batch order)
// exactly the order of llama.cpp's graph.
//
// There is no scan and no state matrix: the cache holds only the taps
// (conv-only RecurrentShape). The conv, decode runs (kSsmConvUpdate by slot
// ids where a backend runs it), prefill steps and the taps of checkpoints
// are RecurrentLayer's (recurrent_layer.h).
#include "model/blocks/recurrent_layer.h"

namespace folio::model {

namespace {

class ShortConvLayer final : public RecurrentLayer {
 public:
  ShortConvLayer(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                 const RecurrentInputs& ri, cache::KvCache& cache)
      : RecurrentLayer(ctx, cfg, l, il, ri, cache, /*conv_silu=*/false) {}

 private:
  void project(BlockInput& xs) override;
  // No state: RecurrentLayer never calls the scans of a conv-only layer.
  void scan_plain(int64_t, int64_t, int64_t, const TensorView&) override {}
  bool scan_fused(int64_t, int64_t, const TensorView&) override { return true; }
  TensorView output() override;

  TensorView bcx_;  // [3 E, T] the input projection: B, C, x
};

// The chunk `i` (0: B, 1: C, 2: x) of bcx_ as a strided [C, T] view.
TensorView chunk(const TensorView& bcx, int64_t c, int i) {
  const int64_t t = bcx.ne[1];
  const size_t row = bcx.nb[1];
  return view_of(bcx, static_cast<size_t>(i * c) * sizeof(float), {c, t, 1, 1},
                 {sizeof(float), row, row * t, row * t});
}

void ShortConvLayer::project(BlockInput& xs) {
  bcx_ = xs.mul_mat(l_.ssm_in);                                 // [3 E, T]
  conv_in_ = ctx_.mul(chunk(bcx_, c_, 0), chunk(bcx_, c_, 2));  // B * x [E, T]
}

TensorView ShortConvLayer::output() {
  const TensorView y = ctx_.mul(chunk(bcx_, c_, 1), conv_out_);  // C * conv [E, T]
  return output_product(l_.ssm_out, y);                          // [E, T]
}

}  // namespace

TensorView short_conv(ForwardContext& ctx, const ModelConfig& cfg, const LayerWeights& l, int il,
                      const TensorView& x, const RecurrentInputs& ri, cache::KvCache& cache,
                      ResidualFusion* rf) {
  if (cache.conv_state(il).empty()) {
    ctx.fail(invalid_argument(
        "forward: layer {} is a short-conv layer; the KV cache holds no recurrent state for it "
        "(use a hybrid cache, cache/hybrid_kv_cache.h)",
        il));
    return ctx.f32(cfg.n_embd, x.ne[1]);
  }
  ShortConvLayer layer(ctx, cfg, l, il, ri, cache);
  return layer.run(x, rf);
}

}  // namespace folio::model
