// Sampler: each stage of the chain on hand-made rows (exact candidate sets and
// probabilities via Sampler::distribution), greedy, logit bias, penalties and
// logprobs. Draw statistics and reproducibility live in sampler_draw_test.cc.
#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "sampler_test_util.h"

namespace folio {
namespace sampler_test {

using sampler_testing::make_sampler;
using sampler_testing::random_row;

// Only the stages a test names: everything else off.
SamplingParams plain(float temperature = 1.0f) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  return p;
}



// Logits whose softmax is exactly `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

std::set<int32_t> ids(const std::vector<TokenProb>& d) {
  std::set<int32_t> s;
  for (const TokenProb& t : d) s.insert(t.token);
  return s;
}

std::vector<TokenProb> dist(Sampler& s, const std::vector<float>& row) {
  SamplerWorkspace ws;
  auto d = s.distribution(row, ws);
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? *d : std::vector<TokenProb>{};
}

// Softmax (double) of row[i] / temp over `keep`.
std::map<int32_t, double> softmax_over(const std::vector<float>& row, const std::set<int32_t>& keep,
                                       double temp = 1.0) {
  double mx = -INFINITY;
  for (int32_t i : keep) mx = std::max(mx, static_cast<double>(row[i]));
  double z = 0.0;
  for (int32_t i : keep) z += std::exp((row[i] - mx) / temp);
  std::map<int32_t, double> p;
  for (int32_t i : keep) p[i] = std::exp((row[i] - mx) / temp) / z;
  return p;
}

void expect_probs(const std::vector<TokenProb>& d, const std::map<int32_t, double>& want) {
  ASSERT_EQ(d.size(), want.size());
  for (const TokenProb& t : d) {
    ASSERT_TRUE(want.count(t.token)) << "unexpected token " << t.token;
    EXPECT_NEAR(t.prob, want.at(t.token), 1e-6) << "token " << t.token;
  }
}

TEST(Sampler, GreedyPicksArgmax) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const auto row = random_row(1000, seed, 3.0f);
    const auto want = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
    Sampler s = make_sampler(plain(0.0f), 1000);
    SamplerWorkspace ws;
    auto r = s.sample(row, ws);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->token, want);
  }
}

TEST(Sampler, GreedyTiesGoToLowestId) {
  Sampler s = make_sampler(plain(0.0f), 5);
  SamplerWorkspace ws;
  const std::vector<float> row = {1.0f, 3.0f, 2.0f, 3.0f, 3.0f};
  EXPECT_EQ(s.sample(row, ws)->token, 1);
  // The same through top_k = 1 at a high temperature.
  SamplingParams p = plain(5.0f);
  p.top_k = 1;
  Sampler k1 = make_sampler(p, 5);
  EXPECT_EQ(k1.sample(row, ws)->token, 1);
}

TEST(Sampler, GreedyIgnoresTruncationSettings) {
  SamplingParams p = plain(0.0f);
  p.top_k = 3;
  p.top_p = 0.1f;
  p.min_p = 0.9f;
  Sampler s = make_sampler(p, 1000);
  SamplerWorkspace ws;
  const auto row = random_row(1000, 7, 3.0f);
  const auto want = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  EXPECT_EQ(s.sample(row, ws)->token, want);
}

TEST(Sampler, TopK1EqualsGreedyAtAnyTemperature) {
  for (float temp : {0.1f, 0.7f, 1.0f, 3.0f, 100.0f}) {
    SamplingParams p = plain(temp);
    p.top_k = 1;
    p.top_p = 0.9f;  // must not matter
    Sampler k1 = make_sampler(p, 500);
    Sampler greedy = make_sampler(plain(0.0f), 500);
    SamplerWorkspace ws;
    for (uint32_t i = 0; i < 50; ++i) {
      const auto row = random_row(500, 100 + i, 3.0f);
      EXPECT_EQ(k1.sample(row, ws)->token, greedy.sample(row, ws)->token) << "temp " << temp;
    }
  }
}

TEST(Sampler, NoTruncationKeepsEveryFiniteToken) {
  const auto row = random_row(300, 3, 3.0f);
  Sampler s = make_sampler(plain(1.0f), 300);
  std::set<int32_t> all;
  for (int32_t i = 0; i < 300; ++i) all.insert(i);
  expect_probs(dist(s, row), softmax_over(row, all));
}

