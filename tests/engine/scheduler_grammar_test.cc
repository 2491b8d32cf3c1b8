// Grammar-constrained sampling through the scheduler: every choice of
// sampled (not greedy) requests running together follows the grammar and
// ends where the grammar is complete.
#include <gtest/gtest.h>

#include <regex>

#include "grammar/gbnf_parser.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_grammar_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;

class SchedulerGrammarTest : public SchedulerFixture {};

TEST_F(SchedulerGrammarTest, EveryChoiceFollowsTheGrammar) {
  auto grammar = grammar::compile_gbnf(
      "root ::= \"n=\" [1-9] [0-9]{0,3} (\", \" word){1,3} \".\"\n"
      "word ::= [a-z]{2,8}\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const std::regex want("n=[1-9][0-9]{0,3}(, [a-z]{2,8}){1,3}\\.");
  {
    const int32_t blocks = 4 * 32 + 1;
    auto cache = make_cache(blocks);
    ASSERT_NE(cache, nullptr);
    SchedulerOptions so;
    so.max_seqs = 4;
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    ASSERT_TRUE(sched.start().ok());
    std::vector<std::unique_ptr<Collected>> got;
    const auto ps = prompts();
    for (int i = 0; i < 3; ++i) {
      GenerationRequest req;
      req.prompt = ps[static_cast<size_t>(2 * i + 1)];  // the short ones
      req.params.seed = 7 + static_cast<uint64_t>(i);
      req.params.temperature = 1.5f;  // far from what the model would write
      req.params.max_tokens = 60;
      req.n = 3;
      req.grammar = *grammar;
      got.push_back(std::make_unique<Collected>(3));
      Result<uint64_t> id = sched.submit(req, got.back()->callbacks());
      ASSERT_TRUE(id.ok()) << id.status().to_string();
    }
    sched.wait_idle();
    for (const auto& g : got) {
      std::lock_guard<std::mutex> lock(g->mu);
      ASSERT_EQ(g->n_done, 1);
      ASSERT_TRUE(g->result.status.ok()) << g->result.status.to_string();
      for (int c = 0; c < 3; ++c) {
        EXPECT_TRUE(std::regex_match(g->text[c], want)) << "'" << g->text[c] << "'";
        EXPECT_EQ(g->result.choices[c].stop, StopReason::kEndOfGeneration) << g->text[c];
      }
    }
    EXPECT_EQ(cache->manager().pool().n_used(), 0);
  }
}


TEST_F(SchedulerGrammarTest, LazyGrammarHoldsFromItsTrigger) {
  // The output is free up to the first "e", then follows the grammar from
  // that "e" on; the end may not come before it.
  auto grammar = grammar::compile_gbnf("root ::= \"e\" [0-9]{1,3} \".\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const std::regex want("[^e]*e[0-9]{1,3}\\.");
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 4;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  ASSERT_TRUE(sched.start().ok());
  GenerationRequest req;
  req.prompt = prompts()[1];
  req.params.seed = 11;
  req.params.temperature = 1.2f;
  req.params.max_tokens = 200;
  req.n = 3;
  req.grammar = *grammar;
  req.grammar_triggers.words = {"e"};
  req.grammar_triggers.end_before_trigger = false;
  Collected got(3);
  Result<uint64_t> id = sched.submit(req, got.callbacks());
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  sched.wait_idle();
  std::lock_guard<std::mutex> lock(got.mu);
  ASSERT_TRUE(got.result.status.ok()) << got.result.status.to_string();
  int free_first = 0;  // choices with text before the trigger
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(std::regex_match(got.text[c], want)) << "'" << got.text[c] << "'";
    EXPECT_EQ(got.result.choices[c].stop, StopReason::kEndOfGeneration) << got.text[c];
    free_first += got.text[c].find('e') > 0 ? 1 : 0;
  }
  // The trigger is not forced at the start.
  EXPECT_GT(free_first, 0);
}

}  // namespace
}  // namespace folio
