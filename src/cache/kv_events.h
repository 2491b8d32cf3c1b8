// KvEventLog: the prefix cache's changes, in order, as the events that
// cache-aware routers consume (vLLM's KV-cache events): blocks registered
// under a chain hash ("stored", with their parent hash and token ids), hashes
// dropped ("removed": evicted for reuse, unregistered before a write), and
// every hash dropped at once ("all cleared"). The block pool records removals
// and clears; the manager records what it registers, since only it knows the
// tokens and the parent. Consecutive events of one kind coalesce: a stored
// block whose parent ends the previous stored event extends it, removals
// join the previous removal. Disabled by default (nothing is recorded); the
// owner drains it with take() every step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/block_hash.h"

namespace folio::cache {

struct KvEvent {
  enum class Kind : uint8_t { kStored, kRemoved, kAllCleared };
  Kind kind = Kind::kStored;
  // stored: [n] the chain hash of each block, in prefix order;
  // removed: [n] the dropped hashes; all cleared: empty.
  std::vector<BlockHash> hashes;
  // stored: hashes[0]'s parent; has_parent is false when hashes[0] is the
  // sequence's first block (its parent is the root: model and salt).
  bool has_parent = false;
  BlockHash parent;
  // stored: [n * block_size] the token ids of the blocks, in order.
  std::vector<int32_t> tokens;
};

class KvEventLog {
 public:
  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }
  bool empty() const { return events_.empty(); }
  const std::vector<KvEvent>& events() const { return events_; }

  // No-ops while disabled.
  void stored(bool has_parent, const BlockHash& parent, const BlockHash& hash,
              std::span<const int32_t> tokens);
  void removed(const BlockHash& hash);
  void all_cleared();

  // The events since the last take(), oldest first.
  std::vector<KvEvent> take();

 private:
  bool enabled_ = false;
  std::vector<KvEvent> events_;
};

}  // namespace folio::cache
