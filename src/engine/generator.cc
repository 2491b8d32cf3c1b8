#include "engine/generator.h"

#include <algorithm>
#include <chrono>

#include "engine/text_stream.h"

namespace folio {

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
  bool cancelled = false;
  auto emit = [&](const std::string& text) {
    if (!text.empty() && !cancelled && !on_text(text)) cancelled = true;
  };
  for (;;) {
    if (options.n_predict >= 0 && stats.n_generated >= options.n_predict) {
      stats.stop = StopReason::kLength;
      break;
    }
    if (params.max_tokens >= 0 && stats.n_generated >= params.max_tokens) {
      stats.stop = StopReason::kLength;
      break;
    }
    const float* row = static_cast<const float*>(logits.data);
    FOLIO_ASSIGN_OR_RETURN(SampledToken st,
                           sampler.sample(std::span<const float>(row, static_cast<size_t>(n_vocab)), workspace_));
    const int32_t id = st.token;
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
    if (static_cast<int64_t>(history_.size()) + 1 >= cache_.n_ctx()) {
      stats.stop = StopReason::kContextFull;
      break;
    }
    const int32_t one[1] = {id};
    FOLIO_ASSIGN_OR_RETURN(logits, feed(one, true));
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
