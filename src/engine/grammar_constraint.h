// GrammarConstraint: one sequence's grammar state for constrained sampling
// (structured outputs, enforced tool calls). Before each draw it gives the
// set of tokens that keep the output inside the grammar (end-of-generation
// tokens only once the grammar is complete); after it, it advances by the
// token drawn. The compiled grammar and the vocabulary's trie are shared
// and immutable; the matcher and the masker's cache are this sequence's.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/vocab_trie.h"
#include "tokenizer/tokenizer.h"

namespace folio {

class GrammarConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                    std::shared_ptr<const grammar::VocabTrie> vocab);

  // The allowed tokens as a bitmask over the vocabulary ((n + 63) / 64
  // words; tokens past the vocabulary are never allowed). Returns how many.
  size_t fill_mask(std::vector<uint64_t>* mask);
  // Advances by a drawn token. False when the grammar refuses it (cannot
  // happen for a token from fill_mask's set).
  bool accept(int32_t token);
  bool is_accepting() const { return matcher_.is_accepting(); }

 private:
  std::shared_ptr<const grammar::VocabTrie> vocab_;
  grammar::GrammarMatcher matcher_;
  grammar::TokenMasker masker_;
};

// The vocabulary as the grammar sees it: each token's bytes as the
// detokenizer emits them alone (control tokens: none), and the
// end-of-generation ids.
Result<std::shared_ptr<const grammar::VocabTrie>> build_vocab_trie(const tokenizer::Tokenizer& tok);

}  // namespace folio
