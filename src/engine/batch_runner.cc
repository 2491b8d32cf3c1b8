#include "engine/batch_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>

#include "cache/batch.h"
#include "engine/sequence_state.h"

namespace folio {

BatchRunner::BatchRunner(const model::Model& model, const tokenizer::Tokenizer& tok,
                         model::ForwardContext& ctx, cache::KvCache& cache)
    : model_(model), tok_(tok), ctx_(ctx), cache_(cache) {}

Result<BatchOutput> BatchRunner::run(std::span<const std::vector<int32_t>> prompts,
                                     const SamplingParams& params, const BatchOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  if (options.parallel < 1)
    return invalid_argument("parallel must be >= 1, got {}", options.parallel);
  if (options.n_batch < 1) return invalid_argument("n_batch must be >= 1, got {}", options.n_batch);
  for (size_t p = 0; p < prompts.size(); ++p) {
    if (prompts[p].empty()) return invalid_argument("prompt {} is empty: nothing to continue", p);
    for (size_t i = 0; i < prompts[p].size(); ++i) {
      if (prompts[p][i] < 0 || prompts[p][i] >= n_vocab) {
        return invalid_argument("prompt {}: token {} at index {} outside the vocabulary [0, {})", p,
                                prompts[p][i], i, n_vocab);
      }
    }
    if (static_cast<int64_t>(prompts[p].size()) >= cache_.n_ctx()) {
      return make_error(StatusCode::kOutOfRange,
                        "prompt {} of {} tokens does not fit the context of {}", p,
                        prompts[p].size(), cache_.n_ctx());
    }
  }

  BatchOutput out;
  out.results.resize(prompts.size());
  std::vector<SequenceState> reqs;
  reqs.reserve(prompts.size());
  std::deque<size_t> waiting;
  GenerationLimits limits;
  limits.n_ctx = cache_.n_ctx();
  limits.ignore_eos = options.ignore_eos;
  limits.max_tokens = options.n_predict;
  if (params.max_tokens >= 0 && (limits.max_tokens < 0 || params.max_tokens < limits.max_tokens))
    limits.max_tokens = params.max_tokens;
  for (size_t p = 0; p < prompts.size(); ++p) {
    FOLIO_ASSIGN_OR_RETURN(Sampler s, Sampler::create(params, n_vocab));
    reqs.emplace_back(prompts[p], std::move(s), &tok_, options.render_special, params.stop);
    out.results[p].prompt_tokens = static_cast<int64_t>(prompts[p].size());
    if (options.n_predict == 0 || params.max_tokens == 0) continue;  // nothing to generate
    waiting.push_back(p);
  }

  std::vector<size_t> running;  // in admission order
  // Removes every running sequence (error paths), so the cache is left empty.
  auto release_all = [&] {
    for (size_t r : running) (void)cache_.remove_sequence(reqs[r].seq);
    running.clear();
  };
  auto end_request = [&](size_t r, StopReason stop) -> Status {
    SequenceState& q = reqs[r];
    BatchSequenceResult& res = out.results[r];
    if (stop != StopReason::kStopString) res.text += q.finish(&stop);
    res.stop = stop;
    res.tokens.assign(q.tokens.begin() + static_cast<std::ptrdiff_t>(q.n_prompt), q.tokens.end());
    res.generated_tokens = q.n_generated;
    running.erase(std::find(running.begin(), running.end(), r));
    const Status st = cache_.remove_sequence(q.seq);
    q.release();
    return st;
  };

  const int block_size = cache_.block_size();
  if (cache_.block_manager() == nullptr) {
    return invalid_argument("batch: the KV cache has no block pool (a paged cache is needed)");
  }
  const cache::BlockPool& pool = cache_.block_manager()->pool();
  BatchSummary& sum = out.summary;
  cache::Batch batch;
  std::vector<std::pair<size_t, int64_t>> outputs;  // (request, logits row)
  uint64_t n_admitted = 0;
  bool admit = true;  // not right after a preemption (the preempted one would come straight back)
  while (!waiting.empty() || !running.empty()) {
    while (admit && running.size() < static_cast<size_t>(options.parallel) && !waiting.empty()) {
      const size_t r = waiting.front();
      SequenceState& q = reqs[r];
      // Wait for a sequence still filling a shared prefix: its blocks become
      // cached when its forward is applied.
      bool share_pending = false;
      for (size_t o : running) {
        if (!reqs[o].decoding &&
            common_prefix(reqs[o].tokens, q.tokens) >= static_cast<size_t>(block_size)) {
          share_pending = true;
        }
      }
      if (share_pending) break;
      Result<int> seq = cache_.add_sequence();
      if (seq.status().code() == StatusCode::kResourceExhausted && !running.empty()) break;
      if (!seq.ok()) {
        release_all();
        return seq.status().with_context("batch admission");
      }
      waiting.pop_front();
      const bool first_admission = !q.ever_admitted;
      q.admit(*seq, n_admitted++);
      running.push_back(r);
      Result<int64_t> cached = cache_.take_cached_prefix(q.seq, q.tokens);
      if (!cached.ok()) {
        release_all();
        return cached.status();
      }
      if (first_admission)
        out.results[r].cached_prompt_tokens = std::min<int64_t>(*cached, q.n_prompt);
    }

    // One batch: a decode token per decoding sequence, prefill within budget.
    batch.clear();
    outputs.clear();
    int64_t budget = options.n_batch;
    int64_t n_fill = 0, n_decode = 0;
    for (size_t r : running) {
      const SequenceState& q = reqs[r];
      const int64_t len = cache_.seq_len(q.seq);
      int64_t n = static_cast<int64_t>(q.tokens.size()) - len;
      if (q.decoding) {
        ++n_decode;
      } else {
        n = std::min(n, std::max<int64_t>(budget, 0));
        budget -= n;
        n_fill += n;
      }
      const int64_t row = batch.n_outputs();
      if (q.add_to_batch(batch, len, n)) outputs.emplace_back(r, row);
    }
    if (batch.size() == 0) {  // nothing running: right after a preemption, or stuck
      if (admit) {
        return make_error(StatusCode::kInternal, "batch: {} prompts waiting, none admitted",
                          waiting.size());
      }
      admit = true;
      continue;
    }
    Result<TensorView> logits = model_.forward(batch, cache_, ctx_);
    if (logits.status().code() == StatusCode::kResourceExhausted) {
      if (running.size() <= 1) {
        release_all();
        return logits.status().with_context("the KV pool cannot hold even one sequence");
      }
      const auto newest = std::max_element(running.begin(), running.end(), [&](size_t a, size_t b) {
        return reqs[a].admitted < reqs[b].admitted;
      });
      const size_t r = *newest;
      running.erase(newest);
      Status st = cache_.remove_sequence(reqs[r].seq);
      reqs[r].release();
      if (!st.ok()) {
        release_all();
        return st;
      }
      waiting.push_front(r);
      ++sum.preemptions;
      admit = false;
      continue;
    }
    if (!logits.ok()) {
      release_all();
      return logits.status();
    }
    admit = true;
    ++sum.steps;
    sum.prefill_tokens_computed += n_fill;
    sum.decode_tokens_computed += n_decode;
    sum.blocks_peak = std::max(sum.blocks_peak, pool.n_used());

    for (const auto& [r, row] : outputs) {
      SequenceState& q = reqs[r];
      q.decoding = true;
      Result<SampledToken> st = q.sample(logits->row<const float>(row), workspace_);
      if (!st.ok()) {
        release_all();
        return st.status();
      }
      AcceptedToken acc = q.accept(st->token, tok_.vocab(), limits);
      out.results[r].text += acc.text;
      if (acc.stop) {
        Status s = end_request(r, *acc.stop);
        if (!s.ok()) {
          release_all();
          return s;
        }
      }
    }
  }
  sum.blocks_total = pool.n_usable();
  sum.blocks_leaked = pool.n_used();
  sum.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

}  // namespace folio
