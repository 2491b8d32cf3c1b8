// Grammar: a context-free grammar over Unicode code points in plain BNF, the
// form the GBNF parser produces and compile() (compiled_grammar.h) flattens.
//
// Every rule is a list of alternatives, each a sequence of symbols: a
// terminal (one code point from a CharSet) or a reference to a rule. GBNF's
// extras are already rewritten into rules of their own:
//   ( a | b )    a generated rule with those alternatives
//   x*           R ::= x R |           (right recursion: no stack growth)
//   x+           x R, R as for x*
//   x?           R ::= x |
//   x{m,n}       m copies of x, then T(n-m) with T(k) ::= x T(k-1) | , T(1) ::= x |
//   x{m,}        m copies of x, then R as for x*
//   "abc"        three terminals in a row (a rule of its own when repeated)
// so a Grammar is what the matcher runs, minus the flat layout.
//
// validate_grammar() rejects what a pushdown matcher cannot run: left
// recursion (a rule that reaches itself before reading a character, possibly
// through rules that can match the empty string), which includes an open
// repetition (*, +, {m,}) of an item that can match the empty string.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/char_set.h"

namespace folio::grammar {

// A place in the grammar text; 1-based, line 0 for grammars built in code.
struct SourceLocation {
  int line = 0;
  int column = 0;                 // in code points
  std::string to_string() const;  // "line 3:14"
};

struct GrammarSymbol {
  enum class Kind : uint8_t { kChars, kRule };
  Kind kind = Kind::kChars;
  uint32_t index = 0;  // kChars: into Grammar::char_sets; kRule: into Grammar::rules

  static GrammarSymbol chars(uint32_t i) { return {Kind::kChars, i}; }
  static GrammarSymbol rule(uint32_t i) { return {Kind::kRule, i}; }
  bool is_rule() const { return kind == Kind::kRule; }
  bool operator==(const GrammarSymbol&) const = default;
};

using GrammarSequence = std::vector<GrammarSymbol>;

// Where a rule comes from: written by the user, or generated for a GBNF
// construct (used for names and error messages).
enum class RuleOrigin : uint8_t {
  kNamed,       // `name ::= ...`
  kGroup,       // ( ... )
  kRepetition,  // * + ? {m,n}
  kSequence,    // a multi-symbol item (string literal, one-sequence group) that is repeated
};

struct GrammarRule {
  std::string name;  // as written, or "<enclosing rule>-<n>" when generated (unique)
  RuleOrigin origin = RuleOrigin::kNamed;
  SourceLocation where;                       // the definition, or the generating construct
  std::vector<GrammarSequence> alternatives;  // at least one (possibly empty)
};

struct Grammar {
  std::vector<GrammarRule> rules;
  std::vector<CharSet> char_sets;  // distinct sets, referenced by index
  uint32_t root = 0;               // the start rule ("root" in GBNF)

  // Index of the rule with this name, or -1.
  int find_rule(std::string_view name) const;
  // GBNF text for the grammar (generated rules appear under their names);
  // parsing it gives back an equivalent grammar.
  std::string to_gbnf() const;
};

// For each rule: can it match the empty string?
std::vector<bool> nullable_rules(const Grammar& grammar);

// Indexes in range, every rule has an alternative, no left recursion.
// Errors (InvalidArgument) name the rule(s) and the source location.
Status validate_grammar(const Grammar& grammar);

}  // namespace folio::grammar
