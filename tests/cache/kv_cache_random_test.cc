// Randomized model-based test of the KV cache manager: thousands of random
// operations (batched steps with new sequences taking cached prefixes,
// decode, chunked prefill, copy-on-write, failed forwards, truncate, fork,
// free, defrag, cache resets) against the Harness's reference of every
// sequence and simulated K/V memory, with every invariant checked after every
// operation: refs == table entries, free queue == blocks with ref 0, map and
// hashed blocks agree, cached contents never change, every sequence reads its
// own K/V. Plans that do not fit must leave the state bit-for-bit unchanged.
// Seeded and deterministic; small pools so eviction and shortage are common.
// Windowed runs (a sliding window of W tokens): blocks leave the window as
// sequences grow, cached prefixes need only the window before the hit, and
// truncation goes to truncation_point().
// Every run also replays the manager's KV events (cache/kv_events.h) as a
// router would: after every operation the replayed set of stored hashes
// equals the pool's registered hashes, every stored block's hash is the chain
// of its parent and its token ids, and no event stores a hash twice or
// removes one it never stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "cache/harness.h"
#include "cache/kv_cache_manager.h"

namespace folio::cache {
namespace kv_cache_random_test {

using cachetest::Harness;

struct Config {
  uint32_t seed;
  int32_t n_blocks;
  int32_t block_size;
  bool caching;
  int32_t n_ops;
  int32_t window = 0;
};

class RandomRun {
 public:
  explicit RandomRun(const Config& c) : c_(c), h_(options(c)), rng_(c.seed) {
    // Shared prompt stems over a 3-token alphabet: many equal blocks, so
    // lookups hit often and the chain (not the block) must tell them apart.
    for (int k = 0; k < 3; ++k) {
      std::vector<int32_t> stem(static_cast<size_t>(c.block_size) * 5);
      for (int32_t& t : stem) t = static_cast<int32_t>(rng_() % 3);
      stems_.push_back(std::move(stem));
    }
    h_.manager().events().set_enabled(true);
  }

  void run() {
    for (int32_t op = 0; op < c_.n_ops; ++op) {
      const uint32_t r = rng_() % 100;
      if (r < 40)
        step(/*with_new=*/true);
      else if (r < 55)
        step(/*with_new=*/false);
      else if (r < 65)
        truncate();
      else if (r < 73)
        fork();
      else if (r < 88)
        free_one();
      else if (r < 97)
        defrag();
      else
        h_.manager().clear_prefix_cache();
      const std::string err = h_.check();
      ASSERT_EQ(err, "") << "seed " << c_.seed << " op " << op << " (" << r << ")\n"
                         << h_.manager().debug_dump();
      ASSERT_NO_FATAL_FAILURE(replay_events()) << "seed " << c_.seed << " op " << op;
    }
    while (!h_.refs().empty()) h_.free(h_.refs().begin()->first);
    EXPECT_TRUE(h_.pool().idle());
    for (BlockId b = 0; b < h_.pool().n_blocks(); ++b) EXPECT_EQ(h_.pool().ref(b), 0);
    EXPECT_TRUE(h_.manager().defrag());
    EXPECT_EQ(h_.check(), "");
    counters_.print(c_.seed);
  }

 private:
  static KvCacheManagerOptions options(const Config& c) {
    KvCacheManagerOptions o;
    o.n_blocks = c.n_blocks;
    o.block_size = c.block_size;
    o.enable_prefix_caching = c.caching;
    o.extra_key = "random-model";
    o.window = c.window;
    return o;
  }

  std::vector<SeqId> live() const {
    std::vector<SeqId> ids;
    for (const auto& [id, r] : h_.refs()) ids.push_back(id);
    return ids;
  }
  SeqId pick() {
    const auto ids = live();
    return ids[rng_() % ids.size()];
  }
  int32_t token() { return static_cast<int32_t>(rng_() % 3); }