TEST(Sampler, TopKKeepsTheKBest) {
  const auto row = random_row(1000, 11, 3.0f);
  std::vector<int32_t> order(1000);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  for (int32_t k : {1, 2, 5, 40, 999, 1000, 5000}) {
    SamplingParams p = plain(1.0f);
    p.top_k = k;
    Sampler s = make_sampler(p, 1000);
    const std::set<int32_t> want(order.begin(), order.begin() + std::min(k, 1000));
    const auto d = dist(s, row);
    EXPECT_EQ(ids(d), want) << "k " << k;
    expect_probs(d, softmax_over(row, want));
  }
}

TEST(Sampler, TopKTiesAtTheBoundaryKeepLowerIds) {
  SamplingParams p = plain(1.0f);
  p.top_k = 2;
  Sampler s = make_sampler(p, 6);
  const std::vector<float> row = {1.0f, 4.0f, 5.0f, 4.0f, 4.0f, 0.0f};
  EXPECT_EQ(ids(dist(s, row)), (std::set<int32_t>{1, 2}));
}

TEST(Sampler, TopKOnLargeRowsWithTiesAndMaskedTokens) {
  // Quantised logits (many ties), a few hugely negative "masked" logits and
  // banned (-inf) tokens: the k best by (logit desc, id asc).
  const int32_t n = 50000;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    auto row = random_row(n, 900 + seed, 3.0f);
    for (float& x : row) x = std::round(x * 2.0f) / 2.0f;
    for (int32_t i = 0; i < n; i += 97) row[static_cast<size_t>(i)] = -1e30f;
    for (int32_t i = 5; i < n; i += 101) row[static_cast<size_t>(i)] = -INFINITY;
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (int32_t k : {1, 7, 40, 333, 4000}) {
      SamplingParams p = plain(1.0f);
      p.top_k = k;
      Sampler s = make_sampler(p, n);
      const std::set<int32_t> want(order.begin(), order.begin() + k);
      EXPECT_EQ(ids(dist(s, row)), want) << "seed " << seed << " k " << k;
    }
  }
}

// probs 0.5 / 0.25 / 0.15 / 0.1 placed at scrambled ids, plus `n_tiny` tokens
// with negligible mass so top_k = 4 takes the sorted path and top_k = 0 the
// bucketed one.
std::vector<float> four_level_row(int32_t n_tiny) {
  std::vector<float> row(4 + static_cast<size_t>(n_tiny), -60.0f);
  const auto l = logits_of({0.5, 0.25, 0.15, 0.1});
  row[2] = l[0];
  row[0] = l[1];
  row[3] = l[2];
  row[1] = l[3];
  return row;
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  struct Case {
    float top_p;
    std::set<int32_t> want;  // ids, by the layout of four_level_row
  };
  const std::vector<Case> cases = {
      {0.3f, {2}},            // 0.5 >= 0.3
      {0.6f, {2, 0}},         // 0.5 < 0.6 <= 0.75
      {0.8f, {2, 0, 3}},      // 0.75 < 0.8 <= 0.9
      {0.95f, {2, 0, 3, 1}},  // 0.9 < 0.95
  };
  for (int32_t top_k : {0, 4}) {
    for (const Case& c : cases) {
      SamplingParams p = plain(1.0f);
      p.top_k = top_k;
      p.top_p = c.top_p;
      Sampler s = make_sampler(p, 1004);
      const auto row = four_level_row(1000);
      const auto d = dist(s, row);
      EXPECT_EQ(ids(d), c.want) << "top_p " << c.top_p << " top_k " << top_k;
      expect_probs(d, softmax_over(row, c.want));
    }
  }
}

TEST(Sampler, TopPIsNormalisedOverWhatTopKKept) {
  // probs 0.4 / 0.3 / 0.2 / 0.1. top_p 0.5 alone needs {0.4, 0.3}; after
  // top_k 2 the renormalised 0.4 / 0.7 = 0.57 reaches it alone.
  const auto row = logits_of({0.4, 0.3, 0.2, 0.1});
  SamplingParams p = plain(1.0f);
  p.top_p = 0.5f;
  Sampler alone = make_sampler(p, 4);
  EXPECT_EQ(ids(dist(alone, row)), (std::set<int32_t>{0, 1}));
  p.top_k = 2;
  Sampler after_k = make_sampler(p, 4);
  EXPECT_EQ(ids(dist(after_k, row)), (std::set<int32_t>{0}));
}

// Reference top_p: full sort, smallest prefix with cumulative mass >= p.
std::set<int32_t> reference_top_p(const std::vector<float>& row, double top_p) {
  std::vector<int32_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  const double mx = row[order[0]];
  double z = 0.0;
  for (float l : row) z += std::exp(l - mx);
  std::set<int32_t> keep;
  double cum = 0.0;
  for (int32_t i : order) {
    keep.insert(i);
    cum += std::exp(row[i] - mx) / z;
    if (cum >= top_p) break;
  }
  return keep;
}

