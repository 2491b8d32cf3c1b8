// Draft (unverified) positions in the block manager: speculative decoding
// appends drafts that no prefix hash or KV event may publish until
// verify() keeps the accepted ones; rejected positions' blocks return to the
// pool. After each step the pool and the published hashes equal those of a
// manager that was fed only the accepted tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "cache/kv_cache_manager.h"

namespace folio::cache {
namespace kv_unverified_test {

KvCacheManager make(int32_t n_blocks) {
  KvCacheManagerOptions o;
  o.n_blocks = n_blocks;
  o.block_size = 8;
  o.extra_key = "unverified-test";
  auto m = KvCacheManager::create(o);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  m->events().set_enabled(true);
  return std::move(m).value();
}

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

Status step(KvCacheManager& m, SeqId s, const std::vector<int32_t>& tokens, int64_t drafts = 0) {
  SeqAppend a;
  a.seq = s;
  a.tokens = tokens;
  a.n_unverified = drafts;
  CachePlan p;
  FOLIO_RETURN_IF_ERROR(m.plan(std::span<const SeqAppend>(&a, 1), p));
  if (!p.fits()) return resource_exhausted("short");
  m.apply(p);
  return Status();
}

// Hashes of the pool's registered blocks, sorted.
std::vector<std::pair<uint64_t, uint64_t>> hashed(const KvCacheManager& m) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (BlockId b = 1; b < m.pool().n_blocks(); ++b) {
    if (m.pool().is_hashed(b)) out.emplace_back(m.pool().hash(b).lo, m.pool().hash(b).hi);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Hashes published as stored events.
std::vector<std::pair<uint64_t, uint64_t>> stored(KvCacheManager& m) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const KvEvent& e : m.events().take()) {
    if (e.kind != KvEvent::Kind::kStored) continue;
    for (const BlockHash& h : e.hashes) out.emplace_back(h.lo, h.hi);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(KvUnverified, DraftBlocksPublishNothingUntilVerified) {
  KvCacheManager m = make(16);
  KvCacheManager ref = make(16);
  const SeqId s = m.create_sequence();
  const SeqId r = ref.create_sequence();
  ASSERT_TRUE(step(m, s, range(0, 12)).ok());
  ASSERT_TRUE(step(ref, r, range(0, 12)).ok());
  EXPECT_EQ(stored(m), stored(ref));

  // One verified token (12) and 11 drafts (13..23): positions 8..23 fill two
  // blocks, but only positions up to 12 are verified: nothing new is hashed.
  ASSERT_TRUE(step(m, s, range(12, 12), 11).ok());
  EXPECT_EQ(m.n_unverified(s), 11);
  EXPECT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  EXPECT_TRUE(stored(m).empty());
  EXPECT_EQ(hashed(m).size(), 1u);

  // A sequence holding drafts takes no further step before verify().
  EXPECT_FALSE(step(m, s, {42}).ok());
  EXPECT_FALSE(m.fork(s).ok());
  EXPECT_FALSE(m.verify(s, 12).ok());  // below the verified length
  EXPECT_FALSE(m.verify(s, 25).ok());  // past the end

  // Four drafts accepted: positions 0..16 stay; block 1 (8..15) is now full
  // and verified, block 2 holds position 16 alone.
  ASSERT_TRUE(m.verify(s, 17).ok());
  ASSERT_TRUE(step(ref, r, range(12, 5)).ok());
  EXPECT_EQ(m.n_unverified(s), 0);
  EXPECT_EQ(m.seq_len(s), 17);
  EXPECT_EQ(stored(m), stored(ref));
  EXPECT_EQ(hashed(m), hashed(ref));
  EXPECT_EQ(m.pool().n_used(), ref.pool().n_used());
  EXPECT_EQ(m.pool().n_free(), ref.pool().n_free());
  EXPECT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();

  // Everything rejected: the verified length stays.
  ASSERT_TRUE(step(m, s, range(17, 7), 6).ok());
  ASSERT_TRUE(m.verify(s, 18).ok());
  ASSERT_TRUE(step(ref, r, range(17, 1)).ok());
  EXPECT_EQ(stored(m), stored(ref));
  EXPECT_EQ(hashed(m), hashed(ref));
  EXPECT_EQ(m.pool().n_used(), ref.pool().n_used());

  // Drafts left unverified when the sequence ends: its blocks return to the
  // pool, none hashed for a draft.
  ASSERT_TRUE(step(m, s, range(18, 14), 13).ok());
  EXPECT_EQ(m.pool().n_used(), 4);
  ASSERT_TRUE(m.free_sequence(s).ok());
  ASSERT_TRUE(ref.free_sequence(r).ok());
  EXPECT_EQ(m.pool().n_used(), 0);
  EXPECT_TRUE(stored(m).empty());
  EXPECT_EQ(hashed(m), hashed(ref));
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvUnverified, AllAcceptedThenPlainStepsMatchUnspeculated) {
  KvCacheManager m = make(32);
  KvCacheManager ref = make(32);
  const SeqId s = m.create_sequence();
  const SeqId r = ref.create_sequence();
  ASSERT_TRUE(step(m, s, range(100, 3)).ok());
  ASSERT_TRUE(step(ref, r, range(100, 3)).ok());
  // Each round: 1 verified + 4 drafts, all accepted (verify keeps them all).
  int32_t next = 103;
  for (int round = 0; round < 6; ++round) {
    ASSERT_TRUE(step(m, s, range(next, 5), 4).ok());
    ASSERT_TRUE(m.verify(s, m.seq_len(s)).ok());
    ASSERT_TRUE(step(ref, r, range(next, 5)).ok());
    next += 5;
    EXPECT_EQ(stored(m), stored(ref)) << round;
    EXPECT_TRUE(m.check_invariants().ok());
  }
  ASSERT_TRUE(step(m, s, range(next, 2)).ok());
  ASSERT_TRUE(step(ref, r, range(next, 2)).ok());
  EXPECT_EQ(stored(m), stored(ref));
  EXPECT_EQ(hashed(m), hashed(ref));
}

TEST(KvUnverified, BadDraftCountsAreRefused) {
  KvCacheManager m = make(8);
  const SeqId s = m.create_sequence();
  EXPECT_FALSE(step(m, s, range(0, 3), 4).ok());
  EXPECT_FALSE(step(m, s, range(0, 3), -1).ok());
  EXPECT_TRUE(step(m, s, range(0, 3), 3).ok());  // every token a draft: allowed
  EXPECT_TRUE(m.verify(s, 0).ok());
  EXPECT_EQ(m.seq_len(s), 0);
  EXPECT_EQ(m.pool().n_used(), 0);
  EXPECT_TRUE(m.check_invariants().ok());
}

}  // namespace kv_unverified_test
}  // namespace folio::cache
