// CompiledGrammar: a validated Grammar laid out flat for the matcher, plus
// the partition of code points into classes that the token masker's
// automaton uses as its alphabet. Immutable once built; share it freely
// (std::shared_ptr<const CompiledGrammar>) between matchers and threads.
//
// Layout. Each alternative of each rule is a run of symbols in `symbols_`
// closed by an End symbol; a position (uint32 index into symbols_) names
// "the rest of this alternative from here". A pushdown stack is a list of
// positions: the top is the terminal to read next, the ones below are
// return positions (the symbol after a rule reference). Rule r's
// alternatives start at alternatives(r).
//
//   symbols_:  [kChars 3][kRule 1][kEnd] [kChars 0][kEnd] [kEnd] ...
//               ^ alt 0 of rule 0         ^ alt 0 of 1      ^ alt 1 of 1 (empty)
//
// Code point classes. The char sets of the grammar cut 0..U+10FFFF into
// intervals that every set either contains or misses; intervals contained by
// the same sets form one class (so [a-z] and [^"] give few classes). Reading
// any code point of a class moves any stack set to the same place, so the
// masker's automaton needs one transition per class instead of per code
// point. ASCII maps through a table; other code points by binary search over
// the interval starts (or one class for all of them, the common case).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/char_set.h"
#include "grammar/grammar.h"

namespace folio::grammar {

class CompiledGrammar {
 public:
  enum class SymbolKind : uint8_t { kEnd = 0, kChars = 1, kRule = 2 };

  // Validates (validate_grammar) and lays out `grammar`.
  static Result<std::shared_ptr<const CompiledGrammar>> compile(const Grammar& grammar);

  // ---- the symbol program ----
  SymbolKind kind(uint32_t pos) const { return static_cast<SymbolKind>(symbols_[pos] >> 30); }
  // kChars: the char set id; kRule: the rule id.
  uint32_t operand(uint32_t pos) const { return symbols_[pos] & kOperandMask; }
  // Start positions of rule `rule`'s alternatives.
  std::span<const uint32_t> alternatives(uint32_t rule) const {
    return std::span<const uint32_t>(alt_starts_)
        .subspan(alt_offsets_[rule], alt_offsets_[rule + 1] - alt_offsets_[rule]);
  }
  uint32_t root() const { return root_; }
  const CharSet& char_set(uint32_t id) const { return source_.char_sets[id]; }
  size_t num_symbols() const { return symbols_.size(); }
  size_t num_rules() const { return alt_offsets_.size() - 1; }
  // The grammar this was compiled from (rule names, GBNF text).
  const Grammar& source() const { return source_; }

  // ---- code point classes ----
  uint32_t num_classes() const { return num_classes_; }
  uint32_t class_of(uint32_t cp) const {
    if (cp < 0x80) return ascii_class_[cp];
    if (uniform_non_ascii_ >= 0) return static_cast<uint32_t>(uniform_non_ascii_);
    return class_of_interval(interval_of(cp));
  }
  // A code point of the class (never a surrogate unless the class holds
  // nothing else).
  uint32_t representative(uint32_t cls) const { return representative_[cls]; }
  // The class of every non-ASCII, non-surrogate code point, or -1 when they
  // fall into several.
  int32_t uniform_non_ascii_class() const { return uniform_non_ascii_; }

  // Intervals: [interval_start(i), interval_start(i + 1) - 1]; the last ends
  // at U+10FFFF.
  size_t num_intervals() const { return interval_starts_.size(); }
  uint32_t interval_start(size_t i) const { return interval_starts_[i]; }
  uint32_t interval_end(size_t i) const {
    return i + 1 < interval_starts_.size() ? interval_starts_[i + 1] - 1 : 0x10FFFF;
  }
  uint32_t class_of_interval(size_t i) const { return interval_class_[i]; }
  size_t interval_of(uint32_t cp) const;  // the interval holding cp

 private:
  static constexpr uint32_t kOperandMask = (1u << 30) - 1;
  CompiledGrammar() = default;
  void build_classes();

  Grammar source_;
  std::vector<uint32_t> symbols_;      // kind << 30 | operand
  std::vector<uint32_t> alt_starts_;   // [total alternatives] positions
  std::vector<uint32_t> alt_offsets_;  // [rules + 1] rule r: alt_starts_[off[r], off[r+1])
  uint32_t root_ = 0;

  uint32_t num_classes_ = 0;
  std::array<uint32_t, 128> ascii_class_{};
  std::vector<uint32_t> interval_starts_;  // sorted, [0] == 0
  std::vector<uint32_t> interval_class_;   // [intervals]
  std::vector<uint32_t> representative_;   // [classes]
  int32_t uniform_non_ascii_ = -1;
};

}  // namespace folio::grammar
