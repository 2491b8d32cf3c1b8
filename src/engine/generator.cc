#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "engine/text_stream.h"

namespace folio {

namespace {
constexpr uint64_t kSpecId = 0;  // the one sequence's id for the proposer
}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kLength: return "length";
    case StopReason::kEndOfGeneration: return "eog";
    case StopReason::kStopString: return "stop";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kContextFull: return "context_full";
  }
  return "?";
}

Generator::Generator(const model::Model& model, const tokenizer::Tokenizer& tok,
                     model::ForwardContext& ctx, cache::KvCache& cache, int seq)
    : model_(model), tok_(tok), ctx_(ctx), cache_(cache), seq_(seq) {}

void Generator::reset() {
  history_.clear();
  (void)cache_.truncate(seq_, 0);
}

Result<TensorView> Generator::feed(std::span<const int32_t> tokens, bool want_logits) {
  batch_.clear();
  const int32_t start = static_cast<int32_t>(history_.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch_.add(tokens[i], start + static_cast<int32_t>(i), seq_, want_logits && i + 1 == tokens.size());
  }
  FOLIO_ASSIGN_OR_RETURN(TensorView logits, model_.forward(batch_, cache_, ctx_));
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  return logits;
}

Result<TensorView> Generator::feed_draft(int32_t id, std::span<const int32_t> draft) {
  batch_.clear();
  const auto start = static_cast<int32_t>(history_.size());
  batch_.add(id, start, seq_, true);
  for (size_t i = 0; i < draft.size(); ++i)
    batch_.add(draft[i], start + 1 + static_cast<int32_t>(i), seq_, true, true);
  FOLIO_ASSIGN_OR_RETURN(TensorView logits, model_.forward(batch_, cache_, ctx_));
  history_.push_back(id);
  history_.insert(history_.end(), draft.begin(), draft.end());
  return logits;
}

Status Generator::settle(int64_t n_draft, int64_t accepted) {
  const int64_t keep = static_cast<int64_t>(history_.size()) - n_draft + accepted;
  history_.resize(static_cast<size_t>(keep));
  return cache_.verify(seq_, keep);
}