TEST(Sampler, BucketedTopPMatchesFullSortReference) {
  for (uint32_t seed = 0; seed < 6; ++seed) {
    const float scale = seed % 2 == 0 ? 3.0f : 0.5f;  // peaked and flat rows
    const auto row = random_row(20000, 500 + seed, scale);
    for (float top_p : {0.05f, 0.5f, 0.9f, 0.99f}) {
      SamplingParams p = plain(1.0f);
      p.top_p = top_p;
      Sampler s = make_sampler(p, 20000);
      EXPECT_EQ(ids(dist(s, row)), reference_top_p(row, top_p))
          << "seed " << seed << " top_p " << top_p;
    }
  }
}

TEST(Sampler, TopPWithAllEqualLogitsKeepsLowestIds) {
  SamplingParams p = plain(1.0f);
  p.top_p = 0.35f;  // 4 of 10 equal tokens: 0.3 < 0.35 <= 0.4
  Sampler s = make_sampler(p, 10);
  const std::vector<float> row(10, 2.0f);
  EXPECT_EQ(ids(dist(s, row)), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(Sampler, MinPKeepsTokensAboveFractionOfMax) {
  const auto row = four_level_row(100);  // 0.5 @2, 0.25 @0, 0.15 @3, 0.1 @1
  struct Case {
    float min_p;
    std::set<int32_t> want;
  };
  for (const Case& c : std::vector<Case>{{0.1f, {2, 0, 3, 1}},  // >= 0.05
                                         {0.25f, {2, 0, 3}},    // >= 0.125
                                         {0.4f, {2, 0}},        // >= 0.2
                                         {0.9f, {2}},           // >= 0.45
                                         {1.0f, {2}}}) {
    SamplingParams p = plain(1.0f);
    p.min_p = c.min_p;
    Sampler s = make_sampler(p, 104);
    const auto d = dist(s, row);
    EXPECT_EQ(ids(d), c.want) << "min_p " << c.min_p;
    expect_probs(d, softmax_over(row, c.want));
  }
}

TEST(Sampler, MinPAndTopPKeepTheIntersection) {
  const auto row = four_level_row(100);
  SamplingParams p = plain(1.0f);
  p.top_p = 0.8f;  // alone: {2, 0, 3}
  p.min_p = 0.4f;  // alone: {2, 0}
  Sampler a = make_sampler(p, 104);
  EXPECT_EQ(ids(dist(a, row)), (std::set<int32_t>{2, 0}));
  p.top_p = 0.6f;   // alone: {2, 0}
  p.min_p = 0.25f;  // alone: {2, 0, 3}
  Sampler b = make_sampler(p, 104);
  EXPECT_EQ(ids(dist(b, row)), (std::set<int32_t>{2, 0}));
  p.top_k = 4;  // the sorted path agrees
  Sampler c = make_sampler(p, 104);
  EXPECT_EQ(ids(dist(c, row)), (std::set<int32_t>{2, 0}));
  // top_p's mass is normalised before min_p filters: 0.5 < 0.55 needs two
  // tokens (renormalised over min_p's {0.5, 0.25}, 0.67 would need only one).
  for (int32_t top_k : {0, 4}) {
    p.top_k = top_k;
    p.top_p = 0.55f;
    p.min_p = 0.4f;
    Sampler d = make_sampler(p, 104);
    EXPECT_EQ(ids(dist(d, row)), (std::set<int32_t>{2, 0})) << "top_k " << top_k;
  }
}

TEST(Sampler, TemperatureAppliesAfterTruncation) {
  // top_p 0.6 at temperature 1 keeps {0.5, 0.25}; a temperature of 3 would
  // flatten the distribution (and keep more) if it came first.
  const auto row = four_level_row(0);
  SamplingParams p = plain(3.0f);
  p.top_p = 0.6f;
  Sampler s = make_sampler(p, 4);
  const std::set<int32_t> want = {2, 0};
  expect_probs(dist(s, row), softmax_over(row, want, 3.0));
  // And without truncation the probabilities are softmax(logits / T).
  Sampler t = make_sampler(plain(0.5f), 4);
  expect_probs(dist(t, row), softmax_over(row, {0, 1, 2, 3}, 0.5));
}

TEST(Sampler, LogitBiasShiftsAndBans) {
  const std::vector<float> row = {1.0f, 2.0f, 3.0f, 0.0f};
  SamplingParams p = plain(0.0f);
  p.logit_bias = {{2, -INFINITY}, {3, 1.5f}};
  Sampler greedy = make_sampler(p, 4);
  SamplerWorkspace ws;
  EXPECT_EQ(greedy.sample(row, ws)->token, 1);
  p.logit_bias = {{2, -INFINITY}, {3, 2.5f}};
  Sampler greedy2 = make_sampler(p, 4);
  EXPECT_EQ(greedy2.sample(row, ws)->token, 3);

  // Biased probabilities at temperature 1.
  p.temperature = 1.0f;
  p.logit_bias = {{0, 2.0f}};
  Sampler s = make_sampler(p, 4);
  const std::vector<float> biased = {3.0f, 2.0f, 3.0f, 0.0f};
  expect_probs(dist(s, row), softmax_over(biased, {0, 1, 2, 3}));
}

TEST(Sampler, BannedTokenIsNeverSampled) {
  const int32_t n = 50;
  auto row = random_row(n, 42, 1.0f);
  row[7] = 10.0f;  // by far the most likely, then banned
  SamplingParams p = plain(1.5f);
  p.logit_bias = {{7, -INFINITY}};
  Sampler s = make_sampler(p, n);
  SamplerWorkspace ws;
  std::set<int32_t> seen;
  for (int i = 0; i < 5000; ++i) {
    const auto r = s.sample(row, ws);
    ASSERT_TRUE(r.ok());
    ASSERT_NE(r->token, 7);
    seen.insert(r->token);
  }
  EXPECT_GT(seen.size(), 30u);  // it really sampled
}

TEST(Sampler, EverythingBannedIsAnError) {
  SamplingParams p = plain(1.0f);
  p.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {2, -INFINITY}};
  Sampler s = make_sampler(p, 3);
  SamplerWorkspace ws;
  const std::vector<float> row = {1.0f, 2.0f, 3.0f};
  auto r = s.sample(row, ws);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  // NaN rows too: NaN counts as -inf.
  Sampler plain_s = make_sampler(plain(0.0f), 3);
  const std::vector<float> nan_row(3, NAN);
  EXPECT_FALSE(plain_s.sample(nan_row, ws).ok());
  const std::vector<float> some_nan = {NAN, 1.0f, NAN};
  EXPECT_EQ(plain_s.sample(some_nan, ws)->token, 1);
}

TEST(Sampler, WrongRowSizeIsAnError) {
  Sampler s = make_sampler(plain(1.0f), 10);
  SamplerWorkspace ws;
  const std::vector<float> row(9, 0.0f);
  EXPECT_FALSE(s.sample(row, ws).ok());
  EXPECT_FALSE(s.distribution(row, ws).ok());
}

TEST(Sampler, PenaltiesOnHandMadeRow) {
  // History 0, 1, 1 (token 3 never seen).
  const std::vector<float> row = {2.0f, -1.0f, 0.5f, 3.0f};
  SamplingParams p = plain(1.0f);
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s = make_sampler(p, 4);
  s.accept(std::vector<int32_t>{0, 1, 1});
  // token 0: 2 / 2 = 1, minus 0.25 * 1 + 0.5 -> 0.25
  // token 1: -1 * 2 = -2, minus 0.25 * 2 + 0.5 -> -3
  const std::vector<float> want = {0.25f, -3.0f, 0.5f, 3.0f};
  expect_probs(dist(s, row), softmax_over(want, {0, 1, 2, 3}));
}

TEST(Sampler, RepetitionPenaltyAloneChangesGreedyChoice) {
  const std::vector<float> row = {4.0f, 3.0f, -2.0f};
  SamplingParams p = plain(0.0f);
  p.repetition_penalty = 1.5f;
  Sampler s = make_sampler(p, 3);
  SamplerWorkspace ws;
  EXPECT_EQ(s.sample(row, ws)->token, 0);
  s.accept(0);  // 4 / 1.5 = 2.67 < 3
  EXPECT_EQ(s.sample(row, ws)->token, 1);
}

TEST(Sampler, PenaltyWindowLimitsWhatCounts) {
  const std::vector<float> row = {1.0f, 1.0f, 1.0f, 1.0f};
  for (int32_t last_n : {-1, 0, 2}) {
    SamplingParams p = plain(1.0f);
    p.presence_penalty = 1.0f;
    p.penalty_last_n = last_n;
    Sampler s = make_sampler(p, 4);
    s.accept(std::vector<int32_t>{0, 1, 1, 2});
    std::vector<float> want = row;
    if (last_n == -1) {
      want = {0.0f, 0.0f, 0.0f, 1.0f};
    } else if (last_n == 2) {
      want = {1.0f, 0.0f, 0.0f, 1.0f};  // window {1, 2}
    }
    expect_probs(dist(s, row), softmax_over(want, {0, 1, 2, 3}));
    // reset() forgets the history.
    s.reset();
    expect_probs(dist(s, row), softmax_over(row, {0, 1, 2, 3}));
  }
}

TEST(Sampler, BiasComesBeforePenalties) {
  // llama.cpp's order: bias, then the repetition penalty divides the biased
  // positive logit: (1 + 3) / 2 = 2, not 1 / 2 + 3.
  const std::vector<float> row = {1.0f, 0.0f};
  SamplingParams p = plain(1.0f);
  p.logit_bias = {{0, 3.0f}};
  p.repetition_penalty = 2.0f;
  Sampler s = make_sampler(p, 2);
  s.accept(0);
  expect_probs(dist(s, row), softmax_over({2.0f, 0.0f}, {0, 1}));
}

// log_softmax in double.
std::vector<double> log_softmax(const std::vector<float>& row) {
  double mx = -INFINITY;
  for (float l : row) mx = std::max(mx, static_cast<double>(l));
  double z = 0.0;
  for (float l : row) z += std::exp(l - mx);
  std::vector<double> out;
  for (float l : row) out.push_back(l - mx - std::log(z));
  return out;
}

TEST(Sampler, LogprobsEqualLogSoftmax) {
  const int32_t n = 4000;
  const auto row = random_row(n, 77, 3.0f);
  const auto want = log_softmax(row);
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });

  // Truncation and temperature do not change the reported logprobs.
  SamplingParams p = plain(0.7f);
  p.top_k = 5;
  p.logprobs = true;
  p.top_logprobs = 20;
  Sampler s = make_sampler(p, n);
  SamplerWorkspace ws;
  for (int i = 0; i < 20; ++i) {
    const auto r = s.sample(row, ws);
    ASSERT_TRUE(r.ok());
    EXPECT_NEAR(r->logprob, want[r->token], 1e-4);
    ASSERT_EQ(r->top_logprobs.size(), 20u);
    for (size_t j = 0; j < 20; ++j) {
      EXPECT_EQ(r->top_logprobs[j].token, order[j]);
      EXPECT_NEAR(r->top_logprobs[j].logprob, want[order[j]], 1e-4);
    }
  }
}

