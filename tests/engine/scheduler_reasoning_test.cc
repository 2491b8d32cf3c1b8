// Reasoning budgets through the scheduler on the tiny llama: the reply
// starts inside a "<think>" block (as after a template that opens it), and
// after N generated tokens the block's closing tokens come, forced; then
// generation is free again. The reference is independent of the budget
// code: solo greedy Generator runs of the prompt, and of the prompt with
// the N tokens and the closing tokens appended (the continuation the
// model writes freely after the forced close).
#include <gtest/gtest.h>

#include <regex>

#include "grammar/gbnf_parser.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_reasoning_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

class SchedulerReasoningTest : public SchedulerFixture {
 protected:
  std::shared_ptr<ReasoningBudgetSpec> think_budget(int32_t n, bool inside) const {
    auto s = std::make_shared<ReasoningBudgetSpec>();
    s->tokens = n;
    s->open = "<think>";
    s->close = "</think>";
    tokenizer::TokenizeOptions to;
    to.add_special = false;
    to.parse_special = true;
    s->forced = tok_->tokenize(s->close, to);
    s->starts_inside = inside;
    return s;
  }

  // A greedy request for `prompt` of up to `max_tokens` tokens under `budget`.
  GenerationRequest budget_request(const std::vector<int32_t>& prompt, int32_t max_tokens,
                                   std::shared_ptr<const ReasoningBudgetSpec> budget) const {
    GenerationRequest req;
    req.prompt = prompt;
    req.params = greedy_;
    req.params.max_tokens = max_tokens;
    req.reasoning_budget = std::move(budget);
    return req;
  }

  // Runs `req` alone on a fresh scheduler; returns its tokens.
  std::vector<int32_t> run(const GenerationRequest& req, SchedulerOptions so = {},
                           RequestResult* result = nullptr) {
    auto cache = make_cache(2 * 32 + 1);
    if (cache == nullptr) return {};
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    EXPECT_TRUE(sched.start().ok());
    Collected got;
    Result<uint64_t> id = sched.submit(req, got.callbacks());
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    sched.wait_idle();
    std::lock_guard<std::mutex> lock(got.mu);
    EXPECT_EQ(got.n_done, 1);
    EXPECT_TRUE(got.result.status.ok()) << got.result.status.to_string();
    if (result) *result = got.result;
    return got.tokens[0];
  }

  // Whether `s` ends inside a UTF-8 character (its last lead byte wants
  // more continuation bytes than follow it).
  static bool ends_mid_character(const std::string& s) {
    for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
      const auto b = static_cast<unsigned char>(s[s.size() - back]);
      if ((b & 0xC0) == 0x80) continue;  // a continuation byte
      const size_t want = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
      return back < want;
    }
    return false;
  }

  // The expected output: the free greedy run's tokens up to `block` + `n`
  // (the block opens after token `block`; `n` tokens in it, more while they
  // end mid-character: the tiny model writes byte tokens), the forced
  // tokens, then the free greedy continuation of all that, up to
  // `max_tokens` tokens in all.
  std::vector<int32_t> expected(const std::vector<int32_t>& prompt, size_t block, size_t n,
                                const std::vector<int32_t>& forced, int32_t max_tokens) {
    SamplingParams p = greedy_;
    p.max_tokens = max_tokens;
    const SoloRun plain = solo(prompt, p);
    size_t free = block + n;
    auto reasoning = [&] {
      std::string s;
      for (size_t i = block; i < free && i < plain.tokens.size(); ++i)
        s += tok_->piece(plain.tokens[i], true);
      return s;
    };
    while (free < plain.tokens.size() && ends_mid_character(reasoning())) ++free;
    EXPECT_GE(plain.tokens.size(), free);
    std::vector<int32_t> out(plain.tokens.begin(),
                             plain.tokens.begin() + static_cast<std::ptrdiff_t>(free));
    out.insert(out.end(), forced.begin(), forced.end());
    std::vector<int32_t> extended = prompt;
    extended.insert(extended.end(), out.begin(), out.end());
    p.max_tokens = max_tokens - static_cast<int32_t>(out.size());
    const SoloRun rest = solo(extended, p);
    out.insert(out.end(), rest.tokens.begin(), rest.tokens.end());
    return out;
  }
};

TEST_F(SchedulerReasoningTest, ExactlyNTokensThenTheForcedClose) {
  const std::vector<int32_t> prompt = tokenize("Once upon a time");
  constexpr int32_t kMax = 24;
  for (const int32_t n : {1, 5, 9}) {
    const GenerationRequest req = budget_request(prompt, kMax, think_budget(n, /*inside=*/true));
    const std::vector<int32_t>& forced = req.reasoning_budget->forced;
    ASSERT_GE(forced.size(), 2u) << "the tiny vocabulary spells </think> in pieces";
    const std::vector<int32_t> want = expected(prompt, 0, static_cast<size_t>(n), forced, kMax);
    RequestResult result;
    const std::vector<int32_t> got = run(req, {}, &result);
    EXPECT_EQ(got, want) << "budget " << n;
    // Exactly n free tokens (this prompt's continuation splits no character),
    // which never close the block themselves: what closes it is forced.
    const std::string free_text =
        tok_->detokenize(std::vector<int32_t>(want.begin(), want.begin() + n), {});
    EXPECT_EQ(free_text.find("</think>"), std::string::npos);
    EXPECT_EQ(tok_->detokenize(std::vector<int32_t>(
                                   got.begin() + n,
                                   got.begin() + n + static_cast<std::ptrdiff_t>(forced.size())),
                               {}),
              "</think>");
    ASSERT_EQ(result.choices.size(), 1u);
    EXPECT_EQ(result.choices[0].n_generated, kMax);
  }
}

