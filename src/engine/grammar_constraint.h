// GrammarConstraint: one sequence's grammar state for constrained sampling
// (structured outputs, enforced tool calls). Before each draw it gives the
// set of tokens that keep the output inside the grammar (end-of-generation
// tokens only once the grammar is complete); after it, it advances by the
// token drawn. The compiled grammar and the vocabulary's trie are shared
// and immutable; the matcher and the masker's cache are this sequence's.
//
// Lazy grammars (grammar/grammar_trigger.h): with triggers, the output is
// free until one fires, and the grammar reads the text from the trigger's
// start on. While waiting, the mask allows every token (end-of-generation
// only where the triggers allow ending first) except those that would fire
// a trigger with text the grammar refuses (a word completed inside a token
// whose remaining bytes cannot follow it), so a drawn token never leaves the
// grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_trigger.h"
#include "grammar/token_masker.h"
#include "grammar/vocab_trie.h"
#include "tokenizer/tokenizer.h"

namespace folio {

class GrammarConstraint {
 public:
  // `triggers` empty: the grammar holds from the first token.
  GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                    std::shared_ptr<const grammar::VocabTrie> vocab,
                    grammar::GrammarTriggers triggers = {});

  // The allowed tokens as a bitmask over the vocabulary ((n + 63) / 64
  // words; tokens past the vocabulary are never allowed). Returns how many.
  size_t fill_mask(std::vector<uint64_t>* mask);
  // Advances by a drawn token. False when the grammar refuses it (cannot
  // happen for a token from fill_mask's set).
  bool accept(int32_t token);
  bool is_accepting() const;
  // Whether the grammar holds now (no trigger, or one has fired).
  bool triggered() const { return !watch_; }

 private:
  // While waiting for a trigger: the mask described above.
  size_t fill_waiting_mask(std::vector<uint64_t>* mask) const;

  std::shared_ptr<const grammar::VocabTrie> vocab_;
  grammar::GrammarMatcher matcher_;
  grammar::TokenMasker masker_;
  std::optional<grammar::TriggerWatch> watch_;  // set until a trigger fires
  // Tokens that may fire a word trigger (their text holds a whole word or
  // starts with the rest of one) and the trigger tokens: checked each step.
  std::vector<int32_t> trigger_candidates_;
};

// The vocabulary as the grammar sees it: each token's bytes as the
// detokenizer emits them alone (control tokens: none, or their text with
// `render_special`, for output that shows them), and the end-of-generation
// ids.
Result<std::shared_ptr<const grammar::VocabTrie>> build_vocab_trie(const tokenizer::Tokenizer& tok,
                                                                   bool render_special = false);

}  // namespace folio
