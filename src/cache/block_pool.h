// BlockPool: the physical blocks of the paged KV cache, as bookkeeping only
// (the K/V memory itself lives elsewhere, indexed by block id).
//
//   - Fixed block size: a power of two from 8 to 128 tokens (default 16).
//   - n_blocks physical blocks with ids 0 .. n_blocks-1. Block 0 is the null
//     block: never handed out, never freed, never hashed. It pads block-table
//     rows, so its K/V rows must exist in storage but are never read as data.
//   - A ref count per block: how many block-table entries hold it.
//   - A free queue in eviction order: an intrusive doubly linked list over
//     block ids (arrays prev/next, a sentinel at index n_blocks), holding
//     exactly the blocks with ref 0. It has two segments:
//         [ unhashed blocks ... | hashed blocks, least recently freed first ]
//     Unhashed blocks are pushed at the front (LIFO: the most recently freed
//     one is reused first while its memory is still warm in CPU caches) and
//     are evicted first: they hold nothing reusable. Hashed blocks are
//     appended at the tail, so they stay warm in LRU order and are evicted
//     (their hash dropped from the map) only when a new allocation pops them.
//     Callers free a sequence's blocks in reverse order (release_reverse) so
//     that its tail blocks, the least likely to be shared, are evicted first.
//   - A hash -> block map of registered (cached) full blocks. A block is
//     "hashed" exactly when it is the map's entry for its hash: a second block
//     with the same contents is never registered (see register_hash).
//   - Reusing a cached block (touch) takes it out of the free queue (ref 0->1).
//
// Costs: allocate, touch, release, register and unregister are O(1) (the map
// is a hash table); defrag and the checks are O(n_blocks).
// Not thread-safe: owned by one thread (the scheduler's, via KvCacheManager).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/block_hash.h"
#include "cache/kv_events.h"
#include "core/check.h"
#include "core/status.h"

namespace folio::cache {

using BlockId = int32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr int32_t kDefaultBlockSize = 16;
inline constexpr int32_t kMinBlockSize = 8;
inline constexpr int32_t kMaxBlockSize = 128;

// OK for a power of two in [kMinBlockSize, kMaxBlockSize].
Status validate_block_size(int32_t block_size);

class BlockPool {
 public:
  // n_blocks counts every physical block, the null block included, so at most
  // n_blocks - 1 are usable; n_blocks * block_size must fit in int32 (slots
  // are int32).
  static Result<BlockPool> create(int32_t n_blocks, int32_t block_size = kDefaultBlockSize);

  int32_t n_blocks() const { return n_blocks_; }
  int32_t n_usable() const { return n_blocks_ - 1; }
  int32_t block_size() const { return block_size_; }
  int32_t n_free() const { return n_free_; }               // blocks in the free queue
  int32_t n_used() const { return n_usable() - n_free_; }  // blocks with ref > 0
  int32_t n_cached() const { return static_cast<int32_t>(map_.size()); }  // registered hashes
  // True when no block is in use (every block free, refs 0).
  bool idle() const { return n_free_ == n_usable(); }

  int32_t ref(BlockId id) const { return ref_[index(id)]; }
  bool is_free(BlockId id) const { return id != kNullBlock && ref_[index(id)] == 0; }
  bool is_hashed(BlockId id) const { return hashed_[index(id)] != 0; }
  // The registered hash of a hashed block.
  const BlockHash& hash(BlockId id) const;
  // The block registered under `h`, or kNullBlock.
  BlockId find(const BlockHash& h) const;

  // Free queue in eviction order: front() first, next(id) after id; both
  // return kNullBlock past the end.
  BlockId front() const { return to_id(next_[sentinel()]); }
  BlockId next(BlockId id) const { return to_id(next_[index(id)]); }
  std::vector<BlockId> free_queue() const;

  // Pops the front of the free queue (evicting its hash, if any); ref 0 -> 1.
  // CHECKs that a block is free: callers plan against n_free() first.
  BlockId allocate();
  // One more holder of `id` (a cached block found by hash, or a shared one);
  // a free block leaves the free queue.
  void touch(BlockId id);
  // One holder less; at ref 0 the block joins the free queue (hashed blocks at
  // the tail, others at the front).
  void release(BlockId id);
  // Releases blocks in reverse order (a sequence's tail first).
  void release_reverse(std::span<const BlockId> ids);

  // Registers a held, unhashed block under `h`. Returns false (and registers
  // nothing) when another block is already cached under `h`: the caller keeps
  // using its own block, which stays unhashed.
  bool register_hash(BlockId id, const BlockHash& h);
  // Drops the registration of `id` (no-op when unhashed). A free block moves
  // to the unhashed segment of the free queue.
  void unregister(BlockId id);
  // Drops every registration (reset of the prefix cache): one all-cleared
  // event instead of a removal each.
  void clear_cache();

  // Hashes dropped (evicted, unregistered, cleared) are recorded here when
  // it is enabled; the manager adds what it registers.
  KvEventLog& events() { return events_; }
  const KvEventLog& events() const { return events_; }

  // When idle, rebuilds the free queue in ascending id order (unhashed blocks
  // first, then hashed ones: cached hashes survive, but their LRU order is
  // replaced by id order). Returns false and changes nothing when a block is
  // in use.
  [[nodiscard]] bool defrag();

  // Every invariant, checked in O(n_blocks): the null block is never free,
  // held or hashed; a block is in the free queue iff its ref is 0; the queue's
  // links are consistent, its length is n_free() and its unhashed segment
  // precedes the hashed one; map entries and hashed blocks agree both ways.
  Status check_invariants() const;
  // The complete state (refs, hashes, queue order, map), one line each.
  std::string debug_dump() const;

 private:
  BlockPool(int32_t n_blocks, int32_t block_size);
  size_t index(BlockId id) const {
    FOLIO_CHECK_MSG(id >= 0 && id <= n_blocks_, "block id {} outside [0, {})", id, n_blocks_);
    return static_cast<size_t>(id);
  }
  int32_t sentinel() const { return n_blocks_; }
  BlockId to_id(int32_t link) const { return link == sentinel() ? kNullBlock : link; }
  bool queued(BlockId id) const { return prev_[index(id)] >= 0; }
  void queue_insert_before(int32_t at, BlockId id);
  void queue_remove(BlockId id);
  void queue_push(BlockId id);  // by hash status: front or tail
  void evict(BlockId id);       // drops the hash of `id` from the map

  int32_t n_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t n_free_ = 0;
  std::vector<int32_t> ref_;     // [n_blocks]
  std::vector<uint8_t> hashed_;  // [n_blocks] 1 = registered in map_
  std::vector<BlockHash> hash_;  // [n_blocks] valid where hashed_
  std::vector<int32_t> prev_;    // [n_blocks + 1] links; -1 = not queued; [n_blocks] = sentinel
  std::vector<int32_t> next_;    // [n_blocks + 1]
  int32_t first_hashed_ = 0;     // first hashed block in the queue, or the sentinel
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> map_;
  KvEventLog events_;
};

}  // namespace folio::cache
