#include "chat_context.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio::tools {
namespace chat_context_test {

// A conversation as token counts: `fixed` for the system prompt, template
// framing and the last user message, plus one count per user/assistant pair.
struct Conversation {
  int64_t fixed;
  std::vector<int64_t> pairs;
  std::vector<size_t> asked;  // the k values prompt_tokens was called with

  Result<int64_t> tokens(size_t drop) {
    asked.push_back(drop);
    int64_t n = fixed;
    for (size_t i = drop; i < pairs.size(); ++i) n += pairs[i];
    return n;
  }
  Result<ContextFit> fit(int64_t n_ctx, int64_t room) {
    return fit_conversation(pairs.size(), n_ctx, room, [this](size_t k) { return tokens(k); });
  }
};

TEST(ChatContext, ReplyRoom) {
  EXPECT_EQ(reply_room(100, 4096), 100);
  EXPECT_EQ(reply_room(512, 128), 64);    // at most half the context
  EXPECT_EQ(reply_room(-1, 4096), 1024);  // unbounded replies: a quarter
  EXPECT_EQ(reply_room(0, 4096), 1);
}

TEST(ChatContext, FitsWithoutDropping) {
  Conversation c{10, {20, 20}};
  auto fit = c.fit(100, 50);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pairs_dropped, 0u);
  EXPECT_EQ(fit->n_prompt, 50);
  EXPECT_FALSE(fit->short_of_room);
  EXPECT_EQ(c.asked, std::vector<size_t>({0}));
}

TEST(ChatContext, DropsFewestOldestPairs) {
  Conversation c{10, {30, 5, 20, 20}};
  // 85 + 30 > 100; without the first pair 55 + 30 fits.
  auto fit = c.fit(100, 30);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pairs_dropped, 1u);
  EXPECT_EQ(fit->n_prompt, 55);
  // The last k asked is the one returned (the caller keeps that rendering).
  EXPECT_EQ(c.asked.back(), fit->pairs_dropped);

  Conversation d{10, {30, 5, 20, 20}};
  fit = d.fit(100, 60);  // 30 + 60 fits, 50 + 60 does not: three pairs go
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pairs_dropped, 3u);
  EXPECT_EQ(fit->n_prompt, 30);
  EXPECT_EQ(d.asked.back(), 3u);
}

TEST(ChatContext, ExactFitIsAFit) {
  Conversation c{10, {20}};
  auto fit = c.fit(40, 10);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pairs_dropped, 0u);
}

TEST(ChatContext, ShortOfRoomWhenOnlyTheLastMessageFits) {
  Conversation c{90, {20, 20}};
  auto fit = c.fit(100, 30);
  ASSERT_TRUE(fit.ok());
  EXPECT_EQ(fit->pairs_dropped, 2u);
  EXPECT_EQ(fit->n_prompt, 90);
  EXPECT_TRUE(fit->short_of_room);
}

TEST(ChatContext, MessageTooLongIsOutOfRange) {
  Conversation c{100, {20}};
  auto fit = c.fit(100, 10);
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(fit.status().message().find("100"), std::string::npos);
}

TEST(ChatContext, RenderErrorsPassThrough) {
  auto fit = fit_conversation(2, 100, 10, [](size_t) -> Result<int64_t> {
    return invalid_argument("roles must alternate");
  });
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace folio::tools
