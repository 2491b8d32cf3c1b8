// Generator on the tiny llama reference model: greedy output equals
// llama.cpp's continuation, streaming text equals the detokenized ids, stop
// strings cut across token boundaries, cancellation, and cache reuse.
#include "engine/generator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tokenizer/stream_detokenizer.h"
#include "scheduler_fixture.h"

namespace folio {
namespace generator_test {

using testing_sched::kModels;

std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  std::vector<int32_t> ids;
  std::stringstream ss(line);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(std::stoi(item));
  return ids;
}

class GeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = model::Model::load(kModels + "tiny-llama-f32.gguf");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    ctx_ = model::ForwardContext::cpu(1);
    cache::KvCacheOptions co;
    co.n_ctx = 256;
    auto c = model_->make_cache(co);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    cache_ = std::move(c).value();
    prompt_ = read_ids(kModels + "tiny-llama.short.prompt_tokens.txt");
    expected_ = read_ids(kModels + "tiny-llama.short.gen_tokens.txt");
    greedy_.temperature = 0.0f;
    opts_.n_predict = static_cast<int64_t>(expected_.size());
    opts_.ignore_eos = true;  // the reference treats end-of-text as a token like any other
  }

  Generator make() { return Generator(*model_, *tok_, *ctx_, *cache_); }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<model::ForwardContext> ctx_;
  std::unique_ptr<cache::KvCache> cache_;
  std::vector<int32_t> prompt_, expected_;
  SamplingParams greedy_;
  GenerateOptions opts_;
};

TEST_F(GeneratorTest, GreedyMatchesLlamaCpp) {
  Generator gen = make();
  std::string streamed;
  auto stats = gen.generate(prompt_, greedy_, opts_, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->tokens, expected_);
  EXPECT_EQ(stats->stop, StopReason::kLength);
  EXPECT_EQ(stats->n_prompt, static_cast<int64_t>(prompt_.size()));
  // The random-weight model emits stray bytes: the stream shows them as U+FFFD,
  // exactly as a streaming detokenizer over the same ids does.
  tokenizer::StreamDetokenizer detok(tok_.get());
  std::string want;
  for (int32_t id : expected_) want += detok.push(id);
  want += detok.flush();
  EXPECT_EQ(streamed, want);
  EXPECT_NE(streamed.find("alOften"), std::string::npos);
}

TEST_F(GeneratorTest, SmallPrefillChunksGiveTheSameTokens) {
  Generator gen = make();
  GenerateOptions o = opts_;
  o.n_batch = 3;
  auto stats = gen.generate(prompt_, greedy_, o, [](std::string_view) { return true; });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->tokens, expected_);
}

TEST_F(GeneratorTest, StopStringAcrossTokenBoundaries) {
  // " alOften": no single token's text holds "lOft", so the match spans tokens.
  const std::string stop = "lOft";
  for (int32_t id : expected_) ASSERT_EQ(tok_->piece(id).find(stop), std::string::npos);
  SamplingParams p = greedy_;
  p.stop = {stop};
  Generator gen = make();
  std::string streamed;
  auto stats = gen.generate(prompt_, p, opts_, [&](std::string_view t) {
    streamed += t;
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->stop, StopReason::kStopString);
  EXPECT_EQ(streamed, "\xEF\xBF\xBD a");  // U+FFFD, then the text before the stop string
  EXPECT_LT(stats->n_generated, static_cast<int64_t>(expected_.size()));
}

TEST_F(GeneratorTest, CancelStopsGeneration) {
  Generator gen = make();
  int calls = 0;
  auto stats = gen.generate(prompt_, greedy_, opts_, [&](std::string_view) { return ++calls < 2; });
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->stop, StopReason::kCancelled);
  EXPECT_LT(stats->n_generated, static_cast<int64_t>(expected_.size()));
}

TEST_F(GeneratorTest, ReusesTheCachedPrefix) {
  Generator gen = make();
  GenerateOptions o = opts_;
  o.n_predict = 4;
  ASSERT_TRUE(gen.generate(prompt_, greedy_, o, [](std::string_view) { return true; }).ok());
  // Next turn: the prompt plus the 4 tokens generated, continued.
  std::vector<int32_t> turn2 = prompt_;
  turn2.insert(turn2.end(), expected_.begin(), expected_.begin() + 4);
  o.n_predict = 6;
  auto stats = gen.generate(turn2, greedy_, o, [](std::string_view) { return true; });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  // The cache held the prompt and the first 3 generated tokens (the 4th was
  // sampled, never fed); only the rest is prefilled.
  EXPECT_EQ(stats->n_prompt_cached, static_cast<int64_t>(prompt_.size() + 3));
  EXPECT_EQ(stats->n_prompt, 1);
  EXPECT_EQ(stats->tokens, std::vector<int32_t>(expected_.begin() + 4, expected_.begin() + 10));
  // A different prompt truncates the cache to the common prefix.
  std::vector<int32_t> other(prompt_.begin(), prompt_.begin() + 5);
  other.push_back(7);
  auto s3 = gen.generate(other, greedy_, o, [](std::string_view) { return true; });
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->n_prompt_cached, 5);
}

TEST_F(GeneratorTest, RejectsBadInput) {
  Generator gen = make();
  auto ok = [](std::string_view) { return true; };
  EXPECT_FALSE(gen.generate({}, greedy_, opts_, ok).ok());
  std::vector<int32_t> bad = {1, 2, 100000};
  auto r = gen.generate(bad, greedy_, opts_, ok);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("100000"), std::string::npos);
  std::vector<int32_t> too_long(300, 5);
  EXPECT_EQ(gen.generate(too_long, greedy_, opts_, ok).status().code(), StatusCode::kOutOfRange);
  SamplingParams badp;
  badp.temperature = -1;
  EXPECT_FALSE(gen.generate(prompt_, badp, opts_, ok).ok());
}

}  // namespace
}  // namespace folio