Result<GenerateStats> Generator::generate(std::span<const int32_t> prompt,
                                          const SamplingParams& params,
                                          const GenerateOptions& options,
                                          const std::function<bool(std::string_view)>& on_text) {
  using Clock = std::chrono::steady_clock;
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  if (prompt.empty()) return invalid_argument("empty prompt: nothing to continue");
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= n_vocab) {
      return invalid_argument("prompt token {} at index {} outside the vocabulary [0, {})", prompt[i], i,
                              n_vocab);
    }
  }
  if (static_cast<int64_t>(prompt.size()) >= cache_.n_ctx()) {
    return make_error(StatusCode::kOutOfRange, "prompt of {} tokens does not fit the context of {}",
                      prompt.size(), cache_.n_ctx());
  }
  FOLIO_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(params, n_vocab));
  if (options.n_batch < 1) return invalid_argument("n_batch must be >= 1, got {}", options.n_batch);
  std::unique_ptr<DraftProposer> proposer;
  if (options.spec.enabled()) {
    FOLIO_RETURN_IF_ERROR(options.spec.validate());
    FOLIO_ASSIGN_OR_RETURN(proposer, make_proposer(options.spec));
    // This call's sequence (a draft model's cache forgets it when the
    // proposer goes, at the end of the call).
    if (proposer != nullptr && !proposer->begin(kSpecId).ok()) proposer.reset();
  }

  GenerateStats stats;
  stats.seed = sampler.seed();
  // Reuse the cached prefix; at least the last prompt token is recomputed so
  // its logits exist.
  size_t keep = 0;
  while (keep < history_.size() && keep + 1 < prompt.size() && history_[keep] == prompt[keep]) ++keep;
  if (keep < history_.size()) {
    // Caches with recurrent state (hybrid models) truncate only to some lengths.
    keep = static_cast<size_t>(cache_.truncation_point(seq_, static_cast<int64_t>(keep)));
    FOLIO_RETURN_IF_ERROR(cache_.truncate(seq_, static_cast<int64_t>(keep)));
    history_.resize(keep);
  }
  stats.n_prompt_cached = static_cast<int64_t>(keep);
  stats.n_prompt = static_cast<int64_t>(prompt.size() - keep);
  sampler.accept(prompt);

  const auto t0 = Clock::now();
  TensorView logits;
  for (size_t b = keep; b < prompt.size(); b += static_cast<size_t>(options.n_batch)) {
    const size_t e = std::min(prompt.size(), b + static_cast<size_t>(options.n_batch));
    FOLIO_ASSIGN_OR_RETURN(logits, feed(prompt.subspan(b, e - b), e == prompt.size()));
  }
  const auto t1 = Clock::now();
  stats.prompt_seconds = std::chrono::duration<double>(t1 - t0).count();

  TextStream text(&tok_, options.render_special, params.stop);
  // The rows of `logits` still to sample: row `row` of 1 + n_draft (the
  // last fed token's, then each draft's).
  int64_t row = 0, n_draft = 0;
  SpeculationTracker tracker;
  std::vector<int32_t> context;  // history_ + the sampled token: what the proposer continues
  // However the loop ends, the cache keeps only verified positions (the
  // proposer, declared before, goes after).
  struct Settle {
    Generator* g;
    const int64_t* n_draft;
    const int64_t* row;
    ~Settle() {
      if (*n_draft > 0) (void)g->settle(*n_draft, *row);
    }
  } settle_at_exit{this, &n_draft, &row};
  bool cancelled = false;
  auto emit = [&](const std::string& text) {
    if (!text.empty() && !cancelled && !on_text(text)) cancelled = true;
  };
  // The token sampled in the loop's last pass (-1: it ended before sampling).
  int32_t sampled = -1;
  for (;;) {
    sampled = -1;
    if (options.n_predict >= 0 && stats.n_generated >= options.n_predict) {
      stats.stop = StopReason::kLength;
      break;
    }
    if (params.max_tokens >= 0 && stats.n_generated >= params.max_tokens) {
      stats.stop = StopReason::kLength;
      break;
    }
    const float* lp = logits.row<const float>(row);
    FOLIO_ASSIGN_OR_RETURN(SampledToken st,
                           sampler.sample(std::span<const float>(lp, static_cast<size_t>(n_vocab)), workspace_));
    const int32_t id = st.token;
    sampled = id;
    if (!options.ignore_eos && tok_.vocab().is_eog(id)) {
      stats.stop = StopReason::kEndOfGeneration;
      break;
    }
    sampler.accept(id);
    stats.tokens.push_back(id);
    ++stats.n_generated;
    StopMatcher::Step step = text.push(id);
    emit(step.text);
    if (step.stopped) {
      stats.stop = StopReason::kStopString;
      break;
    }
    if (cancelled) {
      stats.stop = StopReason::kCancelled;
      break;
    }
    // Positions a run without speculation would hold now (the fed token
    // and the drafts confirmed so far).
    const auto held = static_cast<int64_t>(history_.size()) - n_draft + row;
    if (held + 1 >= cache_.n_ctx()) {
      stats.stop = StopReason::kContextFull;
      break;
    }
    // A draft the sampled token confirms: its logits are already computed.
    if (row < n_draft && id == draft_[static_cast<size_t>(row)]) {
      ++row;
      continue;
    }
    if (n_draft > 0) {  // the verification ends here
      stats.spec.record(static_cast<int>(n_draft), static_cast<int>(row));
      tracker.record(static_cast<int>(n_draft), static_cast<int>(row), options.spec.min_accept);
      const int64_t d = n_draft;
      n_draft = 0;
      FOLIO_RETURN_IF_ERROR(settle(d, row));
      proposer->accept(kSpecId, static_cast<int>(row));
    }
    row = 0;
    // Drafts stay below n_ctx and within the tokens still to generate.
    int64_t k = proposer != nullptr && tracker.take_step() ? options.spec.draft_max : 0;
    k = std::min(k, cache_.n_ctx() - 1 - (held + 1));
    if (options.n_predict >= 0) k = std::min(k, options.n_predict - stats.n_generated - 1);
    if (params.max_tokens >= 0) k = std::min(k, params.max_tokens - stats.n_generated - 1);
    draft_.clear();
    if (k >= std::max(1, options.spec.draft_min)) {
      context.assign(history_.begin(), history_.end());
      context.push_back(id);
      const DraftRequest req{kSpecId, context, static_cast<int>(k), seq_};
      // A proposer that fails proposes nothing this step.
      if (!proposer->propose(std::span<const DraftRequest>(&req, 1),
                             std::span<std::vector<int32_t>>(&draft_, 1))
               .ok() ||
          static_cast<int64_t>(draft_.size()) < options.spec.draft_min) {
        draft_.clear();
      }
    }
    if (draft_.empty()) {
      const int32_t one[1] = {id};
      FOLIO_ASSIGN_OR_RETURN(logits, feed(one, true));
    } else {
      // A cache short of room for the drafts (a hybrid cache's free state
      // slots for its snapshots) runs the step without them.
      Result<TensorView> drafted = feed_draft(id, draft_);
      if (drafted.ok()) {
        logits = *drafted;
        n_draft = static_cast<int64_t>(draft_.size());
      } else if (drafted.status().code() == StatusCode::kResourceExhausted) {
        draft_.clear();
        const int32_t one[1] = {id};
        FOLIO_ASSIGN_OR_RETURN(logits, feed(one, true));
      } else {
        return drafted.status();
      }
    }
  }
  // A verification the run ended in: the token sampled last confirms its
  // draft too when they are equal (an end-of-generation token, the token
  // that completed a stop string), as the scheduler counts it.
  if (n_draft > 0) {
    const bool confirmed = sampled >= 0 && row < n_draft && sampled == draft_[static_cast<size_t>(row)];
    stats.spec.record(static_cast<int>(n_draft), static_cast<int>(row + (confirmed ? 1 : 0)));
  }
  if (stats.stop != StopReason::kStopString) {
    bool stopped = false;
    emit(text.finish(&stopped));
    if (stopped) stats.stop = StopReason::kStopString;
  }
  stats.gen_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return stats;
}

}  // namespace folio
