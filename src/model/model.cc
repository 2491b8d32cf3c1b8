// Model::forward: batch validation, KV plan (and its block copies), inputs
// into the arena, the architecture's forward, plan applied on success and
// discarded on failure.
#include "model/model.h"

#include <algorithm>

#include "model/arch/arch.h"
#include "model/forward_inputs.h"
#include "model/hidden_states.h"

namespace folio::model {

Status check_batch(const cache::Batch& batch, int64_t n_vocab) {
  const int64_t n = batch.size();
  if (n == 0) return invalid_argument("forward: empty batch");
  if (batch.pos.size() != batch.tokens.size() || batch.seq_idx.size() != batch.tokens.size() ||
      batch.output.size() != batch.tokens.size()) {
    return invalid_argument(
        "forward: batch has {} tokens, {} positions, {} sequence ids, {} output flags",
        batch.tokens.size(), batch.pos.size(), batch.seq_idx.size(), batch.output.size());
  }
  if (!batch.unverified.empty() && batch.unverified.size() != batch.tokens.size()) {
    return invalid_argument("forward: batch has {} tokens and {} draft flags", batch.tokens.size(),
                            batch.unverified.size());
  }
  if (n > (int64_t{1} << 24))
    return invalid_argument("forward: batch of {} tokens is too large", n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = batch.tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= n_vocab) {
      return invalid_argument(
          "forward: token id {} at batch index {} is outside the vocabulary [0, {})", t, i,
          n_vocab);
    }
  }
  return Status();
}

ForwardInputs upload_forward_inputs(const ModelConfig& cfg, const cache::Batch& batch,
                                    const cache::KvPlan& plan, ForwardContext& ctx) {
  const int64_t n = batch.size();
  ForwardInputs in;
  in.n_tokens = n;
  in.tokens = ctx.upload_i32(batch.tokens);
  in.pos = ctx.upload_i32(batch.pos);
  if (cfg.rope.mode == RopeMode::kMrope || cfg.rope.mode == RopeMode::kImrope) {
    std::vector<int32_t> sections(static_cast<size_t>(4 * n), 0);
    std::copy(batch.pos.begin(), batch.pos.end(), sections.begin());
    std::copy(batch.pos.begin(), batch.pos.end(), sections.begin() + n);
    std::copy(batch.pos.begin(), batch.pos.end(), sections.begin() + 2 * n);
    in.pos_sections = ctx.upload_i32(sections);
  }
  in.seq_idx = ctx.upload_i32(plan.seq_idx);
  in.slots = ctx.upload_i32(plan.slots);
  in.kv_len = ctx.upload_i32(plan.kv_len);
  if (!plan.block_table.empty()) {
    in.block_table = reshape(ctx.upload_i32(plan.block_table),
                             {plan.max_blocks, static_cast<int64_t>(plan.kv_len.size()), 1, 1});
  }
  in.windowed.clear();
  for (const cache::KvPagePlan& w : plan.windowed) {
    in.windowed.push_back(
        {ctx.upload_i32(w.slots),
         reshape(ctx.upload_i32(w.block_table),
                 {w.max_blocks, static_cast<int64_t>(plan.kv_len.size()), 1, 1})});
  }
  in.plan = &plan;
  in.n_outputs = batch.n_outputs();
  in.all_outputs = in.n_outputs == n;
  std::vector<int32_t> out_ids;
  out_ids.reserve(static_cast<size_t>(in.n_outputs));
  for (int64_t i = 0; i < n; ++i) {
    if (batch.output[static_cast<size_t>(i)] != 0) out_ids.push_back(static_cast<int32_t>(i));
  }
  if (out_ids.empty()) out_ids.push_back(0);
  in.out_ids = ctx.upload_i32(out_ids);
  in.out_ids.ne[0] = in.n_outputs;
  return in;
}

Result<std::unique_ptr<cache::KvCache>> Model::make_cache(
    const cache::KvCacheOptions& options) const {
  return cache::create_kv_cache(config_.cache_geometry(), options);
}

Result<TensorView> Model::forward(const cache::Batch& batch, cache::KvCache& cache,
                                  ForwardContext& ctx) const {
  if (config_.is_embedding()) {
    return unsupported(
        "forward: '{}' is an embedding model: it has no LM head to generate text with "
        "(compute embeddings instead)",
        config_.arch);
  }
  return run(batch, cache, ctx, config_.n_vocab);
}

Result<TensorView> Model::embed(const cache::Batch& batch, cache::KvCache& cache,
                                ForwardContext& ctx) const {
  if (!config_.is_embedding()) {
    return unsupported("embed: '{}' is not an embedding model (folio computes embeddings with {})",
                       config_.arch, "bert, nomic-bert");
  }
  if (!config_.causal_attn) {
    // Earlier tokens would not see this batch's: a sequence comes whole.
    for (int32_t seq : batch.seq_idx) {
      if (cache.has_sequence(seq) && cache.seq_len(seq) > 0) {
        return invalid_argument(
            "embed: sequence {} already holds {} positions; with non-causal attention a "
            "sequence is fed whole in one batch",
            seq, cache.seq_len(seq));
      }
    }
  }
  return run(batch, cache, ctx, config_.n_embd);
}

Result<TensorView> Model::run(const cache::Batch& batch, cache::KvCache& cache, ForwardContext& ctx,
                              int64_t width) const {
  FOLIO_RETURN_IF_ERROR(check_batch(batch, config_.n_vocab));
  if (cache.n_layer() != config_.n_layer_kv()) {
    return invalid_argument("forward: KV cache has {} layers, the model {}", cache.n_layer(),
                            config_.n_layer_kv());
  }
  cache::KvPlan& plan = ctx.kv_plan();
  FOLIO_RETURN_IF_ERROR(cache.plan(batch, plan));
  cache.prepare(plan);

  ctx.begin();
  // A step of one token per sequence (decode) repeats with other values:
  // a device may record it once and replay it (Backend::set_replayable).
  {
    std::vector<int32_t> seqs = batch.seq_idx;
    std::sort(seqs.begin(), seqs.end());
    ctx.set_replayable(std::adjacent_find(seqs.begin(), seqs.end()) == seqs.end());
  }
  ForwardInputs in = upload_forward_inputs(config_, batch, plan, ctx);
  TensorView out = config_.family->forward(config_, weights_, in, cache, ctx);
  // The one wait of a step on a device: the output rows come back (or, with
  // none to sample, the work is run to its end so kernel errors surface).
  Result<TensorView> host_out = in.n_outputs > 0 ? ctx.to_host(out) : Result<TensorView>(out);
  if (in.n_outputs == 0) (void)ctx.sync();
  HiddenStates* sink = ctx.hidden_sink();
  Result<TensorView> hidden = TensorView();
  if (sink != nullptr && !ctx.final_hidden().empty()) hidden = ctx.to_host(ctx.final_hidden());
  ctx.set_replayable(false);
  if (!ctx.ok()) {
    cache.discard(plan);
    return ctx.status();
  }
  cache.apply(plan);
  if (sink != nullptr && hidden.ok() && !hidden->empty()) sink->record(batch, *hidden);
  if (in.n_outputs == 0) return TensorView::contiguous(nullptr, DType::F32, {width, 0});
  return *host_out;
}

}  // namespace folio::model
