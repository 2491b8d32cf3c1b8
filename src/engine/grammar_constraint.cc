#include "engine/grammar_constraint.h"

namespace folio {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                     std::shared_ptr<const grammar::VocabTrie> vocab)
    : vocab_(vocab), matcher_(grammar), masker_(grammar, std::move(vocab)) {}

size_t GrammarConstraint::fill_mask(std::vector<uint64_t>* mask) {
  return masker_.fill_mask(matcher_, mask);
}

bool GrammarConstraint::accept(int32_t token) {
  if (token < 0 || token >= vocab_->size()) return false;
  return matcher_.accept_token(*vocab_, token);
}

Result<std::shared_ptr<const grammar::VocabTrie>> build_vocab_trie(const tokenizer::Tokenizer& tok) {
  const tokenizer::Vocab& vocab = tok.vocab();
  std::vector<std::string> bytes(static_cast<size_t>(vocab.size()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.is_eog(id)) {
      eog.push_back(id);
      continue;
    }
    bytes[static_cast<size_t>(id)] = tok.piece(id, /*render_special=*/false);
  }
  return grammar::VocabTrie::build(std::move(bytes), eog);
}

}  // namespace folio
