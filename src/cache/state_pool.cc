#include "cache/state_pool.h"

#include <fmt/format.h>

#include "core/check.h"

namespace folio::cache {

namespace {

constexpr int32_t kMaxSlots = 1 << 20;

}  // namespace

Result<StatePool> StatePool::create(int32_t n_slots) {
  if (n_slots < 1 || n_slots > kMaxSlots) {
    return invalid_argument("state pool: {} slots is out of range [1, {}]", n_slots, kMaxSlots);
  }
  return StatePool(n_slots);
}

StatePool::StatePool(int32_t n_slots)
    : n_slots_(n_slots),
      state_(static_cast<size_t>(n_slots), kPlain),
      hash_(static_cast<size_t>(n_slots)),
      prev_(static_cast<size_t>(n_slots) + 1, -1),
      next_(static_cast<size_t>(n_slots) + 1, -1) {
  plain_.reserve(static_cast<size_t>(n_slots));
  for (int32_t s = n_slots - 1; s >= 0; --s) plain_.push_back(s);  // slot 0 handed out first
  prev_[static_cast<size_t>(sentinel())] = sentinel();
  next_[static_cast<size_t>(sentinel())] = sentinel();
}

size_t StatePool::index(int32_t slot) const {
  FOLIO_CHECK_MSG(slot >= 0 && slot < n_slots_, "state slot {} outside [0, {})", slot, n_slots_);
  return static_cast<size_t>(slot);
}

void StatePool::lru_append(int32_t slot) {
  const auto s = static_cast<size_t>(slot), z = static_cast<size_t>(sentinel());
  const int32_t last = prev_[z];
  prev_[s] = last;
  next_[s] = sentinel();
  next_[static_cast<size_t>(last)] = slot;
  prev_[z] = slot;
}

void StatePool::lru_remove(int32_t slot) {
  const auto s = static_cast<size_t>(slot);
  next_[static_cast<size_t>(prev_[s])] = next_[s];
  prev_[static_cast<size_t>(next_[s])] = prev_[s];
  prev_[s] = next_[s] = -1;
}

void StatePool::evict(int32_t slot) {
  lru_remove(slot);
  map_.erase(hash_[static_cast<size_t>(slot)]);
  hash_[static_cast<size_t>(slot)] = BlockHash{};
  state_[static_cast<size_t>(slot)] = kPlain;
}

Result<int32_t> StatePool::acquire() {
  int32_t slot = -1;
  if (!plain_.empty()) {
    slot = plain_.back();
    plain_.pop_back();
  } else {
    slot = next_[static_cast<size_t>(sentinel())];
    if (slot == sentinel()) {
      return resource_exhausted("state pool: all {} recurrent-state slots are held by sequences",
                                n_slots_);
    }
    evict(slot);
    ++n_evicted_;
  }
  state_[static_cast<size_t>(slot)] = kHeld;
  ++n_held_;
  return slot;
}

void StatePool::release(int32_t slot) {
  FOLIO_CHECK_MSG(is_held(slot), "state pool: release of slot {}, which is not held", slot);
  state_[static_cast<size_t>(slot)] = kPlain;
  plain_.push_back(slot);
  --n_held_;
}

int32_t StatePool::find(const BlockHash& h) const {
  auto it = map_.find(h);
  return it == map_.end() ? -1 : it->second;
}

void StatePool::touch(int32_t slot) {
  FOLIO_CHECK_MSG(is_checkpoint(slot), "state pool: touch of slot {}, not a checkpoint", slot);
  lru_remove(slot);
  lru_append(slot);
}

void StatePool::peek_free(int32_t n, std::vector<int32_t>& out) const {
  out.clear();
  for (auto it = plain_.rbegin(); it != plain_.rend() && static_cast<int32_t>(out.size()) < n;
       ++it) {
    out.push_back(*it);
  }
  for (int32_t s = next_[static_cast<size_t>(sentinel())];
       s != sentinel() && static_cast<int32_t>(out.size()) < n; s = next_[static_cast<size_t>(s)]) {
    out.push_back(s);
  }
}

void StatePool::store_checkpoint(int32_t slot, const BlockHash& h) {
  const size_t s = index(slot);
  FOLIO_CHECK_MSG(state_[s] != kHeld, "state pool: checkpoint into held slot {}", slot);
  const int32_t other = find(h);
  FOLIO_CHECK_MSG(other < 0 || other == slot, "state pool: hash {} already names slot {}",
                  to_string(h), other);
  if (state_[s] == kCheckpoint) {
    if (!(hash_[s] == h)) ++n_evicted_;  // a newer checkpoint replaces it
    evict(slot);
  } else {
    for (size_t i = 0; i < plain_.size(); ++i) {
      if (plain_[i] == slot) {
        plain_.erase(plain_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  state_[s] = kCheckpoint;
  hash_[s] = h;
  map_[h] = slot;
  lru_append(slot);
}

void StatePool::drop_checkpoint(int32_t slot) {
  if (!is_checkpoint(slot)) return;
  evict(slot);
  plain_.push_back(slot);
}

void StatePool::clear_checkpoints() {
  while (next_[static_cast<size_t>(sentinel())] != sentinel()) {
    drop_checkpoint(next_[static_cast<size_t>(sentinel())]);
  }
}

Status StatePool::check_invariants() const {
  int32_t held = 0, plain = 0, ckpt = 0;
  for (int32_t s = 0; s < n_slots_; ++s) {
    switch (state_[static_cast<size_t>(s)]) {
      case kHeld:
        ++held;
        break;
      case kPlain:
        ++plain;
        break;
      case kCheckpoint:
        ++ckpt;
        break;
      default:
        return internal_error("state pool: slot {} has state {}", s,
                              state_[static_cast<size_t>(s)]);
    }
  }
  if (held != n_held_)
    return internal_error("state pool: {} held slots, counted {}", held, n_held_);
  if (static_cast<size_t>(plain) != plain_.size()) {
    return internal_error("state pool: {} plain slots, stack holds {}", plain, plain_.size());
  }
  for (int32_t s : plain_) {
    if (s < 0 || s >= n_slots_ || state_[static_cast<size_t>(s)] != kPlain) {
      return internal_error("state pool: stack entry {} is not a plain free slot", s);
    }
  }
  if (static_cast<size_t>(ckpt) != map_.size()) {
    return internal_error("state pool: {} checkpoint slots, map holds {}", ckpt, map_.size());
  }
  int32_t walked = 0;
  for (int32_t s = next_[static_cast<size_t>(sentinel())], p = sentinel(); s != sentinel();
       p = s, s = next_[static_cast<size_t>(s)]) {
    if (s < 0 || s >= n_slots_ || state_[static_cast<size_t>(s)] != kCheckpoint ||
        prev_[static_cast<size_t>(s)] != p || ++walked > ckpt) {
      return internal_error("state pool: broken LRU list at slot {}", s);
    }
    auto it = map_.find(hash_[static_cast<size_t>(s)]);
    if (it == map_.end() || it->second != s) {
      return internal_error("state pool: checkpoint slot {} is not the map's entry for its hash",
                            s);
    }
  }
  if (walked != ckpt)
    return internal_error("state pool: LRU list has {} of {} checkpoints", walked, ckpt);
  return Status();
}

std::string StatePool::debug_dump() const {
  std::string s = fmt::format("state pool: {} slots, {} held, {} checkpoints, {} evicted\n",
                              n_slots_, n_held_, map_.size(), n_evicted_);
  for (int32_t i = 0; i < n_slots_; ++i) {
    const uint8_t st = state_[static_cast<size_t>(i)];
    s += fmt::format("  slot {}: {}{}\n", i,
                     st == kHeld    ? "held"
                     : st == kPlain ? "free"
                                    : "checkpoint ",
                     st == kCheckpoint ? to_string(hash_[static_cast<size_t>(i)]) : "");
  }
  s += "  lru:";
  for (int32_t i = next_[static_cast<size_t>(sentinel())]; i != sentinel();
       i = next_[static_cast<size_t>(i)]) {
    s += fmt::format(" {}", i);
  }
  return s + "\n";
}

}  // namespace folio::cache
