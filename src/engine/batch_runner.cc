#include "engine/batch_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>

#include "engine/stop_matcher.h"
#include "model/batch.h"
#include "engine/text_stream.h"

namespace folio {

namespace {

// One prompt's state across admissions.
struct Request {
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  size_t n_prompt = 0;
  int seq = -1;           // cache sequence while running
  uint64_t admitted = 0;  // admission order (preemption takes the newest)
  bool ever_admitted = false;
  bool decoding = false;  // filled since admission: the next piece is one token
  std::optional<Sampler> sampler;
  std::optional<TextStream> text;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

BatchRunner::BatchRunner(const model::Model& model, const tokenizer::Tokenizer& tok,
                         model::ForwardContext& ctx, model::PagedKvCache& cache)
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
  std::vector<Request> reqs(prompts.size());
  std::deque<size_t> waiting;
  for (size_t p = 0; p < prompts.size(); ++p) {
    Request& r = reqs[p];
    r.tokens = prompts[p];
    r.n_prompt = prompts[p].size();
    FOLIO_ASSIGN_OR_RETURN(Sampler s, Sampler::create(params, n_vocab));
    r.sampler.emplace(std::move(s));
    r.sampler->accept(std::span<const int32_t>(r.tokens));
    r.text.emplace(&tok_, options.render_special, params.stop);
    out.results[p].prompt_tokens = static_cast<int64_t>(r.n_prompt);
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
    Request& q = reqs[r];
    BatchSequenceResult& res = out.results[r];
    if (stop != StopReason::kStopString) {
      bool stopped = false;
      res.text += q.text->finish(&stopped);
      if (stopped) stop = StopReason::kStopString;
    }
    res.stop = stop;
    running.erase(std::find(running.begin(), running.end(), r));
    const Status st = cache_.remove_sequence(q.seq);
    q.seq = -1;
    return st;
  };

  const int block_size = cache_.block_size();
  const cache::BlockPool& pool = cache_.manager().pool();
  BatchSummary& sum = out.summary;
  model::Batch batch;
  std::vector<std::pair<size_t, int64_t>> outputs;  // (request, logits row)
  uint64_t n_admitted = 0;
  bool admit = true;  // not right after a preemption (the preempted one would come straight back)
  while (!waiting.empty() || !running.empty()) {
    while (admit && running.size() < static_cast<size_t>(options.parallel) && !waiting.empty()) {
      const size_t r = waiting.front();
      Request& q = reqs[r];
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
      q.seq = *seq;
      q.admitted = n_admitted++;
      q.decoding = false;
      running.push_back(r);
      Result<int64_t> cached = cache_.take_cached_prefix(q.seq, q.tokens);
      if (!cached.ok()) {
        release_all();
        return cached.status();
      }
      if (!q.ever_admitted)
        out.results[r].cached_prompt_tokens = std::min<int64_t>(*cached, q.n_prompt);
      q.ever_admitted = true;
    }

    // One batch: a decode token per decoding sequence, prefill within budget.
    batch.clear();
    outputs.clear();
    int64_t budget = options.n_batch;
    int64_t n_fill = 0, n_decode = 0;
    for (size_t r : running) {
      const Request& q = reqs[r];
      const auto len = static_cast<size_t>(cache_.seq_len(q.seq));
      size_t end = q.tokens.size();
      if (q.decoding) {
        ++n_decode;
      } else {
        end = std::min(end, len + static_cast<size_t>(std::max<int64_t>(budget, 0)));
        budget -= static_cast<int64_t>(end - len);
        n_fill += static_cast<int64_t>(end - len);
      }
      for (size_t i = len; i < end; ++i) {
        const bool want = i + 1 == q.tokens.size();
        if (want) outputs.emplace_back(r, batch.n_outputs());
        batch.add(q.tokens[i], static_cast<int32_t>(i), q.seq, want);
      }
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
      reqs[r].seq = -1;
      reqs[r].decoding = false;
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
      Request& q = reqs[r];
      BatchSequenceResult& res = out.results[r];
      q.decoding = true;
      const float* lp = logits->row<const float>(row);
      Result<SampledToken> st =
          q.sampler->sample(std::span<const float>(lp, static_cast<size_t>(n_vocab)), workspace_);
      if (!st.ok()) {
        release_all();
        return st.status();
      }
      const int32_t id = st->token;
      std::optional<StopReason> stop;
      if (!options.ignore_eos && tok_.vocab().is_eog(id)) {
        stop = StopReason::kEndOfGeneration;
      } else {
        q.sampler->accept(id);
        q.tokens.push_back(id);
        res.tokens.push_back(id);
        ++res.generated_tokens;
        StopMatcher::Step step = q.text->push(id);
        res.text += step.text;
        if (step.stopped) {
          stop = StopReason::kStopString;
        } else if (static_cast<int64_t>(q.tokens.size()) >= cache_.n_ctx()) {
          stop = StopReason::kContextFull;
        } else if ((options.n_predict >= 0 && res.generated_tokens >= options.n_predict) ||
                   (params.max_tokens >= 0 && res.generated_tokens >= params.max_tokens)) {
          stop = StopReason::kLength;
        }
      }
      if (stop) {
        Status s = end_request(r, *stop);
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
