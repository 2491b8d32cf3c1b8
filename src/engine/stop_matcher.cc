#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace folio {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

StopMatcher::Step StopMatcher::feed(std::string_view piece) {
  Step step;
  if (stopped_) {
    step.stopped = true;
    step.stop_index = stop_index_;
    return step;
  }
  held_.append(piece);

  // Any stop string present now lies inside held_: whatever part of it came
  // earlier was a proper prefix of it at the end of the text, hence held.
  // The earliest end wins, then the earliest start.
  size_t best_end = std::string::npos;
  size_t best_start = std::string::npos;
  int32_t best = -1;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& s = stops_[i];
    if (s.empty()) continue;
    const size_t pos = held_.find(s);  // first occurrence = earliest end for this string
    if (pos == std::string::npos) continue;
    const size_t end = pos + s.size();
    if (end < best_end || (end == best_end && pos < best_start)) {
      best_end = end;
      best_start = pos;
      best = static_cast<int32_t>(i);
    }
  }
  if (best >= 0) {
    stopped_ = true;
    stop_index_ = best;
    step.stopped = true;
    step.stop_index = best;
    step.text = held_.substr(0, best_start);
    held_.clear();
    return step;
  }

  const size_t keep = partial_suffix_length(held_);
  step.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return step;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t StopMatcher::partial_suffix_length(std::string_view text) const {
  const size_t n = text.size();
  size_t longest = 0;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    // Proper prefixes only: a whole stop string would have matched.
    const size_t first = n >= s.size() ? n - s.size() + 1 : 0;
    for (size_t i = first; i + longest < n; ++i) {
      if (text.compare(i, n - i, s, 0, n - i) == 0) {
        longest = n - i;
        break;
      }
    }
  }
  return longest;
}

}  // namespace folio
