// Gated full attention of the hybrid models. Shapes (layer il): x [E, T];
// attn_q output [2 * Dk * Hq, T] = per head [query (Dk), gate (Dk)], read
// through strided views (q and gate are never copied out); k [Dk, Hkv, T];
// v [Dv * Hkv, T]; attention output [Dv, Hq, T] (Dk == Dv).
//
// Order of operations as llama.cpp's qwen3next / qwen35 build_layer_attn:
// q = rms_norm(q) * q_norm, k = rms_norm(k) * k_norm, rope (neox over the
// first rope.dimension_count dims; qwen35's multi-section rope equals it for
// text positions, see model/arch/qwen3next.cc), attention with scale
// 1/sqrt(Dk), out = attn * sigmoid(gate), then attn_output. A one-token
// step with Q/K/V joined at load (LayerWeights::qkv_joint) computes them in
// one product and takes q|gate, k and v as views of it.
#include "model/blocks/blocks.h"
#include "model/blocks/hybrid.h"

namespace folio::model {

TensorView gated_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                           int il, const TensorView& x_in, const ForwardInputs& in,
                           cache::KvCache& cache, ResidualFusion* rf) {
  const LayerWeights& l = w.layers[static_cast<size_t>(il)];
  BlockInput x(ctx, x_in, rf);
  const int64_t t = x.n_tokens();
  const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
  const int64_t dk = cfg.head_dim_k, dv = cfg.head_dim_v;
  const size_t f = sizeof(float);

  // Optional q/k/v biases (l.bq, l.bk, l.bv) are loaded, as llama.cpp's
  // create_tensor_qkv loads them, and not applied, as its qwen3next / qwen35
  // graphs do not apply them.
  TensorView qg, k, v;  // [2 * Dk * Hq, T], [Dk * Hkv, T], [Dv * Hkv, T]
  if (!l.qkv_joint.empty() && t == 1) {  // weights joined at load: one product, parts as views
    const TensorView qkv = x.mul_mat(l.qkv_joint);
    qg = leading_part(qkv, 0, 2 * dk * hq);
    k = leading_part(qkv, 2 * dk * hq, dk * hkv);
    v = leading_part(qkv, 2 * dk * hq + dk * hkv, dv * hkv);
  } else {
    qg = x.mul_mat(l.wq);
    k = x.mul_mat(l.wk);
    v = x.mul_mat(l.wv);
  }
  TensorView q_view = qg;  // [Dk, Hq, T] stride 2 * Dk
  q_view.ne = {dk, hq, t, 1};
  q_view.nb = {f, 2 * dk * f, 2 * dk * hq * f, 2 * dk * hq * t * f};
  TensorView gate_view = q_view;  // [Dk, Hq, T] the second half of each head
  if (gate_view.data != nullptr) gate_view.data = static_cast<char*>(qg.data) + dk * f;

  k = reshape(k, {dk, hkv, t, 1});                                   // [Dk, Hkv, T]
  TensorView q = ctx.rms_norm(q_view, l.attn_q_norm, cfg.norm_eps);  // contiguous [Dk, Hq, T]
  ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
  const RopeParams rp = cfg.rope_params(il);
  q = ctx.rope(q, in.pos, rp, w.rope_freqs);
  k = ctx.rope(k, in.pos, rp, w.rope_freqs);

  const TensorView o = attend_through_cache(ctx, cfg, il, q, k, v, in, cache);  // [Dv, Hq, T]
  const TensorView gate = ctx.unary(gate_view, UnaryKind::kSigmoid);  // contiguous [Dk, Hq, T]
  ctx.mul(o, gate, o);
  return output_product(ctx, l.wo, reshape(o, {dv * hq, t, 1, 1}), rf);  // [E, T], or x += wo o
}

}  // namespace folio::model
