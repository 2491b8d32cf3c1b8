#include "grammar/grammar_matcher.h"

#include "core/check.h"
#include "grammar/vocab_trie.h"

namespace folio::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)) {
  FOLIO_CHECK(grammar_ != nullptr);
  initial_ = initial_stacks(*grammar_);
  stacks_ = initial_;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  StackSet stacks = stacks_;
  Utf8State utf8 = utf8_;
  for (char c : bytes) {
    const Utf8Result r = utf8_step(&utf8, static_cast<uint8_t>(c));
    switch (r.step) {
      case Utf8Step::kInvalid:
        return false;
      case Utf8Step::kPartial:
        if (!can_read_any(*grammar_, stacks, r.lo, r.hi)) return false;
        break;
      case Utf8Step::kComplete: {
        StackSet next = advance_stacks(*grammar_, stacks, r.lo);
        if (next.empty()) return false;
        stacks = std::move(next);
        break;
      }
    }
  }
  stacks_ = std::move(stacks);
  utf8_ = utf8;
  return true;
}

bool GrammarMatcher::accept_token(const VocabTrie& vocab, int32_t id) {
  FOLIO_CHECK(id >= 0 && id < vocab.size());
  if (vocab.is_eog(id)) return is_accepting();
  const std::string_view bytes = vocab.token(id);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

bool GrammarMatcher::can_continue() const {
  if (!utf8_.idle()) return true;
  bool any = false;
  stacks_.for_each([&](std::span<const uint32_t> st) { any = any || !st.empty(); });
  return any;
}

void GrammarMatcher::reset() {
  stacks_ = initial_;
  utf8_ = Utf8State{};
}

}  // namespace folio::grammar
