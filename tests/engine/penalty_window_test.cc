#include "engine/penalty_window.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

namespace folio {
namespace penalty_window_test {

TEST(PenaltyWindow, BoundedKeepsTheLastN) {
  PenaltyWindow w(3);
  w.push(std::vector<int32_t>{5, 6, 5});
  EXPECT_EQ(w.size(), 3);
  EXPECT_EQ(w.count(5), 2);
  EXPECT_EQ(w.count(6), 1);
  w.push(7);  // evicts the first 5
  EXPECT_EQ(w.size(), 3);
  EXPECT_EQ(w.count(5), 1);
  EXPECT_EQ(w.count(7), 1);
  w.push(8);  // evicts 6
  EXPECT_EQ(w.count(6), 0);
  EXPECT_EQ(w.counts().size(), 3u);  // 5, 7, 8
  w.clear();
  EXPECT_EQ(w.size(), 0);
  EXPECT_TRUE(w.counts().empty());
  w.push(1);
  EXPECT_EQ(w.count(1), 1);
}

TEST(PenaltyWindow, ZeroKeepsNothingAndMinusOneKeepsAll) {
  PenaltyWindow off(0);
  off.push(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(off.size(), 0);
  EXPECT_TRUE(off.counts().empty());
  PenaltyWindow all(-1);
  for (int i = 0; i < 1000; ++i) all.push(i % 10);
  EXPECT_EQ(all.size(), 1000);
  EXPECT_EQ(all.count(3), 100);
}

TEST(PenaltyWindow, MatchesBruteForceOnRandomStream) {
  std::mt19937 rng(3);
  PenaltyWindow w(17);
  std::vector<int32_t> all;
  for (int i = 0; i < 2000; ++i) {
    const auto t = static_cast<int32_t>(rng() % 12);
    w.push(t);
    all.push_back(t);
    std::map<int32_t, int32_t> want;
    const size_t from = all.size() > 17 ? all.size() - 17 : 0;
    for (size_t j = from; j < all.size(); ++j) ++want[all[j]];
    ASSERT_EQ(w.counts().size(), want.size()) << "step " << i;
    for (const auto& [tok, n] : want) ASSERT_EQ(w.count(tok), n) << "step " << i;
  }
}

}  // namespace
}  // namespace folio