  void step(bool with_new) {
    std::vector<SeqAppend> batch;
    std::vector<std::vector<int32_t>> chunks;
    chunks.reserve(16);
    for (const SeqId s : live()) {
      if (rng_() % 2) continue;
      std::vector<int32_t> t(1 +
                             rng_() % (with_new ? 2u * static_cast<uint32_t>(c_.block_size) : 2u));
      for (int32_t& x : t) x = token();
      chunks.push_back(std::move(t));
      batch.push_back({s, chunks.back(), 0});
    }
    if (with_new && h_.refs().size() < 12) {
      const SeqId s = h_.create(rng_() % 4 == 0 ? "salt" : "");
      const auto& stem = stems_[rng_() % stems_.size()];
      std::vector<int32_t> prompt(
          stem.begin(), stem.begin() + static_cast<ptrdiff_t>(rng_() % (stem.size() + 1)));
      const size_t own = rng_() % (2u * static_cast<uint32_t>(c_.block_size));
      for (size_t i = 0; i < own; ++i) prompt.push_back(token());
      const PrefixHit hit = h_.manager().lookup(s, prompt, rng_() % 2 == 0);
      EXPECT_EQ(hit.n_tokens % c_.block_size, 0);
      EXPECT_EQ(hit.blocks.size(), static_cast<size_t>(hit.n_tokens / c_.block_size));
      // Without a window any prefix of a hit is one; with a window only what
      // lookup() returns for a shorter limit.
      int64_t n_cached = c_.block_size * static_cast<int64_t>(rng_() % (hit.blocks.size() + 1));
      if (c_.window > 0) {
        const PrefixHit part = h_.manager().lookup(s, prompt, true, n_cached);
        EXPECT_LE(part.n_tokens, n_cached);
        for (size_t k = 0; k < part.blocks.size(); ++k) {
          const bool before_window =
              static_cast<int64_t>(k + 1) * c_.block_size <= part.n_tokens - c_.window + 1 &&
              k + 1 < part.blocks.size();
          EXPECT_EQ(part.blocks[k] == kNullBlock, before_window) << k;
        }
        n_cached = part.n_tokens;
        counters_.windowed_hits += n_cached > 0 ? 1 : 0;
      }
      const size_t n = static_cast<size_t>(n_cached) +
                       rng_() % (prompt.size() - static_cast<size_t>(n_cached) + 1);
      prompt.resize(n);  // a first chunk of the prompt
      chunks.push_back(std::move(prompt));
      batch.push_back({s, chunks.back(), n_cached});
      counters_.cached_tokens += n_cached;
    }
    std::shuffle(batch.begin(), batch.end(), rng_);
    const std::string before = h_.manager().debug_dump();
    CachePlan plan;
    ASSERT_TRUE(h_.manager().plan(batch, plan).ok());
    if (!plan.fits()) {
      ASSERT_GT(plan.n_missing_blocks, 0);
      ASSERT_EQ(plan.n_blocks_needed - plan.n_missing_blocks, h_.pool().n_free());
      ASSERT_EQ(h_.manager().debug_dump(), before) << "a failed plan changed the state";
      ++counters_.short_plans;
      if (!h_.refs().empty()) h_.free(pick());  // preempt
      return;
    }
    const bool discard = rng_() % 10 == 0;
    const int32_t free_before = h_.pool().n_free();
    const CachePlan done = h_.step(batch, discard);
    ASSERT_TRUE(done.fits());
    counters_.copies += static_cast<int64_t>(done.copies.size());
    if (discard) {
      ++counters_.discards;
      EXPECT_EQ(h_.pool().n_free(), free_before);
    } else {
      // Blocks taken, plus shared originals every holder copied away from.
      std::vector<BlockId> srcs;
      for (const BlockCopy& c : done.copies) srcs.push_back(c.src);
      std::sort(srcs.begin(), srcs.end());
      srcs.erase(std::unique(srcs.begin(), srcs.end()), srcs.end());
      const auto released =
          std::count_if(srcs.begin(), srcs.end(), [&](BlockId b) { return h_.pool().is_free(b); });
      // With a window, blocks leaving it may be released too.
      const int32_t want = free_before - done.n_blocks_needed + static_cast<int32_t>(released);
      if (c_.window == 0) {
        EXPECT_EQ(h_.pool().n_free(), want);
      } else {
        EXPECT_GE(h_.pool().n_free(), want);
      }
    }
  }

  void truncate() {
    if (h_.refs().empty()) return;
    const SeqId s = pick();
    const int64_t len = h_.manager().seq_len(s);
    const auto want = static_cast<int64_t>(rng_() % static_cast<uint64_t>(len + 1));
    const int64_t point = h_.manager().truncation_point(s, want);
    if (point != want) {
      EXPECT_EQ(point, 0);
      EXPECT_FALSE(h_.manager().truncate(s, want).ok());
      ++counters_.refused_truncations;
    }
    h_.truncate(s, point);
  }
  void fork() {
    if (h_.refs().empty() || h_.refs().size() >= 12) return;
    h_.fork(pick());
    ++counters_.forks;
  }
  void free_one() {
    if (!h_.refs().empty()) h_.free(pick());
  }

