// NgramProposer (prompt lookup) and the speculation options: the longest
// n-gram with an earlier occurrence decides, the most recent occurrence
// wins, proposals stop at max_draft and at the sequence's end; the options
// refuse values outside their ranges; the acceptance rule stops a sequence
// only after its warm-up.
#include "engine/ngram_proposer.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/speculative_options.h"

namespace folio {
namespace ngram_proposer_test {

std::vector<int32_t> propose(const NgramProposer& p, const std::vector<int32_t>& t, int max) {
  std::vector<int32_t> out = {99};  // replaced
  p.propose_one(t, max, out);
  return out;
}

TEST(NgramProposer, ProposesWhatFollowedTheLastNgram) {
  const NgramProposer p(2, 3);
  // ... 5 6 7 8 9 ... 5 6 -> 7 8 9
  const std::vector<int32_t> t = {1, 5, 6, 7, 8, 9, 2, 5, 6};
  EXPECT_EQ(propose(p, t, 3), (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ(propose(p, t, 2), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(propose(p, t, 0), (std::vector<int32_t>{}));
}

TEST(NgramProposer, StopsAtTheEndOfTheSequence) {
  const NgramProposer p(1, 2);
  // The match 3 4 ends one token before the key: only that token follows.
  const std::vector<int32_t> t = {3, 4, 3, 4};
  EXPECT_EQ(propose(p, t, 8), (std::vector<int32_t>{3, 4}));
  const std::vector<int32_t> u = {7, 7, 7};
  EXPECT_EQ(propose(p, u, 8), (std::vector<int32_t>{7}));
}

TEST(NgramProposer, LongerNgramWinsOverMoreRecentShorterOne) {
  const NgramProposer p(1, 3);
  // Key (n = 3) "1 2 3" occurred at the start, followed by 40; "2 3" and "3"
  // occur later followed by 50 and 60: the 3-gram decides.
  const std::vector<int32_t> t = {1, 2, 3, 40, 9, 2, 3, 50, 3, 60, 1, 2, 3};
  EXPECT_EQ(propose(p, t, 1), (std::vector<int32_t>{40}));
  // With n_max = 2 the most recent 2-gram "2 3" (followed by 50) decides.
  const NgramProposer q(1, 2);
  EXPECT_EQ(propose(q, t, 1), (std::vector<int32_t>{50}));
}

TEST(NgramProposer, MostRecentOccurrenceWins) {
  const NgramProposer p(2, 2);
  const std::vector<int32_t> t = {4, 5, 10, 4, 5, 11, 4, 5};
  EXPECT_EQ(propose(p, t, 1), (std::vector<int32_t>{11}));
}

TEST(NgramProposer, NothingBelowNMin) {
  const NgramProposer p(3, 4);
  const std::vector<int32_t> t = {1, 2, 9, 8, 1, 2};  // only a 2-gram repeats
  EXPECT_TRUE(propose(p, t, 4).empty());
  EXPECT_TRUE(propose(p, {}, 4).empty());
  EXPECT_TRUE(propose(p, {1, 2, 3}, 4).empty());
}

TEST(SpeculativeOptions, ValidateRefusesOutOfRange) {
  SpeculativeOptions o;
  o.type = SpecType::kNgram;
  EXPECT_TRUE(o.validate().ok());
  SpeculativeOptions b = o;
  b.ngram_min = 0;
  EXPECT_FALSE(b.validate().ok());
  b = o;
  b.ngram_max = 1;  // below n_min = 2
  EXPECT_FALSE(b.validate().ok());
  b = o;
  b.draft_max = 0;
  EXPECT_FALSE(b.validate().ok());
  b = o;
  b.draft_min = b.draft_max + 1;
  EXPECT_FALSE(b.validate().ok());
  b = o;
  b.max_batch = 0;
  EXPECT_FALSE(b.validate().ok());
  b = o;
  b.min_accept = 1.5;
  EXPECT_FALSE(b.validate().ok());
  EXPECT_EQ(*parse_spec_type("ngram"), SpecType::kNgram);
  EXPECT_EQ(*parse_spec_type("none"), SpecType::kNone);
  const auto bad = parse_spec_type("eagle");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().to_string().find("eagle"), std::string::npos);
  EXPECT_EQ(*parse_spec_type("draft"), SpecType::kDraft);
  EXPECT_EQ(*make_proposer(SpeculativeOptions{}), nullptr);
  EXPECT_NE(*make_proposer(o), nullptr);
  // A draft type needs its model; --draft-p-min is a probability.
  SpeculativeOptions d = o;
  d.type = SpecType::kDraft;
  const auto no_model = make_proposer(d);
  ASSERT_FALSE(no_model.ok());
  EXPECT_NE(no_model.status().message().find("-md"), std::string::npos);
  d.draft_p_min = 1.5f;
  EXPECT_FALSE(d.validate().ok());
}

TEST(SpeculationTracker, PausesAfterWarmupBelowTheThresholdThenRetries) {
  using T = SpeculationTracker;
  T t;
  for (int i = 0; i < T::kWarmup - 1; ++i) {
    t.record(4, 0, 0.5);
    EXPECT_FALSE(t.paused()) << i;
  }
  t.record(4, 0, 0.5);
  EXPECT_TRUE(t.paused());
  EXPECT_EQ(t.drafted(), 4 * T::kWarmup);
  EXPECT_EQ(t.accepted(), 0);
  for (int i = 0; i < T::kFirstPause; ++i) EXPECT_FALSE(t.take_step()) << i;
  EXPECT_TRUE(t.take_step());  // tries again, with a fresh warm-up
  for (int i = 0; i < T::kWarmup - 1; ++i) t.record(4, 0, 0.5);
  EXPECT_FALSE(t.paused());
  t.record(4, 0, 0.5);
  int paused = 0;
  while (!t.take_step()) ++paused;
  EXPECT_EQ(paused, 2 * T::kFirstPause);  // each pause twice the last

  T good;
  for (int i = 0; i < 20; ++i) good.record(4, 3, 0.5);
  EXPECT_TRUE(good.take_step());
  T never;
  for (int i = 0; i < 20; ++i) never.record(4, 0, 0.0);  // 0: never pauses
  EXPECT_TRUE(never.take_step());
}

TEST(SpeculationCounts, CountsPerPosition) {
  SpeculationCounts c;
  c.record(3, 2);
  c.record(2, 0);
  c.record(0, 0);  // no drafts: not a verification
  EXPECT_EQ(c.drafts, 2u);
  EXPECT_EQ(c.draft_tokens, 5u);
  EXPECT_EQ(c.accepted_tokens, 2u);
  EXPECT_EQ(c.accepted_per_pos, (std::vector<uint64_t>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(c.acceptance(), 0.4);
}

}  // namespace ngram_proposer_test
}  // namespace folio
