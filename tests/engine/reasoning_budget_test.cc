// ReasoningBudget's state machine on hand-written token texts: counting
// starts after the open marker, the close marker ends the block whatever
// tokens spell it, the budget forces the closing tokens one by one, a split
// UTF-8 character is finished first, and a new block gets a new budget.
#include "engine/reasoning_budget.h"

#include <gtest/gtest.h>

#include <memory>

namespace folio {
namespace reasoning_budget_test {

using State = ReasoningBudget::State;

std::shared_ptr<const ReasoningBudgetSpec> spec(int32_t tokens, bool inside = false) {
  auto s = std::make_shared<ReasoningBudgetSpec>();
  s->tokens = tokens;
  s->open = "<think>";
  s->close = "</think>";
  s->forced = {900, 901};  // "</think>" as two tokens of some vocabulary
  s->starts_inside = inside;
  return s;
}

// Feeds free (unforced) tokens; each must find the budget not forcing.
void feed(ReasoningBudget& b, std::initializer_list<const char*> texts) {
  for (const char* t : texts) {
    ASSERT_EQ(b.forced_token(), -1) << t;
    b.accept(1, t);
  }
}

TEST(ReasoningBudgetTest, CountsFromTheOpenMarkerThenForcesTheClose) {
  ReasoningBudget b(spec(3));
  feed(b, {"Hello", " <th", "ink>"});  // the marker split between tokens
  EXPECT_EQ(b.state(), State::kCounting);
  EXPECT_EQ(b.used(), 0);
  EXPECT_EQ(b.free_tokens(), 3);
  feed(b, {"a", "b"});
  EXPECT_EQ(b.free_tokens(), 1);
  feed(b, {"c"});
  EXPECT_EQ(b.state(), State::kForcing);
  EXPECT_EQ(b.free_tokens(), 0);
  EXPECT_EQ(b.forced_token(), 900);
  b.accept(900, "</th");
  EXPECT_EQ(b.forced_token(), 901);
  b.accept(901, "ink>");
  EXPECT_EQ(b.state(), State::kDone);
  EXPECT_EQ(b.forced_token(), -1);
  EXPECT_EQ(b.free_tokens(), -1);
  feed(b, {"\n\nThe answer", " is 4."});
  EXPECT_EQ(b.state(), State::kDone);
}

TEST(ReasoningBudgetTest, ANaturalCloseForcesNothing) {
  ReasoningBudget b(spec(4, /*inside=*/true));
  EXPECT_EQ(b.state(), State::kCounting);
  feed(b, {"x", "y</", "think>"});  // 3 tokens, the last closes
  EXPECT_EQ(b.state(), State::kDone);
  feed(b, {"a", "b", "c", "d", "e"});
  EXPECT_EQ(b.state(), State::kDone);
}

TEST(ReasoningBudgetTest, ASecondBlockGetsItsOwnBudget) {
  ReasoningBudget b(spec(2, /*inside=*/true));
  feed(b, {"a", "</think>", "ok", "<think>"});
  EXPECT_EQ(b.state(), State::kCounting);
  feed(b, {"p", "q"});
  EXPECT_EQ(b.forced_token(), 900);
}

TEST(ReasoningBudgetTest, ASplitCharacterIsFinishedBeforeForcing) {
  ReasoningBudget b(spec(2, /*inside=*/true));
  feed(b, {"a", "\xE2\x82"});  // budget spent inside U+20AC
  EXPECT_EQ(b.state(), State::kWaitingUtf8);
  EXPECT_EQ(b.free_tokens(), 0);
  feed(b, {"\xAC"});
  EXPECT_EQ(b.state(), State::kForcing);
  EXPECT_EQ(b.used(), 2);
}

TEST(ReasoningBudgetTest, BudgetZeroForcesAtOnce) {
  ReasoningBudget inside(spec(0, /*inside=*/true));
  EXPECT_EQ(inside.forced_token(), 900);
  ReasoningBudget later(spec(0));
  feed(later, {"<think>"});
  EXPECT_EQ(later.forced_token(), 900);
}

TEST(ReasoningBudgetTest, AnUnexpectedTokenWhileForcingEndsTheBlock) {
  ReasoningBudget b(spec(1, /*inside=*/true));
  feed(b, {"a"});
  ASSERT_EQ(b.forced_token(), 900);
  b.accept(5, "zz");  // the caller could not force it (abandon() did not run)
  EXPECT_EQ(b.state(), State::kDone);
  ReasoningBudget c(spec(1, /*inside=*/true));
  feed(c, {"a"});
  c.abandon();
  EXPECT_EQ(c.forced_token(), -1);
}

TEST(ReasoningBudgetTest, MarkerTextOutsideABlockOnlyOpens) {
  ReasoningBudget b(spec(2));
  feed(b, {"</think>", "a", "b", "c"});  // a close with no block open
  EXPECT_EQ(b.state(), State::kOutside);
}

}  // namespace reasoning_budget_test
}  // namespace folio
