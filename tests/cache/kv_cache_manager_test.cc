// KvCacheManager: the scenarios of the paged-KV issue (truncation, defrag,
// bursts, prefix reuse, LRU eviction, failed plans, fork + copy-on-write),
// each run through the Harness so that every step is also checked against
// simulated K/V contents.
#include "cache/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "cache/harness.h"

namespace folio::cache {
namespace kv_cache_manager_test {

using cachetest::Harness;

KvCacheManagerOptions options(int32_t n_blocks, int32_t block_size = 16, bool caching = true,
                              std::string extra_key = "test-model/f16") {
  KvCacheManagerOptions o;
  o.n_blocks = n_blocks;
  o.block_size = block_size;
  o.enable_prefix_caching = caching;
  o.extra_key = std::move(extra_key);
  return o;
}

std::vector<int32_t> iota_tokens(int32_t n, int32_t first = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

#define EXPECT_CONSISTENT(h) EXPECT_EQ((h).check(), "")

TEST(KvCacheManager, RejectsBadOptions) {
  EXPECT_FALSE(KvCacheManager::create(options(64, 12)).ok());
  EXPECT_FALSE(KvCacheManager::create(options(64, 256)).ok());
  EXPECT_FALSE(KvCacheManager::create(options(1)).ok());
  EXPECT_TRUE(KvCacheManager::create(options(2, 8)).ok());
}

TEST(KvCacheManager, SlotMappingFollowsTheBlockTable) {
  Harness h(options(8, 16));
  const SeqId s = h.create();
  const CachePlan p = h.step({{s, iota_tokens(20)}});
  ASSERT_TRUE(p.fits());
  // Fresh pool: blocks 1 and 2.
  EXPECT_EQ(std::vector<BlockId>(h.manager().block_table(s).ids().begin(),
                                 h.manager().block_table(s).ids().end()),
            (std::vector<BlockId>{1, 2}));
  ASSERT_EQ(p.slot_mapping.size(), 20u);
  for (int32_t i = 0; i < 20; ++i) EXPECT_EQ(p.slot_mapping[static_cast<size_t>(i)], 16 + i);
  const CachePlan p2 = h.step({{s, iota_tokens(13, 100)}});  // fills block 2, opens block 3
  ASSERT_EQ(p2.slot_mapping.size(), 13u);
  EXPECT_EQ(p2.slot_mapping.front(), 2 * 16 + 4);
  EXPECT_EQ(p2.slot_mapping[11], 2 * 16 + 15);
  EXPECT_EQ(p2.slot_mapping[12], 3 * 16 + 0);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, TruncateFreesExactlyTheBlocksNoLongerNeeded) {
  Harness h(options(65, 16));  // 64 usable blocks + the null block
  const BlockPool& pool = h.pool();
  ASSERT_EQ(pool.n_free(), 64);
  const SeqId s = h.create();
  ASSERT_TRUE(h.step({{s, iota_tokens(512)}}).fits());
  EXPECT_EQ(pool.n_used(), 32);
  EXPECT_EQ(pool.n_free(), 32);
  h.truncate(s, 256);
  EXPECT_EQ(pool.n_free(), 32 + 16);  // exactly 16 blocks freed
  EXPECT_EQ(h.manager().block_table(s).size(), 16);
  EXPECT_CONSISTENT(h);
  h.truncate(s, 16);
  EXPECT_EQ(pool.n_used(), 1);
  EXPECT_EQ(pool.n_free(), 63);  // all blocks but one
  EXPECT_CONSISTENT(h);
  h.truncate(s, 15);  // within the block: nothing freed
  EXPECT_EQ(pool.n_free(), 63);
  h.truncate(s, 0);
  EXPECT_EQ(pool.n_free(), 64);
  EXPECT_TRUE(h.manager().block_table(s).empty());
  // The emptied sequence grows again.
  ASSERT_TRUE(h.step({{s, iota_tokens(40, 7)}}).fits());
  EXPECT_EQ(pool.n_used(), 3);
  EXPECT_CONSISTENT(h);
  h.free(s);
  EXPECT_TRUE(pool.idle());
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, TruncateErrors) {
  Harness h(options(8));
  const SeqId s = h.create();
  ASSERT_TRUE(h.step({{s, iota_tokens(10)}}).fits());
  EXPECT_EQ(h.manager().truncate(s, 11).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(h.manager().truncate(s, -1).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(h.manager().truncate(s + 1, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.manager().free_sequence(s + 1).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(h.manager().fork(s + 1).ok());
  EXPECT_CONSISTENT(h);
}

// Allocates `n_seqs` sequences of `len` tokens each (distinct tokens) and
// frees them in a scrambled order; returns the ids of the next allocation.
std::vector<BlockId> scramble_then_allocate(Harness& h, bool defrag) {
  std::vector<SeqId> seqs;
  for (int i = 0; i < 8; ++i) {
    seqs.push_back(h.create());
    EXPECT_TRUE(h.step({{seqs.back(), iota_tokens(48, 1000 * (i + 1))}}).fits());
  }
  std::mt19937 rng(5);
  std::shuffle(seqs.begin(), seqs.end(), rng);
  for (const SeqId s : seqs) h.free(s);
  EXPECT_TRUE(h.pool().idle());
  if (defrag) {
    EXPECT_TRUE(h.manager().defrag());
  }
  EXPECT_EQ(h.check(), "");
  const SeqId fresh = h.create();
  EXPECT_TRUE(h.step({{fresh, iota_tokens(24 * 16, 77777)}}).fits());
  EXPECT_EQ(h.check(), "");
  const auto ids = h.manager().block_table(fresh).ids();
  return {ids.begin(), ids.end()};
}

TEST(KvCacheManager, ScrambledFreesThenDefragGiveAscendingIds) {
  const std::vector<BlockId> ascending = iota_tokens(24, 1);
  for (const bool caching : {false, true}) {
    SCOPED_TRACE(caching ? "hashed blocks" : "unhashed blocks");
    Harness scrambled(options(25, 16, caching));
    EXPECT_NE(scramble_then_allocate(scrambled, /*defrag=*/false), ascending);
    Harness defragged(options(25, 16, caching));
    EXPECT_EQ(scramble_then_allocate(defragged, /*defrag=*/true), ascending);
  }
}

TEST(KvCacheManager, DefragRefusesWhileBlocksAreInUse) {
  Harness h(options(16));
  const SeqId s = h.create();
  ASSERT_TRUE(h.step({{s, iota_tokens(20)}}).fits());
  const std::string before = h.manager().debug_dump();
  EXPECT_FALSE(h.manager().defrag());
  EXPECT_EQ(h.manager().debug_dump(), before);
  h.free(s);
  EXPECT_TRUE(h.manager().defrag());
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, BurstOfSequencesLeavesNoLeakedBlock) {
  // A scheduler-like loop: admit 96 sequences with random prompts (sharing
  // prefixes), decode the running ones, end some early, preempt the newest
  // when a step does not fit. At the end the pool must be pristine.
  Harness h(options(97, 16));
  std::mt19937 rng(42);
  const std::vector<int32_t> system_prompt = iota_tokens(70, 500);
  struct Running {
    SeqId seq;
    std::vector<int32_t> prompt;
    size_t fed = 0;
    int32_t to_generate = 0;
  };
  std::vector<Running> running;
  int admitted = 0;
  int steps = 0;
  while ((admitted < 96 || !running.empty()) && steps < 5000) {
    ++steps;
    if (admitted < 96 && running.size() < 24 && rng() % 2 == 0) {
      Running r;
      r.seq = h.create();
      const size_t shared = rng() % 2 == 0 ? rng() % system_prompt.size() : 0;
      r.prompt.assign(system_prompt.begin(),
                      system_prompt.begin() + static_cast<ptrdiff_t>(shared));
      const size_t own = 1 + rng() % 150;
      for (size_t i = 0; i < own; ++i) r.prompt.push_back(static_cast<int32_t>(rng() % 50));
      r.to_generate = static_cast<int32_t>(rng() % 60);
      running.push_back(std::move(r));
      ++admitted;
    }
    std::vector<SeqAppend> batch;
    std::vector<std::vector<int32_t>> chunks(running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      Running& r = running[i];
      SeqAppend a;
      a.seq = r.seq;
      if (r.fed < r.prompt.size()) {
        const std::span<const int32_t> rest(r.prompt);
        if (r.fed == 0) a.n_cached = h.manager().lookup(r.seq, r.prompt).n_tokens;
        const size_t n = std::min(r.prompt.size() - r.fed, static_cast<size_t>(a.n_cached) + 64);
        chunks[i].assign(rest.begin() + static_cast<ptrdiff_t>(r.fed),
                         rest.begin() + static_cast<ptrdiff_t>(r.fed + n));
      } else {
        chunks[i].push_back(static_cast<int32_t>(rng() % 50));
      }
      a.tokens = chunks[i];
      batch.push_back(a);
    }
    CachePlan plan;
    ASSERT_TRUE(h.manager().plan(batch, plan).ok());
    if (!plan.fits()) {
      ASSERT_GT(plan.n_missing_blocks, 0);
      h.free(running.back().seq);  // preempt the newest (recomputed later, here dropped)
      running.pop_back();
      continue;
    }
    h.step(batch);
    for (size_t i = 0; i < running.size(); ++i) {
      running[i].fed += chunks[i].size();
      if (running[i].fed > running[i].prompt.size()) --running[i].to_generate;
    }
    // Finished or randomly ended early (cancelled).
    for (size_t i = running.size(); i-- > 0;) {
      if (running[i].to_generate <= 0 || rng() % 40 == 0) {
        h.free(running[i].seq);
        running.erase(running.begin() + static_cast<ptrdiff_t>(i));
      }
    }
    ASSERT_EQ(h.check(), "") << "step " << steps;
  }
  EXPECT_EQ(admitted, 96);
  EXPECT_TRUE(running.empty());
  const BlockPool& pool = h.pool();
  EXPECT_TRUE(pool.idle());
  EXPECT_EQ(pool.n_free(), pool.n_usable());
  for (BlockId b = 0; b < pool.n_blocks(); ++b) EXPECT_EQ(pool.ref(b), 0);
  EXPECT_GT(pool.n_cached(), 0);  // warm blocks stay cached
  EXPECT_GT(h.manager().peak_used(), 0);
  EXPECT_TRUE(h.manager().defrag());
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, CachedBlocksAreReusedByALaterIdenticalPrefix) {
  Harness h(options(32, 16));
  const std::vector<int32_t> prompt = iota_tokens(100);
  const SeqId a = h.create();
  ASSERT_EQ(h.manager().lookup(a, prompt).n_tokens, 0);
  ASSERT_TRUE(h.step({{a, prompt}}).fits());
  EXPECT_EQ(h.pool().n_cached(), 6);  // 6 full blocks of 16

  // While a still runs: b shares a's 6 full blocks and computes 4 tokens.
  const SeqId b = h.create();
  const PrefixHit hit = h.manager().lookup(b, prompt);
  EXPECT_EQ(hit.n_tokens, 96);
  const auto a_ids = h.manager().block_table(a).ids();
  EXPECT_TRUE(std::equal(hit.blocks.begin(), hit.blocks.end(), a_ids.begin()));
  const CachePlan p = h.step({{b, prompt, hit.n_tokens}});
  ASSERT_TRUE(p.fits());
  EXPECT_EQ(p.n_blocks_needed, 1);
  EXPECT_EQ(p.slot_mapping.size(), 4u);
  for (int32_t k = 0; k < 6; ++k) {
    EXPECT_EQ(h.manager().block_table(b)[k], h.manager().block_table(a)[k]);
    EXPECT_EQ(h.pool().ref(h.manager().block_table(a)[k]), 2);
  }
  EXPECT_NE(h.manager().block_table(b)[6], h.manager().block_table(a)[6]);
  EXPECT_CONSISTENT(h);

  // After both ended: the blocks stay warm and a third sequence revives them.
  const std::vector<BlockId> cached(a_ids.begin(), a_ids.begin() + 6);
  h.free(a);
  h.free(b);
  EXPECT_TRUE(h.pool().idle());
  const SeqId c = h.create();
  const std::vector<int32_t> longer = iota_tokens(130);  // same first 100 tokens
  const PrefixHit hit_c = h.manager().lookup(c, longer);
  EXPECT_EQ(hit_c.n_tokens, 96);
  const CachePlan pc = h.step({{c, longer, hit_c.n_tokens}});
  EXPECT_EQ(pc.n_blocks_needed, 6 + 3);  // 6 revived + ceil(130/16) - 6 new
  EXPECT_EQ(std::vector<BlockId>(h.manager().block_table(c).ids().begin(),
                                 h.manager().block_table(c).ids().begin() + 6),
            cached);
  EXPECT_CONSISTENT(h);

  // A lookup stops at the first miss: change a token in block 2.
  std::vector<int32_t> edited = prompt;
  edited[40] = -5;
  const SeqId d = h.create();
  EXPECT_EQ(h.manager().lookup(d, edited).n_tokens, 32);
  // Another cache salt never shares.
  const SeqId e = h.create("tenant-b");
  EXPECT_EQ(h.manager().lookup(e, prompt).n_tokens, 0);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, LookupLeavesTheLastTokenToComputeWhenAsked) {
  Harness h(options(32, 16));
  const std::vector<int32_t> prompt = iota_tokens(96);  // exactly 6 blocks
  const SeqId a = h.create();
  ASSERT_TRUE(h.step({{a, prompt}}).fits());
  const SeqId b = h.create();
  EXPECT_EQ(h.manager().lookup(b, prompt).n_tokens, 80);  // block 5 holds the last token
  EXPECT_EQ(h.manager().lookup(b, prompt, /*leave_last_token=*/false).n_tokens, 96);
  EXPECT_EQ(h.manager().lookup(b, std::span(prompt).first(97 - 1 - 16)).n_tokens, 64);
  EXPECT_EQ(h.manager().lookup(b, std::span<const int32_t>()).n_tokens, 0);
  // The whole prompt may come from the cache: nothing to compute.
  const CachePlan p = h.step({{b, prompt, 96}});
  ASSERT_TRUE(p.fits());
  EXPECT_EQ(p.n_blocks_needed, 0);
  EXPECT_TRUE(p.slot_mapping.empty());
  EXPECT_EQ(h.manager().seq_len(b), 96);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, ADifferentExtraKeyNeverShares) {
  const std::vector<int32_t> prompt = iota_tokens(64);
  Harness f16(options(16, 16, true, "model-x/f16"));
  Harness q8(options(16, 16, true, "model-x/q8_0"));
  Harness f16_again(options(16, 16, true, "model-x/f16"));
  for (Harness* h : {&f16, &q8, &f16_again}) {
    const SeqId s = h->create();
    ASSERT_TRUE(h->step({{s, prompt}}).fits());
  }
  const BlockId b = f16.manager().block_table(0)[0];
  ASSERT_TRUE(f16.pool().is_hashed(b));
  // Same pool layout, same tokens: block hashes differ only with the key.
  EXPECT_EQ(f16.pool().hash(b), f16_again.pool().hash(b));
  EXPECT_FALSE(f16.pool().hash(b) == q8.pool().hash(b));
  EXPECT_EQ(q8.pool().find(f16.pool().hash(b)), kNullBlock);
}

TEST(KvCacheManager, HashedBlocksAreEvictedInLruOrderTailFirst) {
  Harness h(options(7, 8));  // 6 usable blocks of 8
  const SeqId a = h.create();
  const SeqId b = h.create();
  const SeqId c = h.create();
  ASSERT_TRUE(
      h.step({{a, iota_tokens(16, 100)}, {b, iota_tokens(16, 200)}, {c, iota_tokens(16, 300)}})
          .fits());
  auto ids = [&](SeqId s) {
    return std::vector<BlockId>(h.manager().block_table(s).ids().begin(),
                                h.manager().block_table(s).ids().end());
  };
  const auto ta = ids(a), tb = ids(b), tc = ids(c);
  h.free(b);
  h.free(a);
  h.free(c);
  // Least recently freed first; each sequence's tail block before its head.
  EXPECT_EQ(h.pool().free_queue(),
            (std::vector<BlockId>{tb[1], tb[0], ta[1], ta[0], tc[1], tc[0]}));
  // A new sequence needing 3 blocks evicts b entirely and a's tail.
  const SeqId d = h.create();
  ASSERT_TRUE(h.step({{d, iota_tokens(24, 900)}}).fits());
  EXPECT_EQ(ids(d), (std::vector<BlockId>{tb[1], tb[0], ta[1]}));
  const SeqId probe = h.create();
  EXPECT_EQ(h.manager().lookup(probe, iota_tokens(16, 200), false).n_tokens, 0);   // b evicted
  EXPECT_EQ(h.manager().lookup(probe, iota_tokens(16, 100), false).n_tokens, 8);   // a's head only
  EXPECT_EQ(h.manager().lookup(probe, iota_tokens(16, 300), false).n_tokens, 16);  // c intact
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, AFailedPlanLeavesEverythingUnchanged) {
  Harness h(options(12, 8));  // 11 usable blocks of 8
  // State with a bit of everything: cached free blocks, a shared partial
  // block (fork), a running sequence.
  const SeqId warm = h.create();
  ASSERT_TRUE(h.step({{warm, iota_tokens(24, 50)}}).fits());  // 3 blocks
  h.free(warm);                                               // cached, free
  const SeqId a = h.create();
  ASSERT_TRUE(h.step({{a, iota_tokens(12, 1)}}).fits());  // 2 blocks, last partial
  const SeqId f = h.fork(a);
  const SeqId n = h.create();
  const SeqId big = h.create();
  ASSERT_EQ(h.pool().n_free(), 9);
  EXPECT_CONSISTENT(h);

  const std::vector<int32_t> warm_prompt = iota_tokens(30, 50);  // 3 cached blocks + 6 new tokens
  const std::vector<int32_t> one{7};
  const std::vector<int32_t> many = iota_tokens(6 * 8, 4000);  // 6 blocks
  std::vector<SeqAppend> batch = {{n, warm_prompt, 24}, {f, one}, {a, one}, {big, many}};
  const std::string before = h.manager().debug_dump();
  CachePlan plan;
  ASSERT_TRUE(h.manager().plan(batch, plan).ok());
  // 3 revived + 1 new for n, a copy-on-write each for f and a, 6 for big.
  EXPECT_EQ(plan.n_blocks_needed, 12);
  EXPECT_EQ(plan.n_missing_blocks, 3);
  EXPECT_FALSE(plan.fits());
  EXPECT_TRUE(plan.seqs.empty());
  EXPECT_TRUE(plan.slot_mapping.empty());
  EXPECT_TRUE(plan.copies.empty());
  EXPECT_EQ(h.manager().debug_dump(), before);

  // Invalid batches are errors and change nothing either.
  const std::vector<int32_t> t16 = iota_tokens(16, 50);
  const std::vector<int32_t> t16_unknown = iota_tokens(16, 9999);
  const std::vector<std::vector<SeqAppend>> invalid = {
      {{a, one}, {a, one}},   // sequence twice
      {{99, one}},            // no such sequence
      {{a, t16, 8}},          // cached prefix for a non-empty sequence
      {{n, t16, 4}},          // not a multiple of the block size
      {{n, t16, 24}},         // more cached than tokens
      {{n, t16_unknown, 8}},  // not in the cache
      {{n, one, -1}},
  };
  for (size_t i = 0; i < invalid.size(); ++i) {
    CachePlan p;
    EXPECT_EQ(h.manager().plan(invalid[i], p).code(), StatusCode::kInvalidArgument) << i;
    EXPECT_EQ(h.manager().debug_dump(), before) << i;
  }

  // Without the big sequence it fits, and apply agrees with the plan.
  batch.pop_back();
  const CachePlan ok = h.step(batch);
  ASSERT_TRUE(ok.fits());
  EXPECT_EQ(ok.n_blocks_needed, 6);
  ASSERT_EQ(ok.copies.size(), 2u);
  EXPECT_EQ(h.pool().n_free(), 9 - 6 + 1);  // the shared original went back
  EXPECT_TRUE(h.pool().is_free(ok.copies[0].src));
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, PrefixCachingOffRejectsCachedPrefixes) {
  Harness h(options(12, 8, /*caching=*/false));
  const SeqId a = h.create();
  const std::vector<int32_t> t = iota_tokens(20);
  ASSERT_TRUE(h.step({{a, t}}).fits());
  EXPECT_EQ(h.pool().n_cached(), 0);
  const SeqId b = h.create();
  EXPECT_EQ(h.manager().lookup(b, t).n_tokens, 0);
  CachePlan p;
  const std::vector<SeqAppend> batch = {{b, t, 8}};
  EXPECT_EQ(h.manager().plan(batch, p).code(), StatusCode::kInvalidArgument);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, ForkSharesBlocksAndCopiesOnWrite) {
  Harness h(options(16, 16));
  const SeqId a = h.create();
  ASSERT_TRUE(h.step({{a, iota_tokens(40)}}).fits());  // blocks x0 x1 full, x2 holds 8
  const std::vector<BlockId> ta(h.manager().block_table(a).ids().begin(),
                                h.manager().block_table(a).ids().end());
  const SeqId b = h.fork(a);
  for (const BlockId x : ta) EXPECT_EQ(h.pool().ref(x), 2);
  EXPECT_EQ(h.pool().n_used(), 3);  // forking takes no block
  EXPECT_CONSISTENT(h);

  // b diverges inside x2: it gets a copy of x2, a keeps x2.
  const std::vector<int32_t> tb{1000};
  const CachePlan pb = h.step({{b, tb}});
  ASSERT_EQ(pb.copies.size(), 1u);
  EXPECT_EQ(pb.copies[0].src, ta[2]);
  const BlockId copy = pb.copies[0].dst;
  EXPECT_EQ(h.manager().block_table(b)[2], copy);
  EXPECT_EQ(h.manager().block_table(b)[0], ta[0]);
  EXPECT_EQ(h.pool().ref(ta[2]), 1);
  EXPECT_EQ(h.pool().ref(copy), 1);
  EXPECT_EQ(pb.slot_mapping, (std::vector<int32_t>{copy * 16 + 8}));
  EXPECT_CONSISTENT(h);

  // a now owns x2 alone: it writes in place.
  const CachePlan pa = h.step({{a, iota_tokens(10, 2000)}});
  EXPECT_TRUE(pa.copies.empty());
  EXPECT_EQ(pa.n_blocks_needed, 1);  // 8 + 10 spills into one new block
  EXPECT_EQ(h.manager().block_table(a)[2], ta[2]);
  EXPECT_CONSISTENT(h);

  // Three holders of one partial block writing in the same step: three
  // copies (a shared block is never written in place), the original is freed.
  const SeqId c = h.create();
  ASSERT_TRUE(h.step({{c, iota_tokens(5, 3000)}}).fits());
  const BlockId xc = h.manager().block_table(c)[0];
  const SeqId c1 = h.fork(c);
  const SeqId c2 = h.fork(c1);
  EXPECT_EQ(h.pool().ref(xc), 3);
  const std::vector<int32_t> t1{1}, t2{2}, t3{3};
  const CachePlan p3 = h.step({{c2, t1}, {c, t2}, {c1, t3}});
  ASSERT_EQ(p3.copies.size(), 3u);
  for (const BlockCopy& copy_op : p3.copies) EXPECT_EQ(copy_op.src, xc);
  for (const SeqId s : {c, c1, c2}) EXPECT_NE(h.manager().block_table(s)[0], xc);
  EXPECT_TRUE(h.pool().is_free(xc));
  EXPECT_CONSISTENT(h);

  // A fork at a block boundary never copies.
  const SeqId d = h.create();
  ASSERT_TRUE(h.step({{d, iota_tokens(16, 4000)}}).fits());
  const SeqId d1 = h.fork(d);
  const CachePlan pd = h.step({{d, t1}, {d1, t2}});
  EXPECT_TRUE(pd.copies.empty());
  EXPECT_EQ(pd.n_blocks_needed, 2);
  EXPECT_CONSISTENT(h);

  for (const SeqId s : {a, b, c, c1, c2, d, d1}) h.free(s);
  EXPECT_TRUE(h.pool().idle());
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, TruncatingIntoARegisteredBlock) {
  Harness h(options(16, 16));
  const SeqId a = h.create();
  ASSERT_TRUE(h.step({{a, iota_tokens(48)}}).fits());  // 3 full, registered blocks
  const BlockId x1 = h.manager().block_table(a)[1];
  ASSERT_TRUE(h.pool().is_hashed(x1));

  // Shared: the block stays registered (the fork still holds it whole); a's
  // next write copies it.
  const SeqId f = h.fork(a);
  h.truncate(a, 20);
  EXPECT_TRUE(h.pool().is_hashed(x1));
  EXPECT_EQ(h.pool().ref(x1), 2);
  const CachePlan p = h.step({{a, iota_tokens(3, 500)}});
  ASSERT_EQ(p.copies.size(), 1u);
  EXPECT_EQ(p.copies[0].src, x1);
  EXPECT_TRUE(h.pool().is_hashed(x1));
  EXPECT_CONSISTENT(h);  // f still reads its original tokens 16..47

  // Exclusive: the registration goes at once.
  h.truncate(f, 30);
  EXPECT_FALSE(h.pool().is_hashed(x1));
  EXPECT_EQ(h.pool().ref(x1), 1);
  const SeqId probe = h.create();
  EXPECT_EQ(h.manager().lookup(probe, iota_tokens(48), false).n_tokens, 16);
  ASSERT_TRUE(h.step({{f, iota_tokens(40, 600)}}).fits());  // refills x1, registers it anew
  EXPECT_TRUE(h.pool().is_hashed(x1));
  EXPECT_CONSISTENT(h);

  // Shared, then the other holder leaves: the block is registered, partial for
  // its last holder, and loses its hash when that holder writes into it.
  const SeqId g = h.create();
  ASSERT_TRUE(h.step({{g, iota_tokens(32, 700)}}).fits());
  const BlockId y1 = h.manager().block_table(g)[1];
  const SeqId g1 = h.fork(g);
  h.truncate(g1, 20);
  h.free(g);
  EXPECT_TRUE(h.pool().is_hashed(y1));
  EXPECT_EQ(h.pool().ref(y1), 1);
  const CachePlan pg = h.step({{g1, iota_tokens(2, 800)}});
  EXPECT_TRUE(pg.copies.empty());
  EXPECT_FALSE(h.pool().is_hashed(y1));
  EXPECT_CONSISTENT(h);

  // The same, but the forward fails: the block it wrote into loses its hash.
  const SeqId k = h.create();
  ASSERT_TRUE(h.step({{k, iota_tokens(32, 900)}}).fits());
  const BlockId z1 = h.manager().block_table(k)[1];
  const SeqId k1 = h.fork(k);
  h.truncate(k1, 20);
  h.free(k);
  ASSERT_TRUE(h.pool().is_hashed(z1));
  ASSERT_TRUE(h.step({{k1, iota_tokens(2, 950)}}, /*discard=*/true).fits());
  EXPECT_FALSE(h.pool().is_hashed(z1));
  EXPECT_EQ(h.manager().seq_len(k1), 20);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, SamePrefixComputedTwiceInOneStepKeepsTheFirstBlockCached) {
  Harness h(options(16, 16));
  const std::vector<int32_t> prompt = iota_tokens(40);
  const SeqId a = h.create();
  const SeqId b = h.create();
  ASSERT_TRUE(h.step({{a, prompt}, {b, prompt}}).fits());
  EXPECT_EQ(h.pool().n_cached(), 2);
  for (int32_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(h.pool().is_hashed(h.manager().block_table(a)[k]));
    EXPECT_FALSE(h.pool().is_hashed(h.manager().block_table(b)[k]));  // b keeps its own copy
  }
  EXPECT_CONSISTENT(h);
  // b's duplicates are freed first (unhashed), a's stay warm.
  h.free(b);
  h.free(a);
  const auto queue = h.pool().free_queue();
  EXPECT_FALSE(h.pool().is_hashed(queue.front()));
  const SeqId c = h.create();
  EXPECT_EQ(h.manager().lookup(c, prompt).n_tokens, 32);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, DiscardForgetsOverwrittenCachedBlocks) {
  Harness h(options(5, 8));  // 4 usable blocks
  const SeqId a = h.create();
  ASSERT_TRUE(h.step({{a, iota_tokens(32, 10)}}).fits());
  h.free(a);
  ASSERT_EQ(h.pool().n_cached(), 4);
  const SeqId b = h.create();
  ASSERT_TRUE(h.step({{b, iota_tokens(4, 90)}}).fits());  // evicts one cached block
  ASSERT_EQ(h.pool().n_cached(), 3);
  const SeqId c = h.create();
  const std::string lens_before = std::to_string(h.manager().seq_len(b));
  // The forward of this plan writes into two cached free blocks, then fails.
  const CachePlan p = h.step({{c, iota_tokens(9, 500)}, {b, iota_tokens(2, 91)}}, /*discard=*/true);
  ASSERT_TRUE(p.fits());
  EXPECT_EQ(h.pool().n_cached(), 1);
  EXPECT_EQ(h.manager().seq_len(c), 0);
  EXPECT_EQ(std::to_string(h.manager().seq_len(b)), lens_before);
  EXPECT_EQ(h.pool().n_free(), 3);
  EXPECT_CONSISTENT(h);
}

// --- sliding window -----------------------------------------------------------

KvCacheManagerOptions windowed(int32_t n_blocks, int32_t block_size, int32_t window) {
  KvCacheManagerOptions o = options(n_blocks, block_size);
  o.window = window;
  return o;
}

// Window 20, blocks of 8: a token at position p reads (p - 20, p]. After 48
// positions the next token (48) reads 29..48, so blocks 0..2 (positions
// 0..23) are released and block 3 (24..31) is kept.
TEST(KvCacheManager, WindowReleasesBlocksTheNextTokenCannotSee) {
  Harness h(windowed(12, 8, 20));
  const SeqId s = h.create();
  h.step({{s, iota_tokens(48)}});
  EXPECT_CONSISTENT(h);
  const BlockTable& t = h.manager().block_table(s);
  ASSERT_EQ(t.size(), 6);
  for (int32_t k = 0; k < 3; ++k) EXPECT_EQ(t[k], kNullBlock) << k;
  for (int32_t k = 3; k < 6; ++k) EXPECT_NE(t[k], kNullBlock) << k;
  EXPECT_EQ(h.pool().n_used(), 3);
  // The released blocks stay cached (their K/V is still that prefix's).
  EXPECT_EQ(h.pool().n_cached(), 6);
  // Decoding keeps the sequence within its window: at most 4 blocks held.
  for (int32_t i = 0; i < 80; ++i) {
    h.step({{s, iota_tokens(1, 48 + i)}});
    EXPECT_LE(h.pool().n_used(), 4);
    EXPECT_CONSISTENT(h);
  }
  ASSERT_EQ(h.manager().seq_len(s), 128);
  // Truncation needs the window before the new length: blocks 0..12 are
  // gone, so a length must read from block 13 (position 104) on: 124
  // (reads 105..123) keeps it, 100 does not.
  EXPECT_EQ(h.manager().truncation_point(s, 124), 124);
  EXPECT_EQ(h.manager().truncation_point(s, 100), 0);
  EXPECT_EQ(h.manager().truncate(s, 100).code(), StatusCode::kInvalidArgument);
  EXPECT_CONSISTENT(h);
  h.truncate(s, 124);
  EXPECT_CONSISTENT(h);
  h.truncate(s, 0);
  EXPECT_CONSISTENT(h);
  h.free(s);
  EXPECT_TRUE(h.pool().idle());
}

// A hit needs only the blocks the window before it covers: after the early
// blocks of a prefix are evicted, a new sequence still takes the prefix, and
// gets dropped entries for the blocks it does not need.
TEST(KvCacheManager, WindowedPrefixHitNeedsOnlyTheWindow) {
  Harness h(windowed(10, 8, 12));
  const std::vector<int32_t> prompt = iota_tokens(65, 100);  // 8 full blocks + 1 token
  const SeqId a = h.create();
  h.step({{a, prompt}});  // all 9 usable blocks; blocks 0..5 leave the window at once
  h.free(a);
  EXPECT_EQ(h.pool().n_cached(), 8);
  // Another sequence's 3 blocks evict the prefix's two oldest (0 and 1).
  const SeqId other = h.create();
  h.step({{other, iota_tokens(24, 900)}});
  EXPECT_CONSISTENT(h);

  const SeqId b = h.create();
  const PrefixHit hit = h.manager().lookup(b, prompt);
  ASSERT_EQ(hit.n_tokens, 64);
  // The next position (64) reads 53..64: only blocks 6 and 7 are needed.
  ASSERT_EQ(hit.blocks.size(), 8u);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(hit.blocks[k], kNullBlock) << k;
  EXPECT_NE(hit.blocks[6], kNullBlock);
  EXPECT_NE(hit.blocks[7], kNullBlock);
  // Under a limit, the longest hit within it: 16 and 24 tokens would need
  // the evicted blocks 0 or 1; 32 needs blocks 2 and 3 only.
  EXPECT_EQ(h.manager().lookup(b, prompt, true, 16).n_tokens, 0);
  EXPECT_EQ(h.manager().lookup(b, prompt, true, 24).n_tokens, 0);
  EXPECT_EQ(h.manager().lookup(b, prompt, true, 32).n_tokens, 32);
  EXPECT_EQ(h.manager().lookup(b, prompt, true, 60).n_tokens, 56);
  h.step({{b, prompt, hit.n_tokens}});
  EXPECT_CONSISTENT(h);
  EXPECT_EQ(h.manager().seq_len(b), 65);

  // Once the window's blocks are evicted too, there is no hit.
  h.free(b);
  h.free(other);
  const SeqId c = h.create();
  h.step({{c, iota_tokens(72, 500)}});  // every usable block
  EXPECT_EQ(h.manager().lookup(c, prompt).n_tokens, 0);
  EXPECT_CONSISTENT(h);
}

TEST(KvCacheManager, ForkOfAWindowedSequenceSharesOnlyTheHeldBlocks) {
  Harness h(windowed(16, 8, 10));
  const SeqId a = h.create();
  h.step({{a, iota_tokens(60)}});
  const int32_t used = h.pool().n_used();
  EXPECT_EQ(used, 2);
  const SeqId b = h.fork(a);
  EXPECT_EQ(h.pool().n_used(), used);
  EXPECT_CONSISTENT(h);
  h.step({{a, iota_tokens(3, 7)}, {b, iota_tokens(5, 60)}});  // copy-on-write of the shared tail
  EXPECT_CONSISTENT(h);
  h.free(a);
  h.free(b);
  EXPECT_TRUE(h.pool().idle());
}

TEST(KvCacheManagerDeathTest, ApplyRejectsAStalePlan) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  KvCacheManager m = cachetest::make_manager(8);
  const SeqId s = m.create_sequence();
  const std::vector<int32_t> t = iota_tokens(4);
  const std::vector<SeqAppend> batch = {{s, t}};
  CachePlan plan;
  ASSERT_TRUE(m.plan(batch, plan).ok());
  ASSERT_TRUE(m.truncate(s, 0).ok());  // any mutation invalidates the plan
  EXPECT_DEATH(m.apply(plan), "stale plan");
}

}  // namespace
}  // namespace folio::cache
