#include "engine/grammar_constraint.h"

#include <algorithm>

namespace folio {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const grammar::CompiledGrammar> grammar,
                                     std::shared_ptr<const grammar::VocabTrie> vocab,
                                     grammar::GrammarTriggers triggers)
    : vocab_(vocab), matcher_(grammar), masker_(grammar, std::move(vocab)) {
  if (triggers.empty()) return;
  for (int32_t id : triggers.tokens) {
    if (id >= 0 && id < vocab_->size()) trigger_candidates_.push_back(id);
  }
  for (int32_t id = 0; id < vocab_->size(); ++id) {
    const std::string_view text = vocab_->token(id);
    if (text.empty() || vocab_->is_eog(id)) continue;
    const bool may_fire = std::any_of(
        triggers.words.begin(), triggers.words.end(), [&](const std::string& w) {
          if (w.empty()) return false;
          if (text.find(w) != std::string_view::npos) return true;
          for (size_t k = 1; k < w.size(); ++k) {
            if (text.starts_with(std::string_view(w).substr(k))) return true;
          }
          return false;
        });
    if (may_fire) trigger_candidates_.push_back(id);
  }
  std::sort(trigger_candidates_.begin(), trigger_candidates_.end());
  trigger_candidates_.erase(std::unique(trigger_candidates_.begin(), trigger_candidates_.end()),
                            trigger_candidates_.end());
  watch_.emplace(std::move(triggers));
}

size_t GrammarConstraint::fill_waiting_mask(std::vector<uint64_t>* mask) const {
  const auto n = static_cast<size_t>(vocab_->size());
  mask->assign((n + 63) / 64, ~uint64_t{0});
  if (n % 64 != 0) mask->back() = (uint64_t{1} << (n % 64)) - 1;
  size_t allowed = n;
  auto clear = [&](int32_t id) {
    uint64_t& w = (*mask)[static_cast<size_t>(id) / 64];
    const uint64_t bit = uint64_t{1} << (static_cast<size_t>(id) % 64);
    if ((w & bit) != 0) {
      w &= ~bit;
      --allowed;
    }
  };
  if (!watch_->triggers().end_before_trigger) {
    for (int32_t id : vocab_->eog_ids()) clear(id);
  }
  std::string start;
  for (int32_t id : trigger_candidates_) {
    if (!watch_->fires(id, vocab_->token(id), &start)) continue;
    grammar::GrammarMatcher probe = matcher_;
    if (!probe.accept_bytes(start)) clear(id);
  }
  return allowed;
}

size_t GrammarConstraint::fill_mask(std::vector<uint64_t>* mask) {
  if (watch_) return fill_waiting_mask(mask);
  return masker_.fill_mask(matcher_, mask);
}

bool GrammarConstraint::accept(int32_t token) {
  if (token < 0 || token >= vocab_->size()) return false;
  if (!watch_) return matcher_.accept_token(*vocab_, token);
  if (vocab_->is_eog(token)) return watch_->triggers().end_before_trigger;
  const std::string_view text = vocab_->token(token);
  std::string start;
  if (!watch_->fires(token, text, &start)) {
    watch_->push(text);
    return true;
  }
  if (!matcher_.accept_bytes(start)) return false;
  watch_.reset();
  return true;
}

bool GrammarConstraint::is_accepting() const {
  if (watch_) return watch_->triggers().end_before_trigger;
  return matcher_.is_accepting();
}

Result<std::shared_ptr<const grammar::VocabTrie>> build_vocab_trie(const tokenizer::Tokenizer& tok,
                                                                   bool render_special) {
  const tokenizer::Vocab& vocab = tok.vocab();
  std::vector<std::string> bytes(static_cast<size_t>(vocab.size()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.is_eog(id)) {
      eog.push_back(id);
      continue;
    }
    bytes[static_cast<size_t>(id)] = tok.piece(id, render_special);
  }
  return grammar::VocabTrie::build(std::move(bytes), eog);
}

}  // namespace folio
