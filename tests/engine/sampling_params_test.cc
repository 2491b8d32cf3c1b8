#include "engine/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace folio {
namespace sampling_params_test {

TEST(SamplingParams, DefaultsAreValid) {
  SamplingParams p;
  EXPECT_TRUE(p.validate(32000).ok());
  EXPECT_FALSE(p.greedy());
  p.temperature = 0.0f;
  EXPECT_TRUE(p.greedy());
  EXPECT_TRUE(p.validate(32000).ok());
}

TEST(SamplingParams, BoundaryValuesAreValid) {
  SamplingParams p;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.top_k = 0;
  p.penalty_last_n = -1;
  p.max_tokens = 0;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.logit_bias = {{0, -INFINITY}, {99, 100.0f}};
  p.logprobs = true;
  p.top_logprobs = kMaxTopLogprobs;
  p.stop = {"\n\n", "<|im_end|>", "世界"};
  EXPECT_TRUE(p.validate(100).ok()) << p.validate(100).to_string();
  p.min_p = 1.0f;
  EXPECT_TRUE(p.validate(100).ok());
}

struct BadCase {
  const char* what;  // expected in the message
  std::function<void(SamplingParams&)> edit;
};

TEST(SamplingParams, InvalidValuesAreErrorsNamingTheParameter) {
  const std::vector<BadCase> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.5f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = NAN; }},
      {"temperature", [](SamplingParams& p) { p.temperature = INFINITY; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -1; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.5f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = NAN; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.1f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = NAN; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = NAN; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = NAN; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = -INFINITY; }},
      {"penalty_last_n", [](SamplingParams& p) { p.penalty_last_n = -2; }},
      {"logit_bias token 100",
       [](SamplingParams& p) {
         p.logit_bias = {{100, 1.0f}};
       }},
      {"logit_bias token -1",
       [](SamplingParams& p) {
         p.logit_bias = {{-1, 1.0f}};
       }},
      {"logit_bias for token 3",
       [](SamplingParams& p) {
         p.logit_bias = {{3, NAN}};
       }},
      {"logit_bias for token 3",
       [](SamplingParams& p) {
         p.logit_bias = {{3, INFINITY}};
       }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = -5; }},
      {"stop[1] is an empty",
       [](SamplingParams& p) {
         p.stop = {"a", ""};
       }},
      {"stop[0] is not valid UTF-8", [](SamplingParams& p) { p.stop = {"\xC3"}; }},
      {"stop[0] is not valid UTF-8", [](SamplingParams& p) { p.stop = {"\xED\xA0\x80"}; }},
      {"stop[0] is 1025 bytes", [](SamplingParams& p) { p.stop = {std::string(1025, 'x')}; }},
      {"at most 16 stop strings",
       [](SamplingParams& p) { p.stop = std::vector<std::string>(17, "x"); }},
      {"top_logprobs",
       [](SamplingParams& p) {
         p.logprobs = true;
         p.top_logprobs = kMaxTopLogprobs + 1;
       }},
      {"top_logprobs",
       [](SamplingParams& p) {
         p.logprobs = true;
         p.top_logprobs = -1;
       }},
      {"needs logprobs", [](SamplingParams& p) { p.top_logprobs = 3; }},
  };
  for (const BadCase& c : cases) {
    SamplingParams p;
    c.edit(p);
    const Status s = p.validate(100);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(s.message().find(c.what), std::string::npos)
        << "message '" << s.message() << "' does not mention '" << c.what << "'";
  }
}

TEST(SamplingParams, MessagesCarryTheValue) {
  SamplingParams p;
  p.top_p = 1.5f;
  EXPECT_NE(p.validate(10).message().find("1.5"), std::string::npos);
  p = SamplingParams();
  p.top_k = -3;
  EXPECT_NE(p.validate(10).message().find("-3"), std::string::npos);
}

TEST(SamplingParams, VocabularySizeMustBePositive) {
  SamplingParams p;
  EXPECT_FALSE(p.validate(0).ok());
}

TEST(SamplingParams, ToStringNamesEveryField) {
  SamplingParams p;
  p.seed = 42;
  const std::string s = p.to_string();
  for (const char* name : {"temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                           "presence_penalty", "frequency_penalty", "penalty_last_n", "logit_bias",
                           "seed = 42", "max_tokens", "stop", "top_logprobs"}) {
    EXPECT_NE(s.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace folio
