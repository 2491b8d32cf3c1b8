#include "cache/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio::cache {
namespace block_pool_test {

BlockHash h(uint64_t v) {
  return BlockHash{v, ~v};
}

BlockPool make(int32_t n_blocks, int32_t block_size = 16) {
  auto p = BlockPool::create(n_blocks, block_size);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

#define EXPECT_VALID(pool)                        \
  do {                                            \
    const Status st_ = (pool).check_invariants(); \
    EXPECT_TRUE(st_.ok()) << st_.to_string();     \
  } while (0)

TEST(BlockPool, BlockSizeMustBeAPowerOfTwoFrom8To128) {
  for (const int32_t bs : {8, 16, 32, 64, 128}) EXPECT_TRUE(BlockPool::create(4, bs).ok()) << bs;
  for (const int32_t bs : {-16, 0, 1, 4, 7, 12, 24, 100, 256}) {
    const auto p = BlockPool::create(4, bs);
    ASSERT_FALSE(p.ok()) << bs;
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(std::to_string(bs)), std::string::npos);
  }
  EXPECT_TRUE(validate_block_size(kDefaultBlockSize).ok());
}

TEST(BlockPool, SizeLimits) {
  EXPECT_FALSE(BlockPool::create(0).ok());
  EXPECT_FALSE(BlockPool::create(1).ok());
  EXPECT_FALSE(BlockPool::create(-3).ok());
  EXPECT_FALSE(BlockPool::create(1 << 26, 64).ok());  // slots beyond int32
  const BlockPool p = make(2);
  EXPECT_EQ(p.n_usable(), 1);
  EXPECT_EQ(p.n_free(), 1);
  EXPECT_VALID(p);
}

TEST(BlockPool, HandsOutAscendingIdsAndNeverTheNullBlock) {
  BlockPool p = make(9);
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{1, 2, 3, 4, 5, 6, 7, 8}));
  for (BlockId want = 1; want < 9; ++want) {
    EXPECT_EQ(p.allocate(), want);
    EXPECT_EQ(p.ref(want), 1);
  }
  EXPECT_EQ(p.n_free(), 0);
  EXPECT_EQ(p.n_used(), 8);
  EXPECT_EQ(p.front(), kNullBlock);
  EXPECT_FALSE(p.is_free(kNullBlock));
  EXPECT_EQ(p.ref(kNullBlock), 0);
  EXPECT_VALID(p);
}

TEST(BlockPoolDeathTest, AllocatingFromAnEmptyPoolIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  BlockPool p = make(2);
  (void)p.allocate();
  EXPECT_DEATH((void)p.allocate(), "exhausted");
  EXPECT_DEATH(p.release(kNullBlock), "release");
}

TEST(BlockPool, RefCountsAndSharing) {
  BlockPool p = make(4);
  const BlockId a = p.allocate();
  p.touch(a);
  EXPECT_EQ(p.ref(a), 2);
  p.release(a);
  EXPECT_EQ(p.ref(a), 1);
  EXPECT_FALSE(p.is_free(a));
  p.release(a);
  EXPECT_TRUE(p.is_free(a));
  EXPECT_EQ(p.n_free(), 3);
  EXPECT_VALID(p);
}

TEST(BlockPool, UnhashedBlocksAreEvictedFirstAndReusedMostRecentFirst) {
  BlockPool p = make(7);
  std::vector<BlockId> b;
  for (int i = 0; i < 6; ++i) b.push_back(p.allocate());
  ASSERT_TRUE(p.register_hash(b[0], h(10)));
  ASSERT_TRUE(p.register_hash(b[1], h(11)));
  p.release(b[0]);  // hashed: tail
  p.release(b[2]);  // unhashed: front
  p.release(b[1]);  // hashed: tail
  p.release(b[3]);  // unhashed: front
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{b[3], b[2], b[0], b[1]}));
  EXPECT_VALID(p);
  EXPECT_EQ(p.allocate(), b[3]);
  EXPECT_EQ(p.allocate(), b[2]);
  EXPECT_EQ(p.n_cached(), 2);
  EXPECT_EQ(p.allocate(), b[0]);  // evicted: its hash leaves the map
  EXPECT_EQ(p.find(h(10)), kNullBlock);
  EXPECT_FALSE(p.is_hashed(b[0]));
  EXPECT_EQ(p.find(h(11)), b[1]);
  EXPECT_VALID(p);
}

