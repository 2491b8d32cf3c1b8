// StackSet: the state of a grammar match, as a set of pushdown stacks.
//
// A grammar may be ambiguous where the input so far is concerned (`a* b |
// a c`: after "a" either branch is alive), so the state is every stack that
// is consistent with the input. Each stack is a list of positions into the
// CompiledGrammar's symbols, bottom first: the top position holds the
// terminal to read next, the others are return positions. The empty stack
// means the root rule is complete (the input may end here).
//
// Closure. A stack never has a rule reference or an End on top: after a
// terminal is read, the position moves on and is expanded until every
// resulting stack has a terminal on top (a rule reference pushes the return
// position and forks into the rule's alternatives; End pops). A rule
// reference that is the last symbol of its alternative pushes nothing (tail
// call), so `x*` (R ::= x R |) reads any number of x at constant depth.
// validate_grammar() rules out left recursion, so closure terminates.
//
// Canonical form: the stacks sorted and deduplicated, stored back to back as
// [len, pos_0, ..., pos_len-1] in one vector, so two equal states compare
// and hash equal and copying a state is one vector copy.
//
// Limits: more than kMaxStacks stacks after a step (a pathologically
// ambiguous grammar) rejects that step; a stack deeper than kMaxStackDepth
// (input nested that deep) is dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace folio::grammar {

inline constexpr size_t kMaxStacks = 4096;
inline constexpr size_t kMaxStackDepth = 4096;

class StackSet {
 public:
  StackSet() = default;
  // Canonicalizes (sorts, deduplicates) the stacks.
  static StackSet from_stacks(std::vector<std::vector<uint32_t>> stacks);

  // No stacks: nothing can be read and the input cannot end (dead state).
  bool empty() const { return data_.empty(); }
  size_t num_stacks() const;
  // Contains the empty stack (the root rule is complete).
  bool accepting() const { return !data_.empty() && data_[0] == 0; }

  // Calls f(std::span<const uint32_t> stack) for each stack, bottom first.
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < data_.size(); i += 1 + data_[i]) {
      f(std::span<const uint32_t>(data_.data() + i + 1, data_[i]));
    }
  }

  const std::vector<uint32_t>& data() const { return data_; }
  size_t hash() const;
  bool operator==(const StackSet&) const = default;

 private:
  std::vector<uint32_t> data_;  // [len, positions...] per stack, in sorted order
};

struct StackSetHash {
  size_t operator()(const StackSet& s) const { return s.hash(); }
};

// The stacks at the start: the closure of the root rule.
StackSet initial_stacks(const CompiledGrammar& g);

// The stacks after reading code point `cp`; empty if no stack can read it
// (or the result exceeds kMaxStacks).
StackSet advance_stacks(const CompiledGrammar& g, const StackSet& stacks, uint32_t cp);

// Whether some stack can read some code point in [lo, hi] other than a
// surrogate (what a partial UTF-8 character could still become).
bool can_read_any(const CompiledGrammar& g, const StackSet& stacks, uint32_t lo, uint32_t hi);

}  // namespace folio::grammar
