// GrammarMatcher: feeds generated text to a compiled grammar, byte by byte,
// and says whether the text so far can still be completed into a sentence of
// the grammar.
//
// State: the set of pushdown stacks (stack_set.h) plus a partial UTF-8
// character, since a token may end in the middle of one (byte-fallback
// tokens such as <0xE4> <0xB8> <0xAD> spell one character over three
// tokens). A byte that starts or continues a character is accepted when some
// character it could still become is readable by some stack; the character
// is checked exactly once it is complete.
//
// accept_bytes() is all or nothing: on false the state is unchanged (the
// matcher never goes dead; a dead end is a state whose mask is empty).
// Copying a matcher copies its state (two small vectors and a few words) and
// shares the compiled grammar: clone freely to try alternatives.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "core/utf8.h"
#include "grammar/compiled_grammar.h"
#include "grammar/stack_set.h"

namespace folio::grammar {

class VocabTrie;

class GrammarMatcher {
 public:
  // Starts at the beginning of the root rule.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Reads `bytes`; true if the text so far is still a prefix of some
  // sentence (as far as the grammar's rules can be completed: a rule with no
  // finite derivation is not detected). On false nothing changes. An empty
  // string is accepted.
  [[nodiscard]] bool accept_bytes(std::string_view bytes);

  // Token-level: an end-of-generation token (vocab.is_eog) is accepted when
  // is_accepting() (the state does not change); a token with no bytes
  // (control tokens) is refused; any other token as accept_bytes(its bytes).
  // `id` must be a valid token id of `vocab`.
  [[nodiscard]] bool accept_token(const VocabTrie& vocab, int32_t id);

  // The text so far is a complete sentence (so the generation may end).
  bool is_accepting() const { return utf8_.idle() && stacks_.accepting(); }
  // More text can be read (some stack is not finished, or a character is
  // incomplete). False once a grammar with a fixed end has been completed.
  bool can_continue() const;

  // Back to the start.
  void reset();

  const CompiledGrammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const CompiledGrammar>& grammar_ptr() const { return grammar_; }
  const StackSet& stacks() const { return stacks_; }
  const Utf8State& utf8_state() const { return utf8_; }

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  StackSet initial_;  // the start state, kept for reset()
  StackSet stacks_;
  Utf8State utf8_;
};

}  // namespace folio::grammar
