// SequenceState: one generating sequence as the Scheduler tracks it across
// steps and preemptions, so it ends a sequence exactly as Generator does.
//
// `tokens` is what the sequence's cache must hold before its next sample:
// the prompt, then every generated token. Between admissions the sequence
// owns no cache sequence (seq == -1); when admitted again it refills what the
// cache no longer holds (prefix cache first), and its last token's logits
// give the next sample. Sampler, detokenizer and stop-string state live here
// and carry over, so a preempted sequence continues exactly as an
// uninterrupted one.
//
//   admitted (seq >= 0, decoding = false)
//     --fill tokens[held..] in chunks; the last chunk wants logits-->
//   sample -> accept(): end of generation / stop string / length / context
//     --decoding = true: one token per step--> sample -> accept() ...
//   preempted: seq = -1, decoding = false, back to the queue with `tokens`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/batch.h"
#include "engine/generator.h"
#include "engine/grammar_constraint.h"
#include "engine/reasoning_budget.h"
#include "engine/sampler.h"
#include "engine/speculative_options.h"
#include "engine/text_stream.h"
#include "tokenizer/tokenizer.h"

namespace folio {

// When a sequence's generation ends, besides end of generation and stop
// strings.
struct GenerationLimits {
  int64_t max_tokens = -1;  // generated tokens; < 0: no limit
  int64_t n_ctx = 0;        // positions one cache sequence holds (prompt + generated)
  bool ignore_eos = false;  // keep going past end-of-generation tokens
};

// What one sampled token did to a sequence.
struct AcceptedToken {
  bool kept = false;               // false: an end-of-generation token (not part of the output)
  std::string text;                // text that became final with it (may be empty)
  std::optional<StopReason> stop;  // generation ends here
};

class SequenceState {
 public:
  // The sampler's penalty window starts with the prompt (as Generator's).
  // `tok` must outlive this.
  SequenceState(std::vector<int32_t> prompt, Sampler sampler, const tokenizer::Tokenizer* tok,
                bool render_special, std::vector<std::string> stops);

  // From now on the output must follow this grammar: sample() draws only
  // tokens it allows, accept() advances it.
  void constrain(std::unique_ptr<GrammarConstraint> grammar) { grammar_ = std::move(grammar); }
  // From now on reasoning blocks get this token budget
  // (engine/reasoning_budget.h): once it is spent, sample() draws the
  // block's closing tokens one by one (through the sampler, with every
  // other token masked; where an output grammar refuses one, the block is
  // left to the model).
  void limit_reasoning(std::shared_ptr<const ReasoningBudgetSpec> spec) {
    budget_.emplace(std::move(spec));
  }
  const ReasoningBudget* reasoning_budget() const { return budget_ ? &*budget_ : nullptr; }
  // How many tokens may follow before the reasoning budget forces one
  // (-1: no limit); speculative drafts stop there.
  int64_t free_tokens() const { return budget_ ? budget_->free_tokens() : -1; }

  // Runs the sampler on this sequence's logits row ([n_vocab]).
  Result<SampledToken> sample(const float* logits_row, SamplerWorkspace& ws);
  // Applies a sampled token: end of generation ends the sequence unless
  // limits.ignore_eos; otherwise the token is kept (tokens, sampler window,
  // text) and stop strings, context and length are checked, in Generator's
  // order.
  AcceptedToken accept(int32_t id, const tokenizer::Vocab& vocab, const GenerationLimits& limits);
  // Generation ended for `*stop` (not a stop string): returns the held-back
  // text; *stop becomes kStopString when that tail completes a stop string.
  std::string finish(StopReason* stop);
  // Generated tokens known to be part of the output (TextStream::kept_tokens):
  // all of them once finished without a stop string, those before the cut
  // after one.
  int64_t kept_tokens() const { return text_.kept_tokens(); }

  // Adds tokens [held, held + n) at their positions to `batch` as cache
  // sequence `seq`; the last known token wants logits. Positions past the
  // known tokens take `draft`'s tokens, as unverified tokens that want
  // logits too (held + n <= tokens.size() + draft.size()). Returns the
  // logits rows it asked for: 0, 1, or 1 + the drafts it added.
  int64_t add_to_batch(cache::Batch& batch, int64_t held, int64_t n) const;

  // Admission / release of the cache sequence.
  void admit(int cache_seq, uint64_t order) {
    seq = cache_seq;
    admitted = order;
    decoding = false;
    ever_admitted = true;
  }
  void release() {
    seq = -1;
    decoding = false;
  }
  bool running() const { return seq >= 0; }

  std::vector<int32_t> tokens;  // prompt, then generated tokens
  size_t n_prompt = 0;
  int64_t n_generated = 0;  // kept tokens (tokens.size() - n_prompt)
  int seq = -1;             // cache sequence while running
  uint64_t admitted = 0;    // admission order (preemption takes the newest)
  bool ever_admitted = false;
  bool decoding = false;  // sampled since admission: the next piece is one token
  // Speculative decoding: the tokens proposed to follow `tokens` this step
  // (empty: none), and whether and how well this sequence speculates.
  std::vector<int32_t> draft;
  SpeculationTracker spec;

 private:
  Sampler sampler_;
  TextStream text_;
  const tokenizer::Tokenizer* tok_;
  std::unique_ptr<GrammarConstraint> grammar_;  // null: unconstrained
  std::optional<ReasoningBudget> budget_;       // unset: reasoning unlimited
  std::vector<uint64_t> mask_;                  // allowed tokens (grammar_, budget_), scratch
};

}  // namespace folio
