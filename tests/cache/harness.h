// Test harness for the KV cache manager: runs steps the way the engine will
// (plan, block copies, K/V writes through the slot mapping, apply) against a
// simulated K/V memory and an independent reference of every sequence.
//
// Simulated K/V: one 64-bit value per slot. Like a real K/V row, it depends
// on the whole prefix up to its position (a digest of the salt and every
// token so far), so a block shared or reused for the wrong prefix, a missed
// copy-on-write or a write into a block someone else reads all show up as a
// wrong value when a sequence's positions are read through its block table.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kv_cache_manager.h"

namespace folio::cache::cachetest {

// What the test knows about one live sequence.
struct RefSeq {
  std::string salt;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> digests;  // [len] simulated K/V value of each position
  void append(std::span<const int32_t> t);
  void truncate(size_t len);
};

class Harness {
 public:
  explicit Harness(const KvCacheManagerOptions& options);

  KvCacheManager& manager() { return m_; }
  const std::map<SeqId, RefSeq>& refs() const { return refs_; }
  const BlockPool& pool() const { return m_.pool(); }

  SeqId create(const std::string& salt = {});
  SeqId fork(SeqId parent);
  void free(SeqId seq);
  void truncate(SeqId seq, int64_t len);

  // Plans `batch`; when it fits, performs the copies and K/V writes and then
  // applies (or discards, simulating a failed forward). Returns the plan.
  // Checks along the way that the plan agrees with itself (slots against
  // table rows, new tokens' positions).
  CachePlan step(const std::vector<SeqAppend>& batch, bool discard = false);

  // Every invariant (manager's own and the independent ones below); returns
  // the first violation as a message, empty when all hold:
  //   - every live sequence reads its own digests through its block table;
  //   - pool refs equal table entries; free queue == blocks with ref 0;
  //   - the map and the hashed blocks agree;
  //   - a hashed block's contents never change while it stays hashed.
  std::string check();

  uint64_t value_at(int32_t slot) const { return kv_[static_cast<size_t>(slot)]; }

 private:
  KvCacheManager m_;
  std::vector<uint64_t> kv_;  // [n_blocks * block_size] simulated K/V rows
  std::map<SeqId, RefSeq> refs_;
  // hashed block -> (hash, contents when first seen hashed)
  std::unordered_map<BlockId, std::pair<BlockHash, std::vector<uint64_t>>> frozen_;
};

// Builds a manager or fails the test.
KvCacheManager make_manager(int32_t n_blocks, int32_t block_size = 16,
                            const std::string& extra_key = "test-model/f16");

}  // namespace folio::cache::cachetest