  // Applies the events since the last call to the router's view and compares
  // it with the pool.
  void replay_events() {
    const int32_t bs = c_.block_size;
    for (const KvEvent& e : h_.manager().events().take()) {
      switch (e.kind) {
        case KvEvent::Kind::kStored: {
          ASSERT_EQ(e.tokens.size(), e.hashes.size() * static_cast<size_t>(bs));
          BlockHash parent = e.has_parent ? e.parent : hasher_.root();
          for (size_t i = 0; i < e.hashes.size(); ++i) {
            const auto tokens = std::span<const int32_t>(e.tokens).subspan(
                i * static_cast<size_t>(bs), static_cast<size_t>(bs));
            BlockHash h = hasher_.chain(parent, tokens);
            // A first block of a salted sequence chains from the salted root.
            if (h != e.hashes[i] && i == 0 && !e.has_parent)
              h = hasher_.chain(hasher_.salted_root("salt"), tokens);
            ASSERT_EQ(h, e.hashes[i]) << "stored hash is not the chain of its tokens";
            ASSERT_TRUE(stored_.insert(h).second) << "stored twice: " << to_string(h);
            parent = h;
          }
          ++counters_.stored_events;
          break;
        }
        case KvEvent::Kind::kRemoved:
          for (const BlockHash& h : e.hashes) {
            ASSERT_EQ(stored_.erase(h), 1u) << "removed but never stored: " << to_string(h);
          }
          ++counters_.removed_events;
          break;
        case KvEvent::Kind::kAllCleared:
          stored_.clear();
          break;
      }
    }
    std::unordered_set<BlockHash, BlockHashHasher> pool;
    for (BlockId b = 1; b < h_.pool().n_blocks(); ++b) {
      if (h_.pool().is_hashed(b)) pool.insert(h_.pool().hash(b));
    }
    ASSERT_EQ(stored_.size(), pool.size());
    for (const BlockHash& h : pool) ASSERT_TRUE(stored_.count(h)) << "never stored: " << to_string(h);
  }
  void defrag() {
    if (rng_() % 3 == 0) {  // the engine went idle: every sequence ended
      while (!h_.refs().empty()) h_.free(h_.refs().begin()->first);
    }
    const bool idle = h_.pool().idle();
    const std::string before = h_.manager().debug_dump();
    const bool done = h_.manager().defrag();
    EXPECT_EQ(done, idle);
    if (!done) {
      EXPECT_EQ(h_.manager().debug_dump(), before);
    }
    if (done) {
      // Ascending within each segment of the free queue.
      const auto q = h_.pool().free_queue();
      for (size_t i = 1; i < q.size(); ++i) {
        if (h_.pool().is_hashed(q[i]) == h_.pool().is_hashed(q[i - 1])) {
          EXPECT_LT(q[i - 1], q[i]);
        }
      }
      ++counters_.defrags;
    }
  }

  struct Counters {
    int64_t cached_tokens = 0, short_plans = 0, copies = 0, discards = 0, forks = 0, defrags = 0;
    int64_t windowed_hits = 0, refused_truncations = 0, stored_events = 0, removed_events = 0;
    void print(uint32_t seed) const {
      // Makes the coverage of a run visible in the test log.
      std::printf(
          "seed %u: cached tokens %lld, short plans %lld, copies %lld, discards %lld, "
          "forks %lld, defrags %lld, windowed hits %lld, refused truncations %lld, "
          "stored events %lld, removed events %lld\n",
          seed, static_cast<long long>(cached_tokens), static_cast<long long>(short_plans),
          static_cast<long long>(copies), static_cast<long long>(discards),
          static_cast<long long>(forks), static_cast<long long>(defrags),
          static_cast<long long>(windowed_hits), static_cast<long long>(refused_truncations),
          static_cast<long long>(stored_events), static_cast<long long>(removed_events));
    }
  };

  Config c_;
  Harness h_;
  std::mt19937 rng_;
  std::vector<std::vector<int32_t>> stems_;
  Counters counters_;
  BlockHasher hasher_{"random-model"};  // the manager's extra key, seed 0
  std::unordered_set<BlockHash, BlockHashHasher> stored_;  // the router's view

 public:
  const Counters& counters() const { return counters_; }
};

TEST(KvCacheManagerRandom, MatchesTheReferenceModel) {
  const std::vector<Config> configs = {
      {1, 24, 8, true, 2500},  {2, 40, 16, true, 2500}, {3, 12, 8, true, 2500},
      {4, 33, 8, false, 1500}, {5, 64, 32, true, 1500}, {6, 20, 16, true, 2500},
  };
  int64_t cached = 0, copies = 0, short_plans = 0, stored = 0, removed = 0;
  for (const Config& c : configs) {
    RandomRun run(c);
    run.run();
    if (::testing::Test::HasFatalFailure()) return;
    cached += run.counters().cached_tokens;
    copies += run.counters().copies;
    short_plans += run.counters().short_plans;
    stored += run.counters().stored_events;
    removed += run.counters().removed_events;
  }
  // The runs must have exercised the interesting paths.
  EXPECT_GT(stored, 0);
  EXPECT_GT(removed, 0);
  EXPECT_GT(cached, 0);
  EXPECT_GT(copies, 0);
  EXPECT_GT(short_plans, 0);
}

TEST(KvCacheManagerRandom, SlidingWindowMatchesTheReferenceModel) {
  const std::vector<Config> configs = {
      {11, 24, 8, true, 2500, 5},  {12, 40, 16, true, 2500, 20}, {13, 16, 8, true, 2500, 1},
      {14, 33, 8, false, 1500, 12}, {15, 30, 8, true, 2500, 9},   {16, 64, 16, true, 2000, 40},
  };
  int64_t hits = 0, refused = 0, copies = 0, short_plans = 0;
  for (const Config& c : configs) {
    RandomRun run(c);
    run.run();
    if (::testing::Test::HasFatalFailure()) return;
    hits += run.counters().windowed_hits;
    refused += run.counters().refused_truncations;
    copies += run.counters().copies;
    short_plans += run.counters().short_plans;
  }
  EXPECT_GT(hits, 0);
  EXPECT_GT(refused, 0);
  EXPECT_GT(copies, 0);
  EXPECT_GT(short_plans, 0);
}

}  // namespace
}  // namespace folio::cache
