// SchedulePlanner: the scheduler's planning step without a model. A fake
// cache view counts free blocks, sequence slots and prefix hits; each test
// builds a queue by hand and checks the plan: decode-first budgets, chunked
// prefill, admission against the pool, max_seqs, prefix-hit accounting, the
// wait for a shared prefix, refusals, preemption order, and the submit-time
// check of a request that can never fit.
#include "engine/schedule_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>

namespace folio {
namespace schedule_planner_test {

// Blocks of `bs` positions; a prefix hit revives its blocks from the free
// queue (they were cached, unreferenced), and removing a sequence returns
// them (they stay cached).
class FakeCache : public ScheduleCache {
 public:
  bool pool = true;
  bool prefix = true;
  int64_t bs = 4;
  int64_t free = 100;
  int seq_slots = 64;                            // add_sequence fails beyond this
  std::map<std::vector<int32_t>, int64_t> hits;  // tokens -> cached positions
  std::vector<int32_t> fail_take;                // tokens whose prefix lookup errors
  std::vector<int> removed;                      // sequences removed, in order
  std::map<int, int64_t> taken;                  // seq -> cached positions taken

  bool has_block_pool() const override { return pool; }
  bool prefix_caching() const override { return prefix; }
  int64_t block_size() const override { return bs; }
  int64_t free_blocks() const override { return free; }
  Result<int> add_sequence() override {
    if (seq_slots <= 0) return resource_exhausted("fake cache: no sequence slot");
    --seq_slots;
    return next_seq_++;
  }
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> tokens) override {
    const std::vector<int32_t> key(tokens.begin(), tokens.end());
    if (!fail_take.empty() && key == fail_take) return internal_error("fake cache: lookup failed");
    auto it = hits.find(key);
    const int64_t n = it == hits.end() ? 0 : it->second;
    free -= n / bs;
    taken[seq] = n;
    return n;
  }
  void remove_sequence(int seq) override {
    free += taken[seq] / bs;
    taken.erase(seq);
    ++seq_slots;
    removed.push_back(seq);
  }

 private:
  int next_seq_ = 100;
};

// A queue built by hand; token lists are `base, base + 1, ...` so different
// bases share no prefix.
struct Queue {
  std::deque<std::vector<int32_t>> tokens;
  std::vector<PlanSequence> running, waiting;
  uint64_t next_admission = 50;

