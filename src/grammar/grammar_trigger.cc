#include "grammar/grammar_trigger.h"

#include <algorithm>

namespace folio::grammar {

TriggerWatch::TriggerWatch(GrammarTriggers triggers) : triggers_(std::move(triggers)) {
  std::erase_if(triggers_.words, [](const std::string& w) { return w.empty(); });
  for (const std::string& w : triggers_.words) max_word_ = std::max(max_word_, w.size());
}

bool TriggerWatch::fires(int32_t id, std::string_view text, std::string* start) const {
  if (std::find(triggers_.tokens.begin(), triggers_.tokens.end(), id) != triggers_.tokens.end()) {
    if (start != nullptr) start->assign(text);
    return true;
  }
  if (triggers_.words.empty() || text.empty()) return false;
  const std::string s = tail_ + std::string(text);
  size_t best = std::string::npos;
  for (const std::string& w : triggers_.words) best = std::min(best, s.find(w));
  if (best == std::string::npos) return false;
  if (start != nullptr) start->assign(s, best);
  return true;
}

void TriggerWatch::push(std::string_view text) {
  if (max_word_ <= 1) return;
  tail_.append(text);
  if (tail_.size() > max_word_ - 1) tail_.erase(0, tail_.size() - (max_word_ - 1));
}

}  // namespace folio::grammar
