// run_batch (the `folio batch` command on the Scheduler) on the tiny llama
// reference model: 10 prompts (4 sharing a long prefix) run 3 at a time give
// exactly the tokens, text and stop reason of a solo greedy Generator run on
// each; the shared prefix is taken from the cache; no block leaks. A pool
// too small for all of them forces preemptions with the same outputs.
#include "engine/offline_batch.h"

#include "cache/paged_kv_cache.h"

#include <gtest/gtest.h>

#include "scheduler_fixture.h"

namespace folio {
namespace offline_batch_test {

using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

class OfflineBatchTest : public SchedulerFixture {
 protected:
  void SetUp() override {
    SchedulerFixture::SetUp();
    prompts_ = prompts();
  }

  // Checks every result against a solo Generator run of its prompt.
  void expect_solo(const BatchOutput& out, const SamplingParams& params) {
    ASSERT_EQ(out.results.size(), prompts_.size());
    for (size_t p = 0; p < prompts_.size(); ++p) {
      const SoloRun want = solo(prompts_[p], params);
      const BatchSequenceResult& r = out.results[p];
      EXPECT_EQ(r.tokens, want.tokens) << "prompt " << p;
      EXPECT_EQ(r.text, want.text) << "prompt " << p;
      EXPECT_EQ(r.stop, want.stop) << "prompt " << p;
      EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(prompts_[p].size()));
    }
  }

  std::vector<std::vector<int32_t>> prompts_;
};

SchedulerOptions options(int parallel, int64_t step_tokens) {
  SchedulerOptions so;
  so.max_seqs = parallel;
  so.max_batch_tokens = step_tokens;
  so.ubatch = step_tokens;
  return so;
}

TEST_F(OfflineBatchTest, EqualsSoloRunsAndSharesPrefixes) {
  auto cache = make_cache(3 * 32 + 1, 0);  // 3 sequences of the whole context
  ASSERT_NE(cache, nullptr);
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  auto out = run_batch(*model_, *tok_, *ctx_, *cache, prompts_, params, options(3, 24));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_solo(*out, params);

  int64_t prompt_sum = 0, generated_sum = 0;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    prompt_sum += out->results[p].prompt_tokens;
    generated_sum += static_cast<int64_t>(out->results[p].tokens.size());
    const bool shares = p == 2 || p == 4 || p == 6;  // prompt 0 computes the shared prefix
    if (shares) {
      EXPECT_GE(out->results[p].cached_prompt_tokens, 16) << "prompt " << p;
    } else {
      EXPECT_EQ(out->results[p].cached_prompt_tokens, 0) << "prompt " << p;
    }
  }
  const BatchSummary& s = out->summary;
  EXPECT_EQ(s.blocks_leaked, 0);
  EXPECT_EQ(s.preemptions, 0);
  EXPECT_EQ(s.blocks_total, 3 * 32);
  EXPECT_GT(s.blocks_peak, 0);
  EXPECT_LE(s.blocks_peak, s.blocks_total);
  EXPECT_LT(s.prefill_tokens_computed, prompt_sum);
  EXPECT_EQ(s.generated_tokens, generated_sum);
  EXPECT_GT(s.steps, 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(OfflineBatchTest, PreemptsWhenThePoolIsShortAndStillMatches) {
  auto cache = make_cache(19, 0);  // 18 usable blocks of 8: one long sequence needs 16
  ASSERT_NE(cache, nullptr);
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  auto out = run_batch(*model_, *tok_, *ctx_, *cache, prompts_, params, options(3, 64));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_solo(*out, params);
  EXPECT_GT(out->summary.preemptions, 0);
  EXPECT_EQ(out->summary.blocks_leaked, 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(OfflineBatchTest, RejectsBadInputBeforeComputing) {
  auto cache = make_cache(3 * 32 + 1, 0);
  ASSERT_NE(cache, nullptr);
  EXPECT_FALSE(run_batch(*model_, *tok_, *ctx_, *cache, prompts_, greedy_, options(0, 64)).ok());
  std::vector<std::vector<int32_t>> bad = {prompts_[0], {}};
  Result<BatchOutput> r = run_batch(*model_, *tok_, *ctx_, *cache, bad, greedy_, options(2, 64));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("prompt 1"), std::string::npos) << r.status().message();
  bad = {std::vector<int32_t>(300, 1)};  // longer than the context
  EXPECT_EQ(run_batch(*model_, *tok_, *ctx_, *cache, bad, greedy_, options(2, 64)).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(cache->block_manager()->pool().n_used(), 0);
}

}  // namespace
}  // namespace folio
