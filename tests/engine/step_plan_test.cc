// compose_step: the scheduler's per-step token budget. Hand-computed cases
// for decode-first budgets, decode-last, chunk caps, block alignment and the
// progress fallback, then randomized inputs checked against the rules.
#include "engine/step_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace folio {
namespace step_plan_test {

StepSequence dec(int64_t held) {
  return {held, held + 1, true};
}
StepSequence fill(int64_t held, int64_t total) {
  return {held, total, false};
}

StepLimits limits(int64_t T, int64_t ubatch, int64_t cap, bool decode_first = true,
                  int64_t bs = 8) {
  StepLimits l;
  l.max_batch_tokens = T;
  l.ubatch = ubatch;
  l.chunk_cap = cap;
  l.decode_first = decode_first;
  l.block_size = bs;
  return l;
}

std::vector<int64_t> compose(const std::vector<StepSequence>& seqs, const StepLimits& l,
                             StepPlan* out = nullptr) {
  StepPlan p;
  compose_step(seqs, l, p);
  if (out != nullptr) *out = p;
  return p.n_tokens;
}

TEST(StepPlanTest, DecodeFirstThenPrefillWithinMaxOfUbatchAndTMinusD) {
  // D = 3, budget max(16, 64 - 3) = 61: A takes its cap (40), B what is left
  // (21) rounded down to a block boundary (16).
  StepPlan p;
  const auto n =
      compose({dec(10), fill(0, 100), dec(20), fill(0, 50), dec(7)}, limits(64, 16, 40), &p);
  EXPECT_EQ(n, (std::vector<int64_t>{1, 40, 1, 16, 1}));
  EXPECT_EQ(p.n_decode, 3);
  EXPECT_EQ(p.n_prefill, 56);
  EXPECT_EQ(p.size(), 59);
}

TEST(StepPlanTest, UbatchBoundsPrefillWhenDecodesFillT) {
  // 6 decodes exceed T = 4: all still decode, prefill gets ubatch (8).
  std::vector<StepSequence> seqs(6, dec(3));
  seqs.push_back(fill(0, 20));
  StepPlan p;
  const auto n = compose(seqs, limits(4, 8, 100), &p);
  EXPECT_EQ(p.n_decode, 6);
  EXPECT_EQ(n.back(), 8);
}

TEST(StepPlanTest, DecodeLastTakesWhatPrefillLeaves) {
  StepPlan p;
  // Prefill first within T = 32: the prompt (30) finishes; 2 tokens are left
  // for the 3 decoders, given in order.
  const auto n = compose({dec(5), fill(0, 30), dec(6), dec(7)}, limits(32, 8, 64, false), &p);
  EXPECT_EQ(n, (std::vector<int64_t>{1, 30, 1, 0}));
  EXPECT_EQ(p.n_decode, 2);
  EXPECT_EQ(p.n_prefill, 30);
  // With nothing to prefill every decoder runs (up to T).
  EXPECT_EQ(compose({dec(5), dec(6)}, limits(32, 8, 64, false)), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(compose({dec(5), dec(6), dec(7)}, limits(2, 8, 64, false)),
            (std::vector<int64_t>{1, 1, 0}));
}

TEST(StepPlanTest, ChunkCapAndBlockAlignment) {
  // Cap 24 (a block multiple): 24-token chunks, the last one finishes unaligned.
  EXPECT_EQ(compose({fill(0, 100)}, limits(1000, 8, 24)), (std::vector<int64_t>{24}));
  EXPECT_EQ(compose({fill(24, 100)}, limits(1000, 8, 24)), (std::vector<int64_t>{24}));
  EXPECT_EQ(compose({fill(96, 100)}, limits(1000, 8, 24)), (std::vector<int64_t>{4}));
  // Cap 20 is not a block multiple: a chunk that continues ends on a boundary.
  EXPECT_EQ(compose({fill(0, 100)}, limits(1000, 8, 20)), (std::vector<int64_t>{16}));
  // An unaligned start (a cache without prefix blocks) is realigned.
  EXPECT_EQ(compose({fill(5, 100)}, limits(1000, 8, 16)), (std::vector<int64_t>{11}));
  // A cap below one block is raised to one block.
  EXPECT_EQ(compose({fill(0, 100)}, limits(1000, 8, 3)), (std::vector<int64_t>{8}));
  // Block size 1: no alignment.
  EXPECT_EQ(compose({fill(0, 100)}, limits(1000, 8, 20, true, 1)), (std::vector<int64_t>{20}));
}

TEST(StepPlanTest, BudgetGoesInOrderAndSkipsChunksThatCannotAlign) {
  // Budget 20: A takes 16 (aligned), 4 are left: B cannot end on a boundary
  // (skipped), C finishes its prompt with 3.
  const auto n = compose({fill(0, 64), fill(0, 64), fill(8, 11)}, limits(20, 20, 64));
  EXPECT_EQ(n, (std::vector<int64_t>{16, 0, 3}));
}

TEST(StepPlanTest, FallbackGuaranteesProgress) {
  // ubatch and T below one block: no aligned chunk fits, the first filling
  // sequence gets an unaligned one.
  StepPlan p;
  const auto n = compose({fill(0, 100), fill(0, 50)}, limits(4, 4, 64), &p);
  EXPECT_EQ(n, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(p.n_prefill, 4);
}

TEST(StepPlanTest, DefaultChunkCap) {
  EXPECT_EQ(default_chunk_cap(2048, 512, 4096), 512);     // ceil(163.84) < ubatch
  EXPECT_EQ(default_chunk_cap(2048, 512, 32768), 1311);   // ceil(1310.72)
  EXPECT_EQ(default_chunk_cap(1024, 512, 131072), 1024);  // capped by T
  EXPECT_EQ(default_chunk_cap(2048, 512, 25), 512);
}

TEST(StepPlanTest, VictimIsLowestPriorityThenNewest) {
  std::vector<PreemptionCandidate> c = {{0, 1}, {0, 7}, {2, 9}, {0, 3}};
  EXPECT_EQ(choose_victim(c), 1u);  // priority 0, admitted last
  c = {{5, 1}, {1, 2}, {3, 9}};
  EXPECT_EQ(choose_victim(c), 1u);  // lowest priority although not the newest
  c = {{0, 4}};
  EXPECT_EQ(choose_victim(c), 0u);
}

TEST(StepPlanTest, RandomInputsKeepTheRules) {
  std::mt19937 rng(1234);
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 3000; ++iter) {
    const int64_t bs = int64_t{1} << uni(0, 5);
    StepLimits l = limits(uni(1, 300), uni(1, 128), uni(1, 200), uni(0, 1) == 1, bs);
    std::vector<StepSequence> seqs;
    const int n_seqs = static_cast<int>(uni(1, 12));
    int64_t d = 0;
    for (int i = 0; i < n_seqs; ++i) {
      if (uni(0, 2) == 0) {
        seqs.push_back(dec(uni(1, 500)));
        ++d;
      } else {
        const int64_t held = uni(0, 20) * bs;
        seqs.push_back(fill(held, held + uni(1, 400)));
      }
    }
    StepPlan p;
    compose_step(seqs, l, p);
    ASSERT_EQ(p.n_tokens.size(), seqs.size());
    ASSERT_GT(p.size(), 0) << "no progress at iteration " << iter;
    const int64_t cap = std::max(l.chunk_cap, bs);
    int64_t prefill = 0, decode = 0;
    bool unaligned = false;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const int64_t k = p.n_tokens[i];
      ASSERT_GE(k, 0);
      ASSERT_LE(k, seqs[i].total - seqs[i].held);
      if (seqs[i].decoding) {
        ASSERT_LE(k, 1);
        if (l.decode_first) {
          ASSERT_EQ(k, 1);
        }
        decode += k;
      } else {
        ASSERT_LE(k, cap);
        prefill += k;
        if (k > 0 && seqs[i].held + k < seqs[i].total && (seqs[i].held + k) % bs != 0)
          unaligned = true;
      }
    }
    ASSERT_EQ(prefill, p.n_prefill);
    ASSERT_EQ(decode, p.n_decode);
    if (unaligned) {  // only the progress fallback: one chunk, nothing else
      ASSERT_EQ(p.size(), prefill);
      ASSERT_EQ(decode, 0);
    }
    if (l.decode_first) {
      ASSERT_EQ(decode, d);
      ASSERT_LE(prefill, std::max(l.ubatch, l.max_batch_tokens - d));
    } else {
      ASSERT_LE(p.size(), std::max<int64_t>(l.max_batch_tokens, 1));
    }
  }
}

TEST(StepPlanTest, DraftsAreDecodeTokensWithinT) {
  // Three decoding sequences with 4, 0 and 6 drafts, T = 12: each gets its
  // token (3), then drafts in order while D stays within T: 4, then 5 of 6.
  std::vector<StepSequence> seqs = {dec(10), dec(20), dec(30), fill(0, 40)};
  seqs[0].n_draft = 4;
  seqs[2].n_draft = 6;
  StepPlan p;
  EXPECT_EQ(compose(seqs, limits(12, 8, 32), &p), (std::vector<int64_t>{5, 1, 6, 8}));
  EXPECT_EQ(p.n_decode, 12);
  EXPECT_EQ(p.n_draft, 9);
  EXPECT_EQ(p.n_prefill, 8);  // max(ubatch, T - D) = 8
  // A roomy budget: every draft, and prefill gets T - D.
  EXPECT_EQ(compose(seqs, limits(64, 8, 64), &p), (std::vector<int64_t>{5, 1, 7, 40}));
  EXPECT_EQ(p.n_draft, 10);
  // Decode last: drafts take what prefill left.
  seqs[3] = fill(0, 32);
  EXPECT_EQ(compose(seqs, limits(40, 8, 64, false), &p), (std::vector<int64_t>{5, 1, 2, 32}));
  EXPECT_EQ(p.n_draft, 5);
  EXPECT_EQ(compose(seqs, limits(36, 8, 64, false), &p), (std::vector<int64_t>{2, 1, 1, 32}));
  EXPECT_EQ(p.n_draft, 1);
  // A filling sequence never takes drafts.
  std::vector<StepSequence> f = {fill(0, 9)};
  f[0].n_draft = 3;
  EXPECT_EQ(compose(f, limits(64, 8, 64)), (std::vector<int64_t>{9}));
}

}  // namespace
}  // namespace folio
