// run_batch (the `folio batch` command on the Scheduler) on the tiny llama
// reference model: 6 prompts (4 sharing a long prefix) run 3 at a time give
// exactly the tokens, text and stop reason of a solo greedy Generator run on
// each; the shared prefix is taken from the cache; no block leaks. A pool
// too small for all of them forces preemptions with the same outputs.
#include "engine/offline_batch.h"

#include "cache/paged_kv_cache.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

const std::string kModels = std::string(FOLIO_REFDATA_DIR) + "/models/";

class OfflineBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = model::Model::load(kModels + "tiny-llama-f32.gguf");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    ctx_ = model::ForwardContext::cpu(2);
    const std::string shared =
        "The old lighthouse keeper climbed the spiral stairs every evening, counting the steps "
        "as his father had taught him, and lit the lamp before the fishing boats came home. ";
    const std::vector<std::string> texts = {
        shared + "What did he see?", "Once upon a time",         shared + "Why did he count?",
        "The capital of France is",  shared + "Who taught him?", shared + "When did boats return?",
    };
    tokenizer::TokenizeOptions to;
    to.add_special = true;
    for (const std::string& s : texts) prompts_.push_back(tok_->tokenize(s, to));
    greedy_.temperature = 0.0f;
  }

  std::unique_ptr<cache::PagedKvCache> make_cache(int32_t n_blocks, int n_seq) {
    cache::KvCacheOptions o;
    o.type = DType::F32;
    o.block_size = 8;
    o.n_ctx = 256;
    o.n_blocks = n_blocks;
    o.n_seq = n_seq;
    auto c = cache::PagedKvCache::create(model_->config().cache_geometry(), o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Checks every result against a solo Generator run of its prompt.
  void expect_solo(const BatchOutput& out, int64_t n_predict) {
    ASSERT_EQ(out.results.size(), prompts_.size());
    for (size_t p = 0; p < prompts_.size(); ++p) {
      auto cache = make_cache(0, 1);
      ASSERT_NE(cache, nullptr);
      Generator gen(*model_, *tok_, *ctx_, *cache);
      GenerateOptions go;
      go.n_predict = n_predict;
      std::string text;
      auto solo = gen.generate(prompts_[p], greedy_, go, [&](std::string_view s) {
        text += s;
        return true;
      });
      ASSERT_TRUE(solo.ok()) << solo.status().to_string();
      const BatchSequenceResult& r = out.results[p];
      EXPECT_EQ(r.tokens, solo->tokens) << "prompt " << p;
      EXPECT_EQ(r.text, text) << "prompt " << p;
      EXPECT_EQ(r.stop, solo->stop) << "prompt " << p;
      EXPECT_EQ(r.prompt_tokens, static_cast<int64_t>(prompts_[p].size()));
    }
  }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<model::ForwardContext> ctx_;
  std::vector<std::vector<int32_t>> prompts_;
  SamplingParams greedy_;
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
  expect_solo(*out, params.max_tokens);

  int64_t prompt_sum = 0, generated_sum = 0;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    prompt_sum += out->results[p].prompt_tokens;
    generated_sum += static_cast<int64_t>(out->results[p].tokens.size());
    const bool shares = p == 2 || p == 4 || p == 5;  // prompt 0 computes the shared prefix
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
  expect_solo(*out, params.max_tokens);
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
