// Self-attention block. Shapes (layer il): x [E, T]; q [Dk, Hq, T];
// k [Dk, Hkv, T]; v [Dv * Hkv, T]; attention output [Dv, Hq, T].
//
// K/V of the batch reach the cache before the attention op reads it, so a
// token attends to the earlier tokens of its own batch through the cache like
// to those of earlier batches (one code path for prefill and decode). The
// q.k scale is applied inside flash attention (llama.cpp scales q first for
// gemma3; the two differ by float rounding only).
#include "model/blocks/blocks.h"

namespace folio::model {

TensorView self_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                          int il, const TensorView& x, const ForwardInputs& in,
                          cache::KvCache& cache) {
  const LayerWeights& l = w.layers[static_cast<size_t>(il)];
  const int64_t t = x.ne[1];
  const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
  const int64_t dk = cfg.head_dim_k, dv = cfg.head_dim_v;

  TensorView q = ctx.mul_mat(l.wq, x);  // [Hq * Dk, T]
  TensorView k = ctx.mul_mat(l.wk, x);  // [Hkv * Dk, T]
  TensorView v = ctx.mul_mat(l.wv, x);  // [Hkv * Dv, T]
  if (!l.bq.empty()) ctx.add(q, l.bq, q);
  if (!l.bk.empty()) ctx.add(k, l.bk, k);
  if (!l.bv.empty()) ctx.add(v, l.bv, v);

  q = reshape(q, {dk, hq, t, 1});
  k = reshape(k, {dk, hkv, t, 1});
  if (cfg.qk_norm) {  // RMS over each head's dims, in place
    ctx.rms_norm(q, l.attn_q_norm, cfg.norm_eps, q);
    ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
  }
  const RopeParams rp = cfg.rope_params(il);
  q = ctx.rope(q, in.pos, rp, w.rope_freqs);
  k = ctx.rope(k, in.pos, rp, w.rope_freqs);

  const TensorView o = attend_through_cache(ctx, cfg, il, q, k, v, in, cache);  // [Dv, Hq, T]
  TensorView out = ctx.mul_mat(l.wo, reshape(o, {dv * hq, t, 1, 1}));           // [E, T]
  if (!l.bo.empty()) ctx.add(out, l.bo, out);
  return out;
}

TensorView attend_through_cache(ForwardContext& ctx, const ModelConfig& cfg, int il,
                                const TensorView& q, const TensorView& k, const TensorView& v,
                                const ForwardInputs& in, cache::KvCache& cache) {
  const int64_t t = k.ne[2];
  ctx.set_rows(cache.k_table(il), reshape(k, {k.ne[0] * k.ne[1], t, 1, 1}), in.slots);
  ctx.set_rows(cache.v_table(il), v, in.slots);

  AttentionParams ap;
  ap.scale = cfg.kq_scale();
  ap.softcap = cfg.attn_softcap;
  ap.causal = true;
  ap.window = cfg.is_swa(il) ? cfg.n_swa : 0;
  ap.layout = cache.paged() ? KvLayout::kPaged : KvLayout::kContiguous;
  ap.block_size = cache.block_size();
  return ctx.flash_attn(q, cache.k_view(il), cache.v_view(il), in.seq_idx, in.pos, in.kv_len,
                        in.block_table, ap);  // [Dv, Hq, T]
}

}  // namespace folio::model