TEST_F(SchedulerReasoningTest, CountingStartsAfterTheOpenMarkerTheModelWrites) {
  const std::vector<int32_t> prompt = tokenize("The capital of France is");
  SamplingParams p = greedy_;
  p.max_tokens = 6;
  const SoloRun plain = solo(prompt, p);
  ASSERT_EQ(plain.tokens.size(), 6u);
  // The "open marker" is what the model writes in its first two tokens.
  auto b = think_budget(3, /*inside=*/false);
  b->open = tok_->piece(plain.tokens[0], true) + tok_->piece(plain.tokens[1], true);
  EXPECT_EQ(run(budget_request(prompt, 20, b)), expected(prompt, 2, 3, b->forced, 20));
}

TEST_F(SchedulerReasoningTest, ABlockTheModelClosesForcesNothing) {
  const std::vector<int32_t> prompt = tokenize("1, 2, 3, 4,");
  SamplingParams p = greedy_;
  p.max_tokens = 16;
  const SoloRun plain = solo(prompt, p);
  ASSERT_EQ(plain.tokens.size(), 16u);
  auto b = think_budget(6, /*inside=*/true);
  b->close = tok_->piece(plain.tokens[3], true);  // written at the block's 4th token
  EXPECT_EQ(run(budget_request(prompt, p.max_tokens, b)), plain.tokens);
}

TEST_F(SchedulerReasoningTest, DraftsStopAtTheForcedPoint) {
  // The oracle proposes the free run's tokens (every third one wrong), which
  // would cross the forced point; greedy output must not change.
  const std::vector<int32_t> prompt = tokenize("Rain fell on the quiet town while the baker");
  constexpr int32_t kMax = 28;
  SamplingParams p = greedy_;
  p.max_tokens = kMax;
  const SoloRun plain = solo(prompt, p);
  const GenerationRequest req = budget_request(prompt, kMax, think_budget(7, /*inside=*/true));
  const std::vector<int32_t> want = expected(prompt, 0, 7, req.reasoning_budget->forced, kMax);
  SchedulerOptions so;
  so.spec =
      testing_sched::spec_oracle({prompt}, {plain}, static_cast<int32_t>(model_->config().n_vocab));
  EXPECT_EQ(run(req, so), want);
  // And with the oracle proposing the budgeted output itself.
  SoloRun right;
  right.tokens = want;
  so.spec =
      testing_sched::spec_oracle({prompt}, {right}, static_cast<int32_t>(model_->config().n_vocab));
  EXPECT_EQ(run(req, so), want);
}

TEST_F(SchedulerReasoningTest, AnOutputGrammarAndTheBudgetAgreeOrTheGrammarWins) {
  // A grammar that lets the block close: the forced tokens pass it, after
  // exactly n tokens of reasoning (the grammar keeps them ASCII).
  auto closes = grammar::compile_gbnf("root ::= [a-z ]+ \"</think>\" [a-z ]+ \".\"\n");
  ASSERT_TRUE(closes.ok()) << closes.status().to_string();
  GenerationRequest req = budget_request(tokenize("Once upon a time"), 40, think_budget(4, true));
  req.grammar = *closes;
  const std::vector<int32_t>& forced = req.reasoning_budget->forced;
  RequestResult result;
  std::vector<int32_t> got = run(req, {}, &result);
  ASSERT_GE(got.size(), 4 + forced.size());
  EXPECT_EQ(std::vector<int32_t>(got.begin() + 4, got.begin() + 4 + static_cast<std::ptrdiff_t>(
                                                                      forced.size())),
            forced);
  std::string text = tok_->detokenize(got, {});
  EXPECT_TRUE(std::regex_match(text, std::regex("[a-z ]+</think>[a-z ]+\\.?"))) << text;

  // A grammar that never allows the close: the block is left to the model
  // and the output still follows the grammar.
  auto never = grammar::compile_gbnf("root ::= [a-z ]{1,30} \".\"\n");
  ASSERT_TRUE(never.ok()) << never.status().to_string();
  req.grammar = *never;
  got = run(req, {}, &result);
  text = tok_->detokenize(got, {});
  EXPECT_TRUE(std::regex_match(text, std::regex("[a-z ]{1,30}\\.?"))) << text;
}

TEST_F(SchedulerReasoningTest, BadBudgetsAreRefused) {
  auto cache = make_cache(2 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  Scheduler sched(*model_, *tok_, *ctx_, *cache, {});
  auto b = think_budget(-2, true);
  const GenerationRequest req = budget_request(tokenize("Hi"), greedy_.max_tokens, b);
  Collected got;
  Result<uint64_t> id = sched.submit(req, got.callbacks());
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("-2"), std::string::npos) << id.status().to_string();
  b->tokens = 4;
  b->forced.clear();
  id = sched.submit(req, got.callbacks());
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("close"), std::string::npos) << id.status().to_string();
}

}  // namespace scheduler_reasoning_test
}  // namespace folio
