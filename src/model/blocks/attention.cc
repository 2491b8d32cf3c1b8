// Self-attention block. Shapes (layer il): x [E, T]; q [Dk, Hq, T];
// k [Dk, Hkv, T]; v [Dv * Hkv, T]; attention output [Dv, Hq, T].
//
// K/V of the batch reach the cache before the attention op reads it, so a
// token attends to the earlier tokens of its own batch through the cache like
// to those of earlier batches (one code path for prefill and decode).
// Non-causal attention (encoders, cfg.causal_attn false) is the same op
// without the p <= pos limit: a token sees every key its sequence holds after
// the batch, so an encoder feeds each sequence whole in one batch. The
// q.k scale is applied inside flash attention (llama.cpp scales q first for
// gemma3; the two differ by float rounding only). A layer's attention sinks
// (gpt-oss: one logit per query head, in the softmax denominator only) go to
// the same op.
//
// q/k RMS norms (cfg.qk_norm) run per head before the rope, over all heads
// of a token at once where cfg.qk_norm_full (minimax-m2), or per head after
// the rope where cfg.qk_norm_after_rope (hunyuan-dense); then the fused
// rope + cache write is not used, since K reaches the cache normed.
//
// Q/K/V joined at load (LayerWeights::qkv_joint): a step computes them in
// one product [Hq * Dk + Hkv * (Dk + Dv), T] and takes q, k, v as views of
// its rows (strided by the product's column for T > 1; each output element
// is the same sum as in a product of its part alone, so the bits do not
// change); in each column q's heads are followed by k's, so one rope serves
// both (bit for bit the two ropes). Where a backend fuses it
// (kRopeSetRows), that rope also writes the rotated K and the V rows into
// the cache (one dispatch for rope and both cache writes).
#include <cmath>

#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

// Columns [c0, c0 + n) of every row of t [C, T] as a contiguous [n, T] copy.
TensorView copy_columns(ForwardContext& ctx, const TensorView& t, int64_t c0, int64_t n) {
  TensorView src = t;
  if (src.data != nullptr) src.data = static_cast<char*>(src.data) + c0 * t.nb[0];
  src.ne[0] = n;
  const TensorView dst = ctx.f32(n, t.ne[1]);
  ctx.cpy(src, dst);
  return dst;
}

}  // namespace

TensorView leading_part(const TensorView& t, int64_t c0, int64_t n) {
  TensorView v = t;
  if (v.data != nullptr) v.data = static_cast<char*>(v.data) + c0 * t.nb[0];
  v.ne = {n, 1, 1, 1};
  v.nb = {t.nb[0], t.nb[0] * n, t.nb[0] * n, t.nb[0] * n};
  return v;
}

namespace {

// Elements [c0, c0 + n) of every column of t [C, T] as a view [n, T] (t's
// column stride); T = 1: leading_part.
TensorView column_part(const TensorView& t, int64_t c0, int64_t n) {
  if (t.ne[1] == 1) return leading_part(t, c0, n);
  TensorView v = t;
  if (v.data != nullptr) v.data = static_cast<char*>(v.data) + c0 * t.nb[0];
  v.ne[0] = n;
  return v;
}

// A 2-D view t [D * H, T] with contiguous columns as [D, H, T] (reshape
// where t is contiguous; else t's column stride).
TensorView split_heads(const TensorView& t, int64_t d, int64_t h) {
  TensorView v = t;
  v.ne = {d, h, t.ne[1], 1};
  v.nb = {t.nb[0], t.nb[0] * d, t.nb[1], t.nb[1] * t.ne[1]};
  return v;
}

// [D, H, T] with contiguous heads as [D * H, T] (t's token stride).
TensorView merge_heads(const TensorView& t) {
  TensorView v = t;
  v.ne = {t.ne[0] * t.ne[1], t.ne[2], 1, 1};
  v.nb = {t.nb[0], t.nb[2], t.nb[2] * t.ne[2], t.nb[2] * t.ne[2]};
  return v;
}

}  // namespace

TensorView scale_by_temperature(ForwardContext& ctx, const ModelConfig& cfg, const TensorView& q,
                                const ForwardInputs& in) {
  const int64_t t = q.ne[2];
  const TensorView temp = ctx.f32(1, 1, t);
  if (!ctx.ok()) return q;
  const auto* pos = static_cast<const int32_t*>(in.pos.data);
  auto* out = static_cast<float*>(temp.data);
  for (int64_t i = 0; i < t; ++i) {
    const float floor_pos =
        std::floor(static_cast<float>(pos[i]) / static_cast<float>(cfg.attn_temp_floor));
    out[i] = static_cast<float>(std::log(floor_pos + 1.0) * cfg.attn_temp_scale + 1.0);
  }
  return ctx.mul(q, temp, q);
}

