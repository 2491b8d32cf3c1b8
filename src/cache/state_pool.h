// StatePool: the recurrent-state slots of a hybrid model (gated DeltaNet or
// Mamba-2 layers), as bookkeeping only. A slot names one copy of the whole
// recurrent state, every recurrent layer's conv taps and state; the memory
// lives in HybridKvCache (cache/hybrid_kv_cache.h), indexed by slot
// (DESIGN.md point 4).
//
//   - n_slots slots, ids 0 .. n_slots-1. A slot is held (by exactly one live
//     sequence, whose state it is, updated in place by every forward) or
//     free.
//   - Free slots are of two kinds:
//       plain       holding nothing: a stack, the most recently released
//                   slot reused first (its memory is still warm);
//       checkpoint  holding a saved state registered under the block-chain
//                   hash of the token prefix it belongs to (prefix caching
//                   for hybrid models), in LRU order: a hit moves it to the
//                   most recently used end.
//     acquire() takes a plain slot if there is one, else evicts the least
//     recently used checkpoint. So checkpoints occupy only slots no sequence
//     needs, memory stays bounded by n_slots, and they are evicted like the
//     block pool's cached blocks.
//   - Saving a checkpoint follows the cache's plan / apply contract: a plan
//     picks the slots acquire() would pop (peek_free, no mutation), the
//     forward writes them, apply registers them (store_checkpoint) or,
//     after a failed forward, drop_checkpoint forgets the registrations of
//     slots the forward may have overwritten.
//
// Costs: every operation O(1) except peek_free (O(n)) and the checks (O(n_slots)).
// Not thread-safe: owned by one thread (the cache's owner).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/block_hash.h"
#include "core/status.h"

namespace folio::cache {

class StatePool {
 public:
  static Result<StatePool> create(int32_t n_slots);

  int32_t n_slots() const { return n_slots_; }
  int32_t n_held() const { return n_held_; }
  int32_t n_free() const { return n_slots_ - n_held_; }  // plain + checkpoint slots
  int32_t n_checkpoints() const { return static_cast<int32_t>(map_.size()); }
  bool is_held(int32_t slot) const { return state_[index(slot)] == kHeld; }
  bool is_checkpoint(int32_t slot) const { return state_[index(slot)] == kCheckpoint; }
  // Checkpoints dropped to make room (for a sequence or a newer checkpoint)
  // since creation.
  uint64_t n_evicted() const { return n_evicted_; }

  // A slot for a new sequence: a plain free slot, else the least recently
  // used checkpoint (evicted). kResourceExhausted when every slot is held.
  Result<int32_t> acquire();
  // The holder is done with `slot`: it becomes a plain free slot.
  void release(int32_t slot);

  // The checkpoint registered under `h`, or -1.
  int32_t find(const BlockHash& h) const;
  // A checkpoint was used (restored): it becomes the most recently used.
  void touch(int32_t slot);
  // The first n slots acquire() would hand out, in that order (fewer when
  // fewer are free).
  void peek_free(int32_t n, std::vector<int32_t>& out) const;
  // Registers free slot `slot`, just written, as the checkpoint of `h` (most
  // recently used). Its previous registration, if any, is dropped; `h` must
  // not be registered to another slot (CHECKed).
  void store_checkpoint(int32_t slot, const BlockHash& h);
  // Drops the registration of `slot` (no-op unless it is a checkpoint); it
  // becomes a plain free slot.
  void drop_checkpoint(int32_t slot);
  // Drops every checkpoint.
  void clear_checkpoints();

  // Every invariant, O(n_slots): states, counts, the plain stack and the LRU
  // list hold exactly the free slots of their kind, map and slots agree.
  Status check_invariants() const;
  std::string debug_dump() const;

 private:
  enum : uint8_t { kPlain = 0, kHeld = 1, kCheckpoint = 2 };

  explicit StatePool(int32_t n_slots);
  size_t index(int32_t slot) const;
  int32_t sentinel() const { return n_slots_; }
  void lru_append(int32_t slot);  // most recently used end
  void lru_remove(int32_t slot);
  void evict(int32_t slot);  // checkpoint -> plain (map entry dropped), stays free

  int32_t n_slots_ = 0;
  int32_t n_held_ = 0;
  uint64_t n_evicted_ = 0;
  std::vector<uint8_t> state_;   // [n_slots] kPlain / kHeld / kCheckpoint
  std::vector<int32_t> plain_;   // free plain slots, the next to hand out last
  std::vector<BlockHash> hash_;  // [n_slots] valid for checkpoints
  std::vector<int32_t> prev_;    // [n_slots + 1] LRU links of checkpoints; sentinel n_slots
  std::vector<int32_t> next_;    // [n_slots + 1]
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> map_;
};

}  // namespace folio::cache
