// Multi-head latent attention (deepseek2: DeepSeek V2 / V3 / R1, Kimi K2) in
// the absorbed form. Shapes (layer il): x [E, T]; H = query heads; Dl =
// kv_lora_rank; R = rope dims; Dn = nope dims; Dqk = Dn + R; Dv = a head's
// value dims (ModelConfig::mla).
//
//   c    = rms_norm(kv_a x [0, Dl))          [Dl, T]  the compressed K/V
//   kr   = rope(kv_a x [Dl, Dl + R))         [R, 1, T] one rope key for every head
//   row  = [c, kr]                           [Dl + R, T] the cache's latent row
//   q    = q_b(rms_norm(q_a x)) or wq x      [Dqk, H, T]
//   Q    = [k_b_h q_nope_h, rope(q_rope_h)]  [Dl + R, H, T] per head h
//   o    = flash_attn(Q, rows, V = rows[0, Dl))  [Dl, H, T] one KV head (MQA)
//   out  = wo [v_b_h o_h]_h                  [E, T]
//
// Score h = q_nope_h . (k_b_h^T c) + q_rope_h . kr = (k_b_h q_nope_h) . c +
// q_rope_h . kr: multiplying the query into the latent space (k_b) gives the
// expanded form's scores while the cache holds Dl + R values per token
// instead of H (Dqk + Dv); likewise v_b after the attention instead of per
// cached token. The scale is ModelConfig::attn_scale (deepseek2.cc: DeepSeek's
// YaRN mscale squared over sqrt(Dqk)), not 1 / sqrt(Dl + R).
//
// The per-head products (k_b, v_b: [*, *, H] weights) take their inputs
// head-major ([D, T, H]), so q's nope parts and the attention output are
// copied into that order (kCpy with strides) and back; the latent row and Q
// are assembled by copies into column ranges.
#include "model/blocks/blocks.h"

namespace folio::model {

namespace {

// A view of t's memory at byte `offset` with shape ne and byte strides nb
// (ne[3] = 1): a column range or a permutation of a contiguous tensor.
TensorView latent_view(const TensorView& t, size_t offset, std::array<int64_t, 3> ne,
                       std::array<size_t, 3> nb) {
  TensorView v = t;
  if (v.data != nullptr) v.data = static_cast<char*>(v.data) + offset;
  v.ne = {ne[0], ne[1], ne[2], 1};
  v.nb = {nb[0], nb[1], nb[2], nb[2] * static_cast<size_t>(ne[2])};
  return v;
}

}  // namespace

TensorView latent_attention(ForwardContext& ctx, const ModelConfig& cfg, const ModelWeights& w,
                            int il, const TensorView& x, const ForwardInputs& in,
                            cache::KvCache& cache) {
  const LayerWeights& l = w.layers[static_cast<size_t>(il)];
  const MlaConfig& m = cfg.mla;
  const int64_t t = x.ne[1], h = cfg.n_head_of(il), r = cfg.rope.n_dims;
  const int64_t dl = m.kv_lora_rank, dqk = m.head_dim_qk, dn = dqk - r, dv = m.head_dim_v;
  constexpr size_t f = sizeof(float);
  const RopeParams rp = cfg.rope_params(il);

  // Queries [Dqk, H, T] (contiguous [H * Dqk, T]).
  const TensorView q =
      l.wq_a.empty()
          ? ctx.mul_mat(l.wq, x)
          : ctx.mul_mat(l.wq_b, ctx.rms_norm(ctx.mul_mat(l.wq_a, x), l.attn_q_a_norm, cfg.norm_eps));
  const size_t qrow = static_cast<size_t>(dqk) * f;  // one head of q
  const TensorView q_nope = ctx.f32(dn, t, h);       // [Dn, T, H]
  ctx.cpy(latent_view(q, 0, {dn, t, h}, {f, qrow * h, qrow}), q_nope);
  const TensorView q_lat = ctx.mul_mat(l.wk_b, q_nope);  // [Dl, T, H]
  const TensorView q_pe = ctx.f32(r, h, t);              // [R, H, T]
  ctx.cpy(latent_view(q, static_cast<size_t>(dn) * f, {r, h, t}, {f, qrow, qrow * h}), q_pe);
  const TensorView q_rot = ctx.rope(q_pe, in.pos, rp);

  const size_t row = static_cast<size_t>(dl + r) * f;  // one latent row (K) or Q head
  TensorView qc = ctx.f32(dl + r, h, t);               // [Dl + R, H, T]
  const size_t lat = static_cast<size_t>(dl) * f;
  ctx.cpy(latent_view(q_lat, 0, {dl, h, t}, {f, lat * t, lat}),
          latent_view(qc, 0, {dl, h, t}, {f, row, row * h}));
  ctx.cpy(q_rot, latent_view(qc, lat, {r, h, t}, {f, row, row * h}));
  if (cfg.attn_temp_scale != 0.0f) qc = scale_by_temperature(ctx, cfg, qc, in);

  // The latent rows [Dl + R, T], assembled in the projection's own rows.
  const TensorView kv = ctx.mul_mat(l.wkv_a_mqa, x);  // [Dl + R, T]
  const TensorView c = ctx.f32(dl, t);
  ctx.cpy(latent_view(kv, 0, {dl, t, 1}, {f, row, row * t}), c);
  const TensorView k_pe = ctx.f32(r, 1, t);  // [R, 1, T]: one rope "head"
  ctx.cpy(latent_view(kv, lat, {r, 1, t}, {f, row, row}), k_pe);
  const TensorView k_rot = ctx.rope(k_pe, in.pos, rp);
  ctx.cpy(ctx.rms_norm(c, l.attn_kv_a_norm, cfg.norm_eps),
          latent_view(kv, 0, {dl, t, 1}, {f, row, row * t}));
  ctx.cpy(k_rot, latent_view(kv, lat, {r, 1, t}, {f, row, row}));

  const int group = cache.kv_group(il);
  ctx.set_rows(cache.k_table(il), kv, group == 0 ? in.slots : in.windowed[group - 1].slots);
  const TensorView o = attend_cached(ctx, cfg, il, il, qc, in, cache);  // [Dl, H, T]

  // Each head's latent output through its v_b: [Dl, T, H] -> [Dv, T, H] -> [Dv, H, T].
  const TensorView o_t = ctx.f32(dl, t, h);
  ctx.cpy(latent_view(o, 0, {dl, t, h}, {f, lat * h, lat}), o_t);
  const TensorView ov = ctx.mul_mat(l.wv_b, o_t);  // [Dv, T, H]
  const TensorView oh = ctx.f32(dv, h, t);
  const size_t vrow = static_cast<size_t>(dv) * f;
  ctx.cpy(latent_view(ov, 0, {dv, h, t}, {f, vrow * t, vrow}), oh);
  return ctx.mul_mat(l.wo, reshape(oh, {dv * h, t, 1, 1}));  // [E, T]
}

}  // namespace folio::model