TEST(BlockPool, HashedBlocksAreEvictedInLruOrder) {
  BlockPool p = make(6);
  std::vector<BlockId> b;
  for (int i = 0; i < 5; ++i) {
    b.push_back(p.allocate());
    ASSERT_TRUE(p.register_hash(b.back(), h(100 + static_cast<uint64_t>(i))));
  }
  for (const int i : {2, 4, 0, 3, 1}) p.release(b[static_cast<size_t>(i)]);
  // Reviving a cached block takes it out of the queue; freeing it again makes
  // it the most recently used.
  ASSERT_EQ(p.find(h(104)), b[4]);
  p.touch(b[4]);
  EXPECT_EQ(p.ref(b[4]), 1);
  EXPECT_EQ(p.n_free(), 4);
  EXPECT_TRUE(p.is_hashed(b[4]));
  EXPECT_VALID(p);
  p.release(b[4]);
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{b[2], b[0], b[3], b[1], b[4]}));
  for (const int i : {2, 0, 3, 1, 4}) {
    EXPECT_EQ(p.allocate(), b[static_cast<size_t>(i)]);
    EXPECT_EQ(p.find(h(100 + static_cast<uint64_t>(i))), kNullBlock);
    EXPECT_EQ(p.n_cached(), 5 - p.n_used());
    EXPECT_VALID(p);
  }
}

TEST(BlockPool, ReleaseReverseQueuesTheTailFirst) {
  BlockPool p = make(5);
  std::vector<BlockId> seq;
  for (int i = 0; i < 4; ++i) {
    seq.push_back(p.allocate());
    ASSERT_TRUE(p.register_hash(seq.back(), h(static_cast<uint64_t>(i) + 1)));
  }
  p.release_reverse(seq);
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{seq[3], seq[2], seq[1], seq[0]}));
  EXPECT_VALID(p);
}

TEST(BlockPool, RegisterKeepsTheFirstBlockOfAHash) {
  BlockPool p = make(4);
  const BlockId a = p.allocate();
  const BlockId b = p.allocate();
  EXPECT_TRUE(p.register_hash(a, h(1)));
  EXPECT_FALSE(p.register_hash(b, h(1)));
  EXPECT_EQ(p.find(h(1)), a);
  EXPECT_FALSE(p.is_hashed(b));
  EXPECT_EQ(p.hash(a), h(1));
  EXPECT_VALID(p);
}

TEST(BlockPool, UnregisterMovesAFreeBlockToTheUnhashedSegment) {
  BlockPool p = make(5);
  std::vector<BlockId> b;
  for (int i = 0; i < 4; ++i) b.push_back(p.allocate());
  ASSERT_TRUE(p.register_hash(b[0], h(1)));
  ASSERT_TRUE(p.register_hash(b[1], h(2)));
  p.release(b[0]);
  p.release(b[1]);
  p.release(b[2]);
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{b[2], b[0], b[1]}));
  p.unregister(b[1]);
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{b[1], b[2], b[0]}));
  EXPECT_EQ(p.find(h(2)), kNullBlock);
  p.unregister(b[1]);  // no-op
  p.unregister(b[3]);  // held, unhashed: no-op
  EXPECT_VALID(p);
  p.clear_cache();
  EXPECT_EQ(p.n_cached(), 0);
  EXPECT_VALID(p);
}

TEST(BlockPool, DefragRestoresAscendingIdsAndKeepsHashes) {
  BlockPool p = make(9);
  std::vector<BlockId> b;
  for (int i = 0; i < 8; ++i) b.push_back(p.allocate());
  ASSERT_TRUE(p.register_hash(b[6], h(6)));
  ASSERT_TRUE(p.register_hash(b[1], h(1)));
  EXPECT_FALSE(p.defrag());  // busy
  for (const int i : {5, 1, 7, 0, 6, 3, 2}) p.release(b[static_cast<size_t>(i)]);
  EXPECT_FALSE(p.defrag());  // b[4] still held
  const std::string busy = p.debug_dump();
  EXPECT_FALSE(p.defrag());
  EXPECT_EQ(p.debug_dump(), busy);
  p.release(b[4]);
  EXPECT_NE(p.free_queue(), (std::vector<BlockId>{1, 3, 4, 5, 6, 8, 2, 7}));
  EXPECT_TRUE(p.defrag());
  // Unhashed ascending, then hashed ascending.
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{1, 3, 4, 5, 6, 8, 2, 7}));
  EXPECT_EQ(p.find(h(1)), 2);
  EXPECT_EQ(p.find(h(6)), 7);
  EXPECT_VALID(p);
  p.clear_cache();
  EXPECT_TRUE(p.defrag());
  EXPECT_EQ(p.free_queue(), (std::vector<BlockId>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_VALID(p);
}

TEST(BlockPool, DumpsDifferExactlyWhenTheStateDiffers) {
  BlockPool p = make(4);
  const BlockId a = p.allocate();
  ASSERT_TRUE(p.register_hash(a, h(5)));
  EXPECT_VALID(p);
  BlockPool q = p;
  q.release(a);
  EXPECT_VALID(q);
  // Dumps differ exactly when the state differs.
  EXPECT_NE(p.debug_dump(), q.debug_dump());
  BlockPool r = p;
  EXPECT_EQ(p.debug_dump(), r.debug_dump());
}

}  // namespace
}  // namespace folio::cache
