#include "engine/sequence_state.h"

#include <algorithm>
#include <span>

#include <fmt/format.h>

#include "core/check.h"

namespace folio {

SequenceState::SequenceState(std::vector<int32_t> prompt, Sampler sampler,
                             const tokenizer::Tokenizer* tok, bool render_special,
                             std::vector<std::string> stops)
    : tokens(std::move(prompt)),
      n_prompt(tokens.size()),
      sampler_(std::move(sampler)),
      text_(tok, render_special, std::move(stops)),
      tok_(tok) {
  sampler_.accept(std::span<const int32_t>(tokens));
}

Result<SampledToken> SequenceState::sample(const float* logits_row, SamplerWorkspace& ws) {
  if (grammar_) grammar_->fill_mask(&mask_);
  bool masked = grammar_ != nullptr;
  const int32_t forced = budget_ ? budget_->forced_token() : -1;
  if (forced >= 0) {
    const auto word = static_cast<size_t>(forced / 64);
    const uint64_t bit = uint64_t{1} << (forced % 64);
    if (grammar_ && (word >= mask_.size() || (mask_[word] & bit) == 0)) {
      budget_->abandon();
    } else {
      mask_.assign(static_cast<size_t>((sampler_.n_vocab() + 63) / 64), 0);
      mask_[word] = bit;
      masked = true;
    }
  }
  Result<SampledToken> t = sampler_.sample(
      std::span<const float>(logits_row, static_cast<size_t>(sampler_.n_vocab())), ws,
      masked ? &mask_ : nullptr);
  if (!t.ok() && budget_ && budget_->forced_token() >= 0) {
    return t.status().with_context(
        fmt::format("forcing token {} to end the reasoning block", budget_->forced_token()));
  }
  return t;
}

AcceptedToken SequenceState::accept(int32_t id, const tokenizer::Vocab& vocab,
                                    const GenerationLimits& limits) {
  AcceptedToken out;
  if (!limits.ignore_eos && vocab.is_eog(id)) {
    out.stop = StopReason::kEndOfGeneration;
    return out;
  }
  if (grammar_ && !grammar_->accept(id)) {
    // Only a token outside the grammar's mask can get here (a sampler bug).
    out.stop = StopReason::kEndOfGeneration;
    return out;
  }
  out.kept = true;
  sampler_.accept(id);
  tokens.push_back(id);
  ++n_generated;
  if (budget_) budget_->accept(id, tok_->piece(id, /*render_special=*/true));
  StopMatcher::Step step = text_.push(id);
  out.text = std::move(step.text);
  if (step.stopped) {
    out.stop = StopReason::kStopString;
  } else if (static_cast<int64_t>(tokens.size()) >= limits.n_ctx) {
    out.stop = StopReason::kContextFull;
  } else if (limits.max_tokens >= 0 && n_generated >= limits.max_tokens) {
    out.stop = StopReason::kLength;
  }
  return out;
}

std::string SequenceState::finish(StopReason* stop) {
  bool stopped = false;
  std::string tail = text_.finish(&stopped);
  if (stopped) *stop = StopReason::kStopString;
  return tail;
}

int64_t SequenceState::add_to_batch(cache::Batch& batch, int64_t held, int64_t n) const {
  const auto known = static_cast<int64_t>(tokens.size());
  FOLIO_CHECK(held + n <= known + static_cast<int64_t>(draft.size()));
  int64_t rows = 0;
  for (int64_t i = held; i < held + n; ++i) {
    if (i < known) {
      const bool want = i + 1 == known;
      batch.add(tokens[static_cast<size_t>(i)], static_cast<int32_t>(i), seq, want);
      rows += want ? 1 : 0;
    } else {  // a draft token: its logits verify the next one
      batch.add(draft[static_cast<size_t>(i - known)], static_cast<int32_t>(i), seq, true, true);
      ++rows;
    }
  }
  return rows;
}

}  // namespace folio
