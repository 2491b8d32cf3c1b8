#include "engine/offline_batch.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>

#include "cache/kv_cache_manager.h"

namespace folio {

Result<BatchOutput> run_batch(const model::Model& model, const tokenizer::Tokenizer& tok,
                              model::ForwardContext& ctx, cache::KvCache& cache,
                              std::span<const std::vector<int32_t>> prompts,
                              const SamplingParams& params, SchedulerOptions options,
                              bool ignore_eos, std::span<const std::string> labels) {
  if (prompts.empty()) return invalid_argument("no prompts");
  const auto label = [&](size_t i) {
    return i < labels.size() ? labels[i] : fmt::format("prompt {}", i);
  };
  options.max_waiting = std::max<int64_t>(options.max_waiting, static_cast<int64_t>(prompts.size()));
  BatchOutput out;
  out.results.resize(prompts.size());
  std::mutex mu;  // results are written on the step thread, read here after wait_idle()
  Status failure;

  const auto t0 = std::chrono::steady_clock::now();
  Scheduler sched(model, tok, ctx, cache, options);
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest req;
    req.prompt = prompts[i];
    req.params = params;
    req.ignore_eos = ignore_eos;
    BatchSequenceResult* r = &out.results[i];
    r->prompt_tokens = static_cast<int64_t>(prompts[i].size());
    RequestCallbacks cb;
    cb.on_token = [r, &mu](const TokenEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      r->tokens.push_back(ev.token.token);
      r->text += ev.text;
    };
    cb.on_done = [r, context = label(i), &mu, &failure](const RequestResult& res) {
      std::lock_guard<std::mutex> lock(mu);
      if (!res.status.ok() && failure.ok()) failure = res.status.with_context(context);
      r->cached_prompt_tokens = res.cached_prompt_tokens;
      if (!res.choices.empty()) {
        r->stop = res.choices[0].stop;
        r->text += res.choices[0].tail;
      }
    };
    Result<uint64_t> id = sched.submit(std::move(req), std::move(cb));
    if (!id.ok()) return id.status().with_context(label(i));
  }
  FOLIO_RETURN_IF_ERROR(sched.start());
  sched.wait_idle();
  const ServingMetrics::Snapshot m = sched.metrics();
  sched.stop();

  std::lock_guard<std::mutex> lock(mu);
  if (!failure.ok()) return failure;
  BatchSummary& s = out.summary;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.prefill_tokens_computed = static_cast<int64_t>(m.prompt_tokens);
  s.generated_tokens = static_cast<int64_t>(m.generated_tokens);
  s.steps = static_cast<int64_t>(m.steps);
  s.preemptions = static_cast<int64_t>(m.preemptions);
  s.draft_tokens = static_cast<int64_t>(m.spec.draft_tokens);
  s.accepted_draft_tokens = static_cast<int64_t>(m.spec.accepted_tokens);
  if (const cache::KvCacheManager* blocks = cache.block_manager()) {
    s.blocks_total = blocks->pool().n_usable();
    s.blocks_peak = blocks->peak_used();
    s.blocks_leaked = blocks->pool().n_used();
  }
  return out;
}

}  // namespace folio
