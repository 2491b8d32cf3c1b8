// cache::StatePool: slot allocation for live sequences, checkpoint slots in
// LRU order, planning (peek_free) against acquire(), invariants.
#include "cache/state_pool.h"

#include <gtest/gtest.h>

namespace folio::cache {
namespace state_pool_test {

BlockHash h(uint64_t v) {
  return BlockHash{v, ~v};
}

TEST(StatePool, AcquireReleaseReuseMostRecentFirst) {
  Result<StatePool> p = StatePool::create(3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p->acquire(), 0);
  EXPECT_EQ(*p->acquire(), 1);
  EXPECT_EQ(*p->acquire(), 2);
  EXPECT_EQ(p->acquire().status().code(), StatusCode::kResourceExhausted);
  p->release(1);
  p->release(0);
  EXPECT_EQ(p->n_free(), 2);
  EXPECT_EQ(*p->acquire(), 0);  // the most recently released
  EXPECT_EQ(*p->acquire(), 1);
  EXPECT_TRUE(p->check_invariants().ok());
  EXPECT_FALSE(StatePool::create(0).ok());
}

TEST(StatePool, CheckpointsTakeFreeSlotsAndAreEvictedLeastRecentlyUsed) {
  StatePool p = std::move(StatePool::create(4)).value();
  const int32_t seq = *p.acquire();
  std::vector<int32_t> free;
  p.peek_free(2, free);
  ASSERT_EQ(free.size(), 2u);
  p.store_checkpoint(free[0], h(1));
  p.store_checkpoint(free[1], h(2));
  EXPECT_EQ(p.n_checkpoints(), 2);
  EXPECT_EQ(p.find(h(1)), free[0]);
  EXPECT_EQ(p.find(h(3)), -1);
  EXPECT_TRUE(p.check_invariants().ok()) << p.check_invariants().to_string();
  p.touch(free[0]);  // h(1) is now the most recently used
  // Plain slots go first, then the least recently used checkpoint (h(2)).
  std::vector<int32_t> order;
  p.peek_free(3, order);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_FALSE(p.is_checkpoint(order[0]));
  EXPECT_EQ(order[1], free[1]);
  EXPECT_EQ(order[2], free[0]);
  EXPECT_EQ(*p.acquire(), order[0]);
  EXPECT_EQ(*p.acquire(), order[1]);  // evicts h(2)
  EXPECT_EQ(p.find(h(2)), -1);
  EXPECT_EQ(p.n_evicted(), 1u);
  EXPECT_EQ(p.n_checkpoints(), 1);
  // A newer checkpoint replacing an old one counts as an eviction too.
  p.store_checkpoint(free[0], h(5));
  EXPECT_EQ(p.find(h(1)), -1);
  EXPECT_EQ(p.find(h(5)), free[0]);
  EXPECT_EQ(p.n_evicted(), 2u);
  // Every slot held or checkpointed: the last acquire evicts the checkpoint.
  EXPECT_EQ(*p.acquire(), free[0]);
  EXPECT_EQ(p.n_checkpoints(), 0);
  EXPECT_EQ(p.acquire().status().code(), StatusCode::kResourceExhausted);
  p.release(seq);
  EXPECT_TRUE(p.check_invariants().ok()) << p.check_invariants().to_string();
}

TEST(StatePool, DropAndClearCheckpoints) {
  StatePool p = std::move(StatePool::create(3)).value();
  p.store_checkpoint(0, h(1));
  p.store_checkpoint(1, h(2));
  p.drop_checkpoint(0);
  p.drop_checkpoint(2);  // not a checkpoint: nothing happens
  EXPECT_EQ(p.n_checkpoints(), 1);
  EXPECT_FALSE(p.is_checkpoint(0));
  p.clear_checkpoints();
  EXPECT_EQ(p.n_checkpoints(), 0);
  EXPECT_EQ(p.n_free(), 3);
  EXPECT_EQ(p.n_evicted(), 0u);
  EXPECT_TRUE(p.check_invariants().ok()) << p.check_invariants().to_string();
}

}  // namespace
}  // namespace folio::cache
