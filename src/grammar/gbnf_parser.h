// GBNF (llama.cpp's grammar format) -> Grammar.
//
// The syntax, as llama.cpp's grammars/README.md documents it:
//   name ::= alternatives        a rule; names are letters, digits, '-', '_'
//   a b c                        a sequence
//   a | b                        alternatives
//   ( ... )                      grouping
//   x*  x+  x?                   repetition (zero or more, one or more, optional)
//   x{m}  x{m,}  x{m,n}  x{,n}   bounded repetition
//   "text"                       a string literal: \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH
//   [a-z_]  [^"\\]               character classes (ranges, negation, the same escapes)
//   .                            any character
//   # comment                    to the end of the line
// The start symbol is `root`. A newline ends a rule except inside
// parentheses or right after `|` or `::=`. Extensions (llama.cpp rejects
// these): a line that starts with `|` continues the rule before it, and a
// rule whose line ends in `|` or `::=` right before the next rule's
// definition ends with an empty alternative.
// Literals and classes may hold UTF-8 text; escapes also accept \[ \] \- \^
// \/ \' (classes need \] \[ \- \^ for those characters as themselves).
// Not supported, with an error: token references (<think>, <[1000]>, !<...>).
//
// Errors (InvalidArgument) start "grammar: line L:C:" and say what is wrong:
// undefined rule, missing root, duplicate rule, unterminated string or
// class, bad escape, bad repetition bounds, left recursion, invalid UTF-8.
// Any input, however malformed, gives a Grammar or an error: the parser has
// limits on nesting depth (256), repetition bounds (10000) and total size
// (1M symbols) instead of running out of stack or memory.
#pragma once

#include <string_view>

#include <memory>

#include "core/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"

namespace folio::grammar {

inline constexpr int kMaxGroupNesting = 256;
inline constexpr uint32_t kMaxRepetitionBound = 10000;
inline constexpr size_t kMaxGrammarSymbols = size_t{1} << 20;

Result<Grammar> parse_gbnf(std::string_view text);

// parse_gbnf + CompiledGrammar::compile.
Result<std::shared_ptr<const CompiledGrammar>> compile_gbnf(std::string_view text);

}  // namespace folio::grammar
