#include "model/mtp_head.h"

#include "model/arch/arch.h"
#include "model/blocks/blocks.h"
#include "model/forward_inputs.h"
#include "model/model.h"

namespace folio::model {

Result<std::unique_ptr<MtpHead>> MtpHead::create(const Model& model, int block) {
  const ModelConfig& c = model.config();
  if (c.nextn.n_layer == 0) {
    return invalid_argument("MTP: the '{}' model carries no MTP blocks ({} = 0)", c.arch,
                            c.arch + ".nextn_predict_layers");
  }
  if (c.family->mtp_layer == nullptr) {
    return invalid_argument("MTP: folio does not run the MTP blocks of '{}' (it does for qwen35, "
                            "qwen35moe, qwen3next, glm4moe)",
                            c.arch);
  }
  if (!model.has_mtp()) {
    return invalid_argument("MTP: the model was loaded without its MTP blocks (LoadOptions::load_mtp)");
  }
  if (block < 0 || block >= c.nextn.n_layer) {
    return invalid_argument("MTP: block {} of {}", block, c.nextn.n_layer);
  }
  auto h = std::unique_ptr<MtpHead>(new MtpHead());
  h->cfg_ = c.mtp_block_config(block);
  const ModelWeights& w = model.weights();
  h->w_ = w;
  h->m_ = w.mtp[static_cast<size_t>(block)];
  h->w_.layers = {h->m_.layer};
  h->w_.mtp.clear();
  h->head_norm_ = h->m_.shared_head_norm.empty() ? w.output_norm : h->m_.shared_head_norm;
  h->head_ = h->m_.shared_head_head.empty() ? w.output : h->m_.shared_head_head;
  h->embed_ = h->m_.embed_tokens.empty() ? w.token_embd : h->m_.embed_tokens;
  return h;
}

Result<std::unique_ptr<cache::KvCache>> MtpHead::make_cache(
    const cache::KvCacheOptions& options) const {
  return cache::create_kv_cache(cfg_.cache_geometry(), options);
}

Result<MtpHead::Output> MtpHead::forward(const cache::Batch& batch, std::span<const float> hidden,
                                         cache::KvCache& cache, ForwardContext& ctx) const {
  FOLIO_RETURN_IF_ERROR(check_batch(batch, cfg_.n_vocab));
  const int64_t e = cfg_.n_embd, t = batch.size();
  if (static_cast<int64_t>(hidden.size()) != e * t) {
    return invalid_argument("MTP: {} hidden values for {} tokens of width {}", hidden.size(), t, e);
  }
  if (cache.n_layer() != 1) {
    return invalid_argument("MTP: the head's KV cache has {} layers, not 1", cache.n_layer());
  }
  cache::KvPlan& plan = ctx.kv_plan();
  FOLIO_RETURN_IF_ERROR(cache.plan(batch, plan));
  cache.prepare(plan);
  ctx.begin();
  const ForwardInputs in = upload_forward_inputs(cfg_, batch, plan, ctx);
  const float eps = cfg_.norm_eps;
  const TensorView emb = ctx.get_rows(embed_, in.tokens);  // [E, T]
  const TensorView h = ctx.upload_f32(hidden, e, t);       // [E, T]
  // [enorm(emb); hnorm(h)]: each half written into its rows of one [2E, T].
  const TensorView both = ctx.f32(2 * e, t);
  TensorView lo = both, hi = both;
  lo.ne[0] = e;
  hi.ne[0] = e;
  if (hi.data != nullptr) hi.data = static_cast<char*>(hi.data) + e * static_cast<int64_t>(sizeof(float));
  ctx.cpy(ctx.rms_norm(emb, m_.enorm, eps), lo);
  ctx.cpy(ctx.rms_norm(h, m_.hnorm, eps), hi);
  TensorView x = ctx.mul_mat(m_.eh_proj, both);  // [E, T]
  x = cfg_.family->mtp_layer(cfg_, w_, x, in, cache, ctx);
  Output out;
  TensorView logits, g;
  if (in.n_outputs > 0) {
    g = ctx.rms_norm(gather_outputs(ctx, x, in), head_norm_, eps);  // [E, n_out]
    logits = ctx.mul_mat(head_, g);                              // [n_vocab, n_out]
    Result<TensorView> hl = ctx.to_host(logits);
    Result<TensorView> hg = ctx.to_host(g);
    if (hl.ok()) out.logits = *hl;
    if (hg.ok()) out.hidden = *hg;
  } else {
    (void)ctx.sync();
  }
  if (!ctx.ok()) {
    cache.discard(plan);
    return ctx.status();
  }
  cache.apply(plan);
  if (in.n_outputs == 0) {
    out.logits = TensorView::contiguous(nullptr, DType::F32, {cfg_.n_vocab, 0});
    out.hidden = TensorView::contiguous(nullptr, DType::F32, {e, 0});
  }
  return out;
}

}  // namespace folio::model