  std::span<const int32_t> make(int32_t base, int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = base + static_cast<int32_t>(i);
    tokens.push_back(std::move(t));
    return tokens.back();
  }
  // A running sequence holding `held` of `total` tokens.
  PlanSequence& run(uint64_t request, int64_t held, int64_t total, bool decoding, uint64_t admitted,
                    int priority = 0, int32_t base = 0) {
    PlanSequence s;
    s.request = request;
    s.priority = priority;
    s.admitted = admitted;
    s.held = held;
    s.tokens = make(base == 0 ? static_cast<int32_t>(request) * 1000 : base, total);
    s.decoding = decoding;
    running.push_back(s);
    return running.back();
  }
  PlanSequence& wait(uint64_t request, int64_t total, int priority = 0, int slots = 1,
                     int32_t base = 0) {
    PlanSequence s;
    s.request = request;
    s.priority = priority;
    s.tokens = make(base == 0 ? static_cast<int32_t>(request) * 1000 : base, total);
    s.slots = slots;
    waiting.push_back(s);
    return waiting.back();
  }
  ScheduleQueue view() const { return {running, waiting, next_admission}; }
};

PlannerOptions options(int max_seqs, int64_t T, int64_t ubatch, int64_t cap,
                       bool decode_first = true) {
  PlannerOptions o;
  o.max_seqs = max_seqs;
  o.max_batch_tokens = T;
  o.ubatch = ubatch;
  o.chunk_cap = cap;
  o.decode_first = decode_first;
  return o;
}

// (admitted, index, held, n) of every piece, for comparisons.
using PieceTuple = std::tuple<bool, size_t, int64_t, int64_t>;
std::vector<PieceTuple> pieces(const SchedulePlan& p) {
  std::vector<PieceTuple> out;
  for (const SchedulePlan::Piece& x : p.pieces) out.emplace_back(x.admitted, x.index, x.held, x.n);
  return out;
}

TEST(SchedulePlannerTest, DecodeFirstGivesEveryDecoderItsTokenThenPrefillsWithinBudget) {
  // T = 8, D = 3: prefill budget max(ubatch 4, 8 - 3) = 5 for the filler.
  Queue q;
  q.run(1, 10, 11, true, 1);
  q.run(2, 10, 11, true, 2);
  q.run(3, 0, 20, false, 3);
  q.run(4, 10, 11, true, 4);
  FakeCache cache;
  cache.pool = false;  // no alignment
  SchedulePlanner planner(options(8, 8, 4, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  EXPECT_EQ(plan.step.n_decode, 3);
  EXPECT_EQ(plan.step.n_prefill, 5);
  EXPECT_EQ(pieces(plan),
            (std::vector<PieceTuple>{
                {false, 0, 10, 1}, {false, 1, 10, 1}, {false, 2, 0, 5}, {false, 3, 10, 1}}));

  // Decode last: the filler takes T first and nothing is left to decode.
  SchedulePlanner last(options(8, 8, 4, 16, /*decode_first=*/false));
  last.plan(q.view(), cache, plan);
  EXPECT_EQ(plan.step.n_decode, 0);
  EXPECT_EQ(pieces(plan), (std::vector<PieceTuple>{{false, 2, 0, 8}}));
}

TEST(SchedulePlannerTest, PrefillChunksAreCappedAndEndOnBlockBoundaries) {
  Queue q;
  q.run(1, 0, 20, false, 1);   // cap 6 -> 4 (ends on a block)
  q.run(2, 4, 20, false, 2);   // 6 -> 4
  q.run(3, 18, 20, false, 3);  // finishes: 2, unaligned
  FakeCache cache;             // bs 4
  SchedulePlanner planner(options(8, 64, 16, 6));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  EXPECT_EQ(pieces(plan),
            (std::vector<PieceTuple>{{false, 0, 0, 4}, {false, 1, 4, 4}, {false, 2, 18, 2}}));
  EXPECT_EQ(plan.step.n_prefill, 10);
}

TEST(SchedulePlannerTest, StepOrderIsPriorityThenAdmissionOrder) {
  Queue q;
  q.run(1, 10, 11, true, 7, /*priority=*/0);
  q.run(2, 10, 11, true, 3, /*priority=*/0);
  q.run(3, 10, 11, true, 9, /*priority=*/2);
  q.wait(4, 8, /*priority=*/1);
  FakeCache cache;
  SchedulePlanner planner(options(8, 64, 16, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  ASSERT_EQ(plan.admissions.size(), 1u);
  EXPECT_EQ(plan.admissions[0].order, 50u);
  EXPECT_EQ(plan.next_admission, 51u);
  EXPECT_EQ(pieces(plan),
            (std::vector<PieceTuple>{
                {false, 2, 10, 1}, {true, 0, 0, 8}, {false, 1, 10, 1}, {false, 0, 10, 1}}));
}

TEST(SchedulePlannerTest, AdmitsOnlyWhatThePoolHoldsBesidesTheRunningSequencesNextStep) {
  // The decoder at 8 of 9 tokens takes a new block next step: 5 - 1 = 4 free
  // blocks for newcomers. A (16 tokens, 4 blocks) fits; B (8 tokens, 2
  // blocks) does not: its cache sequence is removed and admission stops
  // there, so C behind it waits too.
  Queue q;
  q.run(1, 8, 9, true, 1);
  q.wait(2, 16);
  q.wait(3, 8);
  q.wait(4, 1);
  FakeCache cache;
  cache.free = 5;
  SchedulePlanner planner(options(8, 64, 16, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  ASSERT_EQ(plan.admissions.size(), 1u);
  EXPECT_EQ(plan.admissions[0].waiting, 0u);
  EXPECT_EQ(plan.admissions[0].seq, 100);
  EXPECT_EQ(cache.removed, (std::vector<int>{101}));
  EXPECT_TRUE(plan.refused.empty());
  EXPECT_EQ(pieces(plan), (std::vector<PieceTuple>{{false, 0, 8, 1}, {true, 0, 0, 16}}));
}

TEST(SchedulePlannerTest, ASequenceAloneIsAdmittedWhateverThePoolHolds) {
  Queue q;
  q.wait(1, 64);
  FakeCache cache;
  cache.free = 0;
  SchedulePlanner planner(options(8, 64, 16, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  ASSERT_EQ(plan.admissions.size(), 1u);
  EXPECT_EQ(pieces(plan), (std::vector<PieceTuple>{{true, 0, 0, 16}}));
}

TEST(SchedulePlannerTest, PrefixHitsStartTheFillAndCountAgainstTheFreeBlocks) {
  // A 13-token prompt with 8 cached positions feeds 5 tokens from 8.
  {
    Queue q;
    const PlanSequence& w = q.wait(1, 13);
    FakeCache cache;
    cache.hits[std::vector<int32_t>(w.tokens.begin(), w.tokens.end())] = 8;
    SchedulePlanner planner(options(8, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    ASSERT_EQ(plan.admissions.size(), 1u);
    EXPECT_EQ(plan.admissions[0].cached, 8);
    EXPECT_EQ(pieces(plan), (std::vector<PieceTuple>{{true, 0, 8, 5}}));
  }
  // The hit revives 2 cached blocks from the free queue: 4 free before it,
  // 2 after; the decoder reserves 1, so the 2 blocks the rest needs do not
  // fit (they would, judged before the hit was taken).
  {
    Queue q;
    q.run(1, 8, 9, true, 1);
    const PlanSequence& w = q.wait(2, 13);
    FakeCache cache;
    cache.free = 4;
    cache.hits[std::vector<int32_t>(w.tokens.begin(), w.tokens.end())] = 8;
    SchedulePlanner planner(options(8, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    EXPECT_TRUE(plan.admissions.empty());
    EXPECT_EQ(cache.removed, (std::vector<int>{100}));
    EXPECT_EQ(cache.free, 4);  // its cached blocks went back
  }
}

TEST(SchedulePlannerTest, MaxSeqsCountsTheSlotsAnUnforkedRequestReserves) {
  // One running, max_seqs 2: a request of 3 choices not yet forked reserves
  // min(3, 2) = 2 slots and waits; the single request behind it waits too
  // (admission keeps the queue's order).
  {
    Queue q;
    q.run(1, 10, 11, true, 1);
    q.wait(2, 8, 0, /*slots=*/2);
    q.wait(3, 8);
    FakeCache cache;
    SchedulePlanner planner(options(2, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    EXPECT_TRUE(plan.admissions.empty());
    EXPECT_EQ(cache.seq_slots, 64);  // no cache sequence asked for
  }
  // Nothing running: two of three single requests are admitted.
  {
    Queue q;
    q.wait(1, 8);
    q.wait(2, 8);
    q.wait(3, 8);
    FakeCache cache;
    SchedulePlanner planner(options(2, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    ASSERT_EQ(plan.admissions.size(), 2u);
    EXPECT_EQ(plan.admissions[1].waiting, 1u);
  }
}

TEST(SchedulePlannerTest, WaitsForASequenceStillFillingASharedPrefix) {
  // The running sequence shares a block (4 tokens) with the newcomer and is
  // still filling: the newcomer waits. Once it decodes, it is admitted.
  for (bool decoding : {false, true}) {
    Queue q;
    q.run(1, 4, decoding ? 9 : 16, decoding, 1, 0, /*base=*/500);
    q.wait(2, 12, 0, 1, /*base=*/500);
    FakeCache cache;
    SchedulePlanner planner(options(8, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    EXPECT_EQ(plan.admissions.size(), decoding ? 1u : 0u) << "decoding " << decoding;
  }
  // Without prefix caching nothing is shared, so nothing waits.
  Queue q;
  q.run(1, 4, 16, false, 1, 0, 500);
  q.wait(2, 12, 0, 1, 500);
  FakeCache cache;
  cache.prefix = false;
  SchedulePlanner planner(options(8, 64, 16, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  EXPECT_EQ(plan.admissions.size(), 1u);
}

TEST(SchedulePlannerTest, NoRoomForASequenceWaitsWhileOthersRunAndRefusesWhenAlone) {
  {
    Queue q;
    q.run(1, 10, 11, true, 1);
    q.wait(2, 8);
    FakeCache cache;
    cache.seq_slots = 0;
    SchedulePlanner planner(options(8, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    EXPECT_TRUE(plan.admissions.empty());
    EXPECT_TRUE(plan.refused.empty());
  }
  {
    Queue q;
    q.wait(1, 8);
    q.wait(2, 8);
    FakeCache cache;
    cache.seq_slots = 0;
    SchedulePlanner planner(options(8, 64, 16, 16));
    SchedulePlan plan;
    planner.plan(q.view(), cache, plan);
    EXPECT_TRUE(plan.admissions.empty());
    ASSERT_EQ(plan.refused.size(), 2u);
    EXPECT_EQ(plan.refused[0].status.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(plan.refused[0].status.message().find("admission"), std::string::npos);
    EXPECT_TRUE(plan.pieces.empty());
  }
}

TEST(SchedulePlannerTest, AFailedPrefixLookupRefusesTheWholeRequest) {
  // Request 1 has a choice running and two waiting; the lookup of the first
  // waiting one fails: the request is refused, its other waiting choice is
  // skipped, its running choice leaves the step, and request 2 is admitted.
  Queue q;
  q.run(1, 10, 11, true, 1, 0, 700);
  // The tokens by value: the next wait() may move the waiting vector (the
  // span points into Queue::tokens, which never moves its rows).
  const std::span<const int32_t> bad = q.wait(1, 8, 0, 1, 700).tokens;
  q.wait(1, 8, 0, 1, 700);
  q.wait(2, 8);
  FakeCache cache;
  cache.prefix = false;
  cache.fail_take.assign(bad.begin(), bad.end());
  SchedulePlanner planner(options(8, 64, 16, 16));
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  ASSERT_EQ(plan.refused.size(), 1u);
  EXPECT_EQ(plan.refused[0].waiting, 0u);
  EXPECT_EQ(plan.refused[0].status.code(), StatusCode::kInternal);
  EXPECT_NE(plan.refused[0].status.message().find("prefix lookup"), std::string::npos);
  EXPECT_EQ(cache.removed, (std::vector<int>{100}));
  ASSERT_EQ(plan.admissions.size(), 1u);
  EXPECT_EQ(plan.admissions[0].waiting, 2u);
  EXPECT_EQ(pieces(plan), (std::vector<PieceTuple>{{true, 0, 0, 8}}));
}

TEST(SchedulePlannerTest, PreemptsTheNewestLowestPrioritySequenceThenSkipsOneAdmission) {
  Queue q;
  q.run(1, 10, 11, true, 1, /*priority=*/0);
  q.run(2, 10, 11, true, 5, /*priority=*/0);
  q.run(3, 10, 11, true, 9, /*priority=*/1);
  SchedulePlanner planner(options(8, 64, 16, 16));
  const Preemption p = planner.plan_preemption(q.running);
  EXPECT_EQ(p.kind, Preemption::Kind::kPreempt);
  EXPECT_EQ(p.index, 1u);

  // The next plan admits nothing (the freed blocks go to the running
  // sequences first); the one after admits again.
  q.running.erase(q.running.begin() + 1);
  q.wait(2, 11);
  FakeCache cache;
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  EXPECT_TRUE(plan.admissions.empty());
  EXPECT_EQ(plan.pieces.size(), 2u);
  planner.plan(q.view(), cache, plan);
  EXPECT_EQ(plan.admissions.size(), 1u);
}

TEST(SchedulePlannerTest, ASequenceAloneThatDoesNotFitEndsOrFails) {
  SchedulePlanner planner(options(8, 64, 16, 16));
  Queue q;
  q.run(1, 10, 11, true, 1);
  EXPECT_EQ(planner.plan_preemption(q.running).kind, Preemption::Kind::kEndContextFull);
  q.running[0].decoding = false;
  EXPECT_EQ(planner.plan_preemption(q.running).kind, Preemption::Kind::kFailRequest);
  // Neither is a preemption: the next plan still admits.
  q.running.clear();
  q.wait(2, 8);
  FakeCache cache;
  SchedulePlan plan;
  planner.plan(q.view(), cache, plan);
  EXPECT_EQ(plan.admissions.size(), 1u);
}

TEST(SchedulePlannerTest, RefusesARequestThatCouldNeverFit) {
  // n_ctx 32, KV capacity 16 positions of one sequence.
  EXPECT_TRUE(check_request_fits(10, 7, 32, 16).ok());   // 10 + 7 - 1 = 16
  EXPECT_TRUE(check_request_fits(10, 0, 32, 16).ok());   // nothing to generate
  EXPECT_TRUE(check_request_fits(10, -1, 17, 16).ok());  // up to n_ctx - 1 = 16
  Status s = check_request_fits(10, 8, 32, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("set max_tokens to at most 7"), std::string::npos) << s.message();
  s = check_request_fits(10, -1, 32, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("generating up to the context of 32 tokens, needs 31"),
            std::string::npos)
      << s.message();
  s = check_request_fits(20, 4, 32, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not fit the KV cache"), std::string::npos) << s.message();
  EXPECT_EQ(check_request_fits(32, 1, 32, 64).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(check_request_fits(30, 3, 32, 64).code(), StatusCode::kOutOfRange);
}

}  // namespace schedule_planner_test
}  // namespace folio
