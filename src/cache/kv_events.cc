#include "cache/kv_events.h"

#include <utility>

namespace folio::cache {

void KvEventLog::stored(bool has_parent, const BlockHash& parent, const BlockHash& hash,
                        std::span<const int32_t> tokens) {
  if (!enabled_) return;
  if (has_parent && !events_.empty() && events_.back().kind == KvEvent::Kind::kStored &&
      events_.back().hashes.back() == parent) {
    KvEvent& e = events_.back();
    e.hashes.push_back(hash);
    e.tokens.insert(e.tokens.end(), tokens.begin(), tokens.end());
    return;
  }
  KvEvent e;
  e.kind = KvEvent::Kind::kStored;
  e.hashes.push_back(hash);
  e.has_parent = has_parent;
  if (has_parent) e.parent = parent;
  e.tokens.assign(tokens.begin(), tokens.end());
  events_.push_back(std::move(e));
}

void KvEventLog::removed(const BlockHash& hash) {
  if (!enabled_) return;
  if (events_.empty() || events_.back().kind != KvEvent::Kind::kRemoved) {
    events_.push_back(KvEvent{.kind = KvEvent::Kind::kRemoved});
  }
  events_.back().hashes.push_back(hash);
}

void KvEventLog::all_cleared() {
  if (!enabled_) return;
  events_.push_back(KvEvent{.kind = KvEvent::Kind::kAllCleared});
}

std::vector<KvEvent> KvEventLog::take() { return std::exchange(events_, {}); }

}  // namespace folio::cache