namespace {

// The cache slots layer il's K/V rows of this step go to.
const TensorView& kv_slots(const cache::KvCache& cache, int il, const ForwardInputs& in) {
  const int group = cache.kv_group(il);
  return group == 0 ? in.slots : in.windowed[static_cast<size_t>(group) - 1].slots;
}

}  // namespace

TensorView self_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                          int il, const TensorView& x_in, const ForwardInputs& in,
                          cache::KvCache& cache, ResidualFusion* rf) {
  if (cfg.mla.enabled()) {
    // Latent attention has no fused form: normalise here, add outside.
    const bool norm_here = rf != nullptr && !rf->norm.empty();
    const TensorView xn = norm_here ? ctx.rms_norm(rf->x, rf->norm, rf->eps) : x_in;
    return latent_attention(ctx, cfg, w, il, xn, in, cache);
  }
  const LayerWeights& l = w.layers[static_cast<size_t>(il)];
  const bool fused_norm = rf != nullptr && !rf->norm.empty();
  const int64_t t = fused_norm ? rf->x.ne[1] : x_in.ne[1];
  // The input: given, or normalised here unless the joined product does it.
  const bool norm_in_product = fused_norm && !l.qkv_joint.empty() && t <= kFusedStepTokens;
  const TensorView x = fused_norm && !norm_in_product ? ctx.rms_norm(rf->x, rf->norm, rf->eps)
                       : fused_norm                   ? rf->x
                                                      : x_in;
  const int64_t hq = cfg.n_head_of(il), hkv = cfg.n_head_kv_of(il);
  const int64_t dk = cfg.head_dim_k_of(il), dv = cfg.head_dim_v_of(il);

  TensorView q, k, v;
  TensorView qkv;            // the joined product [Hq * Dk + Hkv * (Dk + Dv), T]
  bool kv_written = false;   // the rope wrote K and V to the cache (kRopeSetRows)
  if (!l.qkv_joint.empty()) {  // weights joined at load: one product, parts as views
    qkv = norm_in_product ? ctx.rms_norm_mul_mat(l.qkv_joint, x, rf->norm, rf->eps)
                          : ctx.mul_mat(l.qkv_joint, x);
    q = column_part(qkv, 0, hq * dk);
    k = column_part(qkv, hq * dk, hkv * dk);
    v = column_part(qkv, (hq + hkv) * dk, hkv * dv);
  } else if (!l.wqkv.empty()) {  // one projection [Hq * Dk + Hkv * (Dk + Dv), T], split
    const TensorView qkv = ctx.mul_mat(l.wqkv, x);
    q = copy_columns(ctx, qkv, 0, hq * dk);
    k = copy_columns(ctx, qkv, hq * dk, hkv * dk);
    v = copy_columns(ctx, qkv, (hq + hkv) * dk, hkv * dv);
  } else {
    q = ctx.mul_mat(l.wq, x);  // [Hq * Dk, T]
    k = ctx.mul_mat(l.wk, x);  // [Hkv * Dk, T]
    v = ctx.mul_mat(l.wv, x);  // [Hkv * Dv, T]
  }
  if (!l.bq.empty()) ctx.add(q, l.bq, q);
  if (!l.bk.empty()) ctx.add(k, l.bk, k);
  if (!l.bv.empty()) ctx.add(v, l.bv, v);

  if (cfg.qk_norm && cfg.qk_norm_full) {  // RMS over all heads of a token, in place
    ctx.rms_norm(q, l.attn_q_norm, cfg.norm_eps, q);
    ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
  }
  q = split_heads(q, dk, hq);
  k = split_heads(k, dk, hkv);
  const bool norm_after_rope = cfg.qk_norm && cfg.qk_norm_after_rope;
  if (cfg.qk_norm && !cfg.qk_norm_full && !norm_after_rope) {  // RMS over each head's dims
    ctx.rms_norm(q, l.attn_q_norm, cfg.norm_eps, q);
    ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
  }
  // learned_pos: the positions are in the embeddings (bert); !uses_rope: none
  // (granitehybrid's layers, smollm3's every 4th).
  if (!cfg.learned_pos && cfg.uses_rope(il)) {
    const RopeParams rp = cfg.rope_params(il);
    // Multi-section rope reads 4 positions per token.
    const TensorView& pos = in.pos_sections.empty() ? in.pos : in.pos_sections;
    // LongRoPE: the long divisors when a sequence may outgrow the original context.
    const TensorView& factors = !w.rope_freqs.empty() ? w.rope_freqs
                                : cache.n_ctx() > cfg.rope.n_ctx_orig && !w.rope_long.empty()
                                    ? w.rope_long
                                    : w.rope_short;
    if (qkv.data != nullptr) {  // q's heads then k's in each column: [Dk, Hq + Hkv, T]
      const TensorView qk_in = split_heads(column_part(qkv, 0, (hq + hkv) * dk), dk, hq + hkv);
      // The K/V cache write in the same dispatch where a backend fuses it
      // (not when K is normed after the rope).
      const TensorView k_table = cache.k_table(il);
      TensorView qk = k_table.ne[0] == hkv * dk && !norm_after_rope
                          ? ctx.rope_set_rows(qk_in, pos, rp, factors, k_table,
                                              kv_slots(cache, il, in), v, cache.v_table(il))
                          : TensorView{};
      kv_written = qk.nb[0] != 0;
      if (!kv_written) qk = ctx.rope(qk_in, pos, rp, factors);  // [Dk, Hq + Hkv, T] contiguous
      const TensorView qk2 = reshape(qk, {(hq + hkv) * dk, t, 1, 1});
      q = split_heads(column_part(qk2, 0, hq * dk), dk, hq);
      k = split_heads(column_part(qk2, hq * dk, hkv * dk), dk, hkv);
    } else {
      q = ctx.rope(q, pos, rp, factors);
      k = ctx.rope(k, pos, rp, factors);
    }
  }
  if (norm_after_rope) {  // hunyuan-dense: RMS over each roped head, in place
    ctx.rms_norm(q, l.attn_q_norm, cfg.norm_eps, q);
    ctx.rms_norm(k, l.attn_k_norm, cfg.norm_eps, k);
  }
  if (cfg.attn_temp_scale != 0.0f) q = scale_by_temperature(ctx, cfg, q, in);

  const TensorView o = kv_written ? attend_cached(ctx, cfg, il, il, q, in, cache, l.attn_sinks)
                                  : attend_through_cache(ctx, cfg, il, q, k, v, in, cache,
                                                         l.attn_sinks);  // [Dv, Hq, T]
  const TensorView o2 = reshape(o, {dv * hq, t, 1, 1});
  if (l.bo.empty()) return output_product(ctx, l.wo, o2, rf);  // [E, T], or x += wo o
  TensorView out = ctx.mul_mat(l.wo, o2);  // [E, T]
  if (!l.bo.empty()) ctx.add(out, l.bo, out);
  return out;
}

