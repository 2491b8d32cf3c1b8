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

}  // namespace
}  // namespace folio
