// Reasoning budgets through /v1/chat/completions on the whole serving stack
// (tiny llama, Scheduler, HttpServer) with a template that opens <think> in
// the prompt (DeepSeek-R1 distills): the tiny model never closes the block
// itself, so without a budget every token is reasoning; with budget N the
// reasoning is what the first N tokens say (the same greedy tokens as the
// unbudgeted run cut at N), then the forced </think> ends it and the
// content follows, streamed and not. The engine's tests check the tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "model_fixture.h"

namespace folio::server {
namespace server_reasoning_test {

using testing::HttpAnswer;
using testing::ServingStack;

const chat::ChatTemplate& r1_template() {
  static chat::ChatTemplate t = [] {
    std::ifstream f(std::string(FOLIO_REFDATA_DIR) +
                    "/templates/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja");
    std::stringstream ss;
    ss << f.rdbuf();
    auto r = chat::ChatTemplate::parse(ss.str(), "<s>", "</s>");
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::move(r).value();
  }();
  return t;
}

std::string body(int max_tokens, bool stream, const std::string& extra = "") {
  std::string s = R"({"messages": [{"role": "user", "content": "Tell me a story."}], )"
                  R"("temperature": 0, "max_tokens": )" +
                  std::to_string(max_tokens) + R"(, "stream": )" + (stream ? "true" : "false");
  return s + extra + "}";
}

struct Reply {
  std::string reasoning, content, finish;
  int64_t completion_tokens = -1;
};

Reply chat(int port, const std::string& b) {
  HttpAnswer a = testing::post(port, "/v1/chat/completions", b);
  EXPECT_EQ(a.status, 200) << a.body;
  Reply r;
  if (a.status != 200) return r;
  if (!a.events.empty()) {
    for (const Json& e : a.events) {
      if (e.contains("usage") && e["usage"].is_object())
        r.completion_tokens = e["usage"]["completion_tokens"].get<int64_t>();
      if (!e.contains("choices")) continue;
      for (const Json& c : e["choices"]) {
        if (c.contains("delta") && c["delta"].contains("reasoning_content"))
          r.reasoning += c["delta"]["reasoning_content"].get<std::string>();
      }
    }
    r.content = testing::streamed_text(a);
    r.finish = testing::streamed_finish(a);
    return r;
  }
  const Json j = testing::json_of(a);
  const Json& msg = j["choices"][0]["message"];
  if (msg.contains("reasoning_content")) r.reasoning = msg["reasoning_content"].get<std::string>();
  if (msg.contains("content") && msg["content"].is_string())
    r.content = msg["content"].get<std::string>();
  r.finish = j["choices"][0]["finish_reason"].get<std::string>();
  r.completion_tokens = j["usage"]["completion_tokens"].get<int64_t>();
  return r;
}

constexpr int kBudget = 6;
constexpr int kMax = 30;
const std::string kUsage = R"(, "stream_options": {"include_usage": true})";

TEST(ServerReasoning, ReasoningEndsAfterTheBudgetAndTheAnswerFollows) {
  testing::StackOptions o;
  o.chat_template = &r1_template();
  ServingStack stack(o);
  // No budget: N tokens are all reasoning, and so are kMax.
  const Reply first = chat(stack.port(), body(kBudget, false));
  EXPECT_EQ(first.content, "");
  EXPECT_EQ(first.finish, "length");
  ASSERT_FALSE(first.reasoning.empty());
  const Reply free = chat(stack.port(), body(kMax, false));
  EXPECT_EQ(free.content, "");
  EXPECT_TRUE(free.reasoning.starts_with(first.reasoning)) << free.reasoning;
  EXPECT_GT(free.reasoning.size(), first.reasoning.size());

  for (const bool stream : {false, true}) {
    const Reply got = chat(
        stack.port(),
        body(kMax, stream, R"(, "reasoning_budget_tokens": )" + std::to_string(kBudget) + kUsage));
    EXPECT_EQ(got.reasoning, first.reasoning) << "stream " << stream;
    EXPECT_FALSE(got.content.empty()) << "stream " << stream;
    EXPECT_EQ(got.content.find("</think>"), std::string::npos) << got.content;
    EXPECT_EQ(got.finish, "length");
    EXPECT_EQ(got.completion_tokens, kMax);  // the forced tokens count as generated
  }
  // A request's -1 is unrestricted.
  const Reply unlimited =
      chat(stack.port(), body(kMax, false, R"(, "reasoning_budget_tokens": -1)"));
  EXPECT_EQ(unlimited.reasoning, free.reasoning);
  EXPECT_EQ(unlimited.content, "");
}

TEST(ServerReasoning, TheServersBudgetAppliesUnlessTheRequestSetsOne) {
  testing::StackOptions o;
  o.chat_template = &r1_template();
  o.reasoning_budget = kBudget;
  ServingStack stack(o);
  const Reply budgeted = chat(stack.port(), body(kMax, false));
  EXPECT_FALSE(budgeted.content.empty());
  const Reply streamed = chat(stack.port(), body(kMax, true));
  EXPECT_EQ(streamed.reasoning, budgeted.reasoning);
  EXPECT_EQ(streamed.content, budgeted.content);
  const Reply unlimited =
      chat(stack.port(), body(kMax, false, R"(, "reasoning_budget_tokens": -1)"));
  EXPECT_EQ(unlimited.content, "");
  EXPECT_TRUE(unlimited.reasoning.starts_with(budgeted.reasoning));
  const Reply longer = chat(stack.port(), body(kMax, false, R"(, "reasoning_budget_tokens": 10)"));
  EXPECT_FALSE(longer.content.empty());
  EXPECT_GT(longer.reasoning.size(), budgeted.reasoning.size());
  EXPECT_TRUE(unlimited.reasoning.starts_with(longer.reasoning));
}

}  // namespace server_reasoning_test
}  // namespace folio::server
