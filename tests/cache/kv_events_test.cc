// KvEventLog and where the pool and manager record into it: coalescing of
// chained stored blocks and of removals, nothing while disabled, one
// all-cleared event for a cache reset, removals on eviction for reuse.
#include "cache/kv_events.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "cache/kv_cache_manager.h"

namespace folio::cache {
namespace kv_events_test {

BlockHash hash_of(uint64_t v) { return BlockHash{v, ~v}; }

TEST(KvEventLog, ChainedStoredBlocksAndRemovalsCoalesce) {
  KvEventLog log;
  const std::vector<int32_t> t1 = {1, 2}, t2 = {3, 4}, t3 = {5, 6};
  log.stored(false, {}, hash_of(1), t1);  // nothing while disabled
  log.removed(hash_of(1));
  log.all_cleared();
  EXPECT_TRUE(log.empty());

  log.set_enabled(true);
  log.stored(false, {}, hash_of(1), t1);
  log.stored(true, hash_of(1), hash_of(2), t2);  // extends the chain
  log.stored(true, hash_of(7), hash_of(3), t3);  // another parent: a new event
  log.removed(hash_of(9));
  log.removed(hash_of(8));
  log.all_cleared();
  log.removed(hash_of(2));
  const std::vector<KvEvent> ev = log.take();
  EXPECT_TRUE(log.empty());
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kStored);
  EXPECT_FALSE(ev[0].has_parent);
  EXPECT_EQ(ev[0].hashes, (std::vector<BlockHash>{hash_of(1), hash_of(2)}));
  EXPECT_EQ(ev[0].tokens, (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(ev[1].has_parent);
  EXPECT_EQ(ev[1].parent, hash_of(7));
  EXPECT_EQ(ev[1].hashes, (std::vector<BlockHash>{hash_of(3)}));
  EXPECT_EQ(ev[2].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(ev[2].hashes, (std::vector<BlockHash>{hash_of(9), hash_of(8)}));
  EXPECT_EQ(ev[3].kind, KvEvent::Kind::kAllCleared);
  EXPECT_EQ(ev[4].kind, KvEvent::Kind::kRemoved);  // not merged across the clear
}

// A manager with 3 usable blocks of 8 tokens: one 24-token sequence stores
// its first two blocks as one chain (the third is not full... until it is),
// eviction for reuse removes them, a reset is one all-cleared event.
TEST(KvEventLog, ManagerStoresEvictsAndClears) {
  KvCacheManagerOptions o;
  o.n_blocks = 4;
  o.block_size = 8;
  o.extra_key = "events";
  auto m = KvCacheManager::create(o);
  ASSERT_TRUE(m.ok());
  m->events().set_enabled(true);
  std::vector<int32_t> prompt(20);
  std::iota(prompt.begin(), prompt.end(), 100);
  const SeqId a = m->create_sequence();
  CachePlan plan;
  SeqAppend step{a, prompt, 0};
  ASSERT_TRUE(m->plan({&step, 1}, plan).ok());
  m->apply(plan);
  std::vector<KvEvent> ev = m->events().take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kStored);
  EXPECT_FALSE(ev[0].has_parent);
  ASSERT_EQ(ev[0].hashes.size(), 2u);
  EXPECT_EQ(ev[0].tokens, std::vector<int32_t>(prompt.begin(), prompt.begin() + 16));
  EXPECT_EQ(ev[0].hashes[0], m->pool().hash(m->block_table(a).ids()[0]));
  EXPECT_EQ(ev[0].hashes[1], m->pool().hash(m->block_table(a).ids()[1]));
  ASSERT_TRUE(m->free_sequence(a).ok());
  EXPECT_TRUE(m->events().empty());  // freed blocks stay cached

  // Another prompt needs all three blocks: the two cached ones are evicted.
  std::vector<int32_t> other(20, 7);
  const SeqId b = m->create_sequence();
  SeqAppend step2{b, other, 0};
  ASSERT_TRUE(m->plan({&step2, 1}, plan).ok());
  m->apply(plan);
  ev = m->events().take();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(ev[0].hashes.size(), 2u);
  EXPECT_EQ(ev[1].kind, KvEvent::Kind::kStored);
  EXPECT_EQ(ev[1].hashes.size(), 2u);

  m->clear_prefix_cache();
  ev = m->events().take();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kAllCleared);
}

}  // namespace
}  // namespace folio::cache
