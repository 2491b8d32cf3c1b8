// ReasoningBudget: one sequence's token budget for a reasoning block
// (`--reasoning-budget N`, a request's reasoning_budget_tokens). The block
// is found in the generated text: it opens where the open marker's bytes
// appear (or at the first token, when the prompt already opened it) and
// closes where the close marker's bytes appear, whatever tokens spell them.
// Inside it every generated token counts; once `tokens` of them are
// generated without the block closing, the next tokens are forced to be
// the closing tokens (the close marker tokenized with the model's
// vocabulary), one per draw, and then generation is free again (the
// answer). A block that opens again later gets a budget of its own.
//
//   outside --open marker--> counting --budget spent--> forcing --> done
//                               |  (mid UTF-8 character: waits for its end)
//                               +--close marker--> done --open marker--> counting
//
// State moves only on accepted tokens (accept()), so preemption and
// speculative verification, which sample and accept token by token, leave
// it consistent. Tokens are read as their bytes with control tokens as
// their text (markers such as Harmony's <|end|> are control tokens).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace folio {

// What a request asks: shared by its choices, immutable.
struct ReasoningBudgetSpec {
  int32_t tokens = 0;  // tokens allowed in one block; >= 0
  std::string open;    // text that opens the block
  std::string close;   // text that closes it
  // The close marker's tokens, forced when the budget is spent; non-empty.
  std::vector<int32_t> forced;
  bool starts_inside = false;  // the prompt opened the block: the reply starts in it
};

class ReasoningBudget {
 public:
  enum class State { kOutside, kCounting, kWaitingUtf8, kForcing, kDone };

  explicit ReasoningBudget(std::shared_ptr<const ReasoningBudgetSpec> spec);

  // The token the next draw must yield, or -1 (not forcing).
  int32_t forced_token() const;
  // Advances by an accepted token whose bytes are `bytes`.
  void accept(int32_t token, std::string_view bytes);
  // The forced token cannot be drawn (an output grammar refuses it): the
  // block is left to the model from here on.
  void abandon() { state_ = State::kDone; }

  State state() const { return state_; }
  // Tokens counted in the current block.
  int32_t used() const { return used_; }
  // How many more tokens may be drawn freely before a forced one: the
  // budget's remainder while counting, 0 while forcing or waiting to force,
  // -1 (no limit) otherwise. Speculative drafts stop there.
  int64_t free_tokens() const;

 private:
  // Whether `marker` ends in window_ past its first `old_size` bytes (in
  // the token just appended).
  bool ends_marker(std::string_view marker, size_t old_size) const;
  void open_block();
  void start_forcing();

  std::shared_ptr<const ReasoningBudgetSpec> spec_;
  State state_ = State::kOutside;
  int32_t used_ = 0;
  size_t force_pos_ = 0;  // next index into spec_->forced
  int utf8_pending_ = 0;  // continuation bytes the block's text still owes
  std::string window_;    // the last bytes generated, enough to hold a marker
};

}  // namespace folio
