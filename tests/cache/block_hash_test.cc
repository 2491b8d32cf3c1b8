#include "cache/block_hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <unordered_set>
#include <vector>

namespace folio::cache {
namespace block_hash_test {

std::vector<int32_t> tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(BlockHasher, ChainCoversTheWholePrefix) {
  const BlockHasher hasher("model/f16");
  const auto b0 = tokens(16, 0), b1 = tokens(16, 16), other = tokens(16, 1000);
  const BlockHash h0 = hasher.chain(hasher.root(), b0);
  const BlockHash h1 = hasher.chain(h0, b1);
  // Deterministic, also across instances.
  EXPECT_EQ(h1,
            BlockHasher("model/f16").chain(BlockHasher("model/f16").chain(hasher.root(), b0), b1));
  // Same block tokens after another prefix: another hash.
  EXPECT_FALSE(h1 == hasher.chain(hasher.chain(hasher.root(), other), b1));
  // Order within the block matters.
  auto swapped = b1;
  std::swap(swapped[3], swapped[4]);
  EXPECT_FALSE(h1 == hasher.chain(h0, swapped));
  EXPECT_FALSE(h0 == h1);
}

TEST(BlockHasher, ExtraKeySeedAndSaltSeparateCaches) {
  const auto b0 = tokens(16, 0);
  const BlockHasher f16("model/f16"), q8("model/q8_0"), seeded("model/f16", 1234);
  EXPECT_FALSE(f16.root() == q8.root());
  EXPECT_FALSE(f16.root() == seeded.root());
  EXPECT_FALSE(f16.chain(f16.root(), b0) == q8.chain(q8.root(), b0));
  EXPECT_FALSE(f16.chain(f16.root(), b0) == seeded.chain(seeded.root(), b0));
  EXPECT_EQ(f16.salted_root(""), f16.root());
  EXPECT_FALSE(f16.salted_root("tenant-a") == f16.root());
  EXPECT_FALSE(f16.salted_root("tenant-a") == f16.salted_root("tenant-b"));
  EXPECT_EQ(f16.salted_root("tenant-a"), BlockHasher("model/f16").salted_root("tenant-a"));
}

TEST(BlockHasher, ASaltCannotImpersonateABlock) {
  // A salt whose bytes equal a block's token bytes still yields another root
  // than that block's hash (domain separation).
  const BlockHasher hasher("m");
  const auto b0 = tokens(8, 7);
  std::string salt(b0.size() * sizeof(int32_t), '\0');
  std::memcpy(salt.data(), b0.data(), salt.size());
  EXPECT_FALSE(hasher.salted_root(salt) == hasher.chain(hasher.root(), b0));
}

TEST(BlockHasher, DistinctBlocksGetDistinctHashes) {
  // Fails if any token, or the parent, were left out of the hash.
  const BlockHasher hasher("m");
  std::unordered_set<BlockHash, BlockHashHasher> seen;
  std::unordered_set<uint64_t> lows, highs;
  for (int32_t i = 0; i < 4096; ++i) {
    std::vector<int32_t> t(16, 0);
    t[static_cast<size_t>(i % 16)] = i / 16 + 1;  // one token differs, anywhere in the block
    const BlockHash h = hasher.chain(hasher.root(), t);
    seen.insert(h);
    lows.insert(h.lo);
    highs.insert(h.hi);
    seen.insert(hasher.chain(h, t));  // and as a second block
  }
  EXPECT_EQ(seen.size(), 2u * 4096u);
  EXPECT_EQ(lows.size(), 4096u);
  EXPECT_EQ(highs.size(), 4096u);
  EXPECT_EQ(to_string(BlockHash{1, 2}), "00000000000000020000000000000001");
}

}  // namespace
}  // namespace folio::cache