TEST(Sampler, LogprobsSeeBiasAndPenaltiesAndSkipBannedTokens) {
  const std::vector<float> row = {0.0f, 5.0f, 1.0f, 2.0f};
  SamplingParams p = plain(0.0f);
  p.logit_bias = {{1, -INFINITY}};
  p.frequency_penalty = 1.0f;
  p.logprobs = true;
  p.top_logprobs = 4;
  Sampler s = make_sampler(p, 4);
  s.accept(3);
  SamplerWorkspace ws;
  const auto r = s.sample(row, ws);
  ASSERT_TRUE(r.ok());
  // After bias and penalty: {0, -inf, 1, 1}: greedy takes 2 (tie, lower id).
  const auto want = log_softmax({0.0f, -INFINITY, 1.0f, 1.0f});
  EXPECT_EQ(r->token, 2);
  EXPECT_NEAR(r->logprob, want[2], 1e-6);
  ASSERT_EQ(r->top_logprobs.size(), 3u);  // the banned token is left out
  EXPECT_EQ(r->top_logprobs[0].token, 2);
  EXPECT_EQ(r->top_logprobs[1].token, 3);
  EXPECT_EQ(r->top_logprobs[2].token, 0);
  EXPECT_NEAR(r->top_logprobs[2].logprob, want[0], 1e-6);
}

TEST(Sampler, NoLogprobsUnlessAsked) {
  Sampler s = make_sampler(plain(1.0f), 10);
  SamplerWorkspace ws;
  const auto r = s.sample(random_row(10, 1, 3.0f), ws);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->top_logprobs.empty());
}

TEST(Sampler, CreateRejectsInvalidParams) {
  SamplingParams p = plain(-1.0f);
  auto s = Sampler::create(p, 10);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("temperature"), std::string::npos);
  SamplingParams q = plain(1.0f);
  q.logit_bias = {{10, 1.0f}};
  EXPECT_FALSE(Sampler::create(q, 10).ok());
  EXPECT_TRUE(Sampler::create(q, 11).ok());
}

}  // namespace
}  // namespace folio