TensorView self_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                          int il, const TensorView& x, const ForwardInputs& in,
                          cache::KvCache& cache) {
  return self_attention(ctx, cfg, w, il, x, in, cache, nullptr);
}

TensorView attend_through_cache(ForwardContext& ctx, const ModelConfig& cfg, int il,
                                const TensorView& q, const TensorView& k, const TensorView& v,
                                const ForwardInputs& in, cache::KvCache& cache,
                                const TensorView& sinks) {
  const TensorView& slots = kv_slots(cache, il, in);
  ctx.set_rows(cache.k_table(il), merge_heads(k), slots);
  ctx.set_rows(cache.v_table(il), v, slots);
  return attend_cached(ctx, cfg, il, il, q, in, cache, sinks);
}

TensorView attend_cached(ForwardContext& ctx, const ModelConfig& cfg, int il, int cache_layer,
                         const TensorView& q, const ForwardInputs& in, cache::KvCache& cache,
                         const TensorView& sinks) {
  const int group = cache.kv_group(cache_layer);
  const TensorView& block_table = group == 0 ? in.block_table : in.windowed[group - 1].block_table;
  AttentionParams ap;
  ap.scale = cfg.kq_scale();
  ap.softcap = cfg.attn_softcap;
  ap.causal = cfg.causal_attn;  // encoders: every key of the sequence (all in this batch)
  ap.window = cfg.is_swa(il) ? cfg.n_swa : 0;
  ap.layout = cache.paged() ? KvLayout::kPaged : KvLayout::kContiguous;
  ap.block_size = cache.block_size();
  return ctx.flash_attn(q, cache.k_view(cache_layer), cache.v_view(cache_layer), in.seq_idx, in.pos,
                        in.kv_len, block_table, ap, sinks);  // [Dv, Hq, T]
}

}  // namespace folio::model
