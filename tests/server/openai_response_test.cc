// Response bodies, streaming chunks and SSE framing in OpenAI's exact shapes;
// error bodies and status mapping.
#include "server/openai_response.h"

#include <gtest/gtest.h>

namespace folio::server {
namespace openai_response_test {

const std::string kModel = std::string(FOLIO_REFDATA_DIR) + "/models/tiny-llama-f32.gguf";

class OpenAiResponseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = tokenizer::Tokenizer::open(kModel);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
  }

  ResponseContext ctx(ApiKind kind) {
    ResponseContext c;
    c.kind = kind;
    c.id = "id-1";
    c.created = 1700000000;
    c.model = "tiny";
    return c;
  }

  // The first token of `text` (byte-level BPE: a single letter is one token).
  SampledToken token(const std::string& text, float lp, std::vector<TokenLogprob> top = {}) {
    auto ids = tok_->tokenize(text, {.add_special = false});
    EXPECT_FALSE(ids.empty()) << text;
    SampledToken t;
    t.token = ids.empty() ? 0 : ids[0];
    t.logprob = lp;
    t.top_logprobs = std::move(top);
    return t;
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

TEST_F(OpenAiResponseTest, CompletionBody) {
  ChoiceOutput c;
  c.text = "Hello";
  c.finish_reason = "length";
  Usage u{.prompt_tokens = 5, .completion_tokens = 2, .cached_tokens = 3};
  Json j = response_body(ctx(ApiKind::kCompletion), std::vector<ChoiceOutput>{c}, u, *tok_, false);
  EXPECT_EQ(dump_json(j),
            R"({"id":"id-1","object":"text_completion","created":1700000000,"model":"tiny",)"
            R"("choices":[{"text":"Hello","index":0,"logprobs":null,"finish_reason":"length"}],)"
            R"("usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,)"
            R"("prompt_tokens_details":{"cached_tokens":3}}})");
}

TEST_F(OpenAiResponseTest, ChatBodyWithTwoChoices) {
  ChoiceOutput a, b;
  a.text = "x";
  a.finish_reason = "stop";
  b.text = "y";
  b.finish_reason = "length";
  Json j =
      response_body(ctx(ApiKind::kChat), std::vector<ChoiceOutput>{a, b}, Usage{}, *tok_, false);
  EXPECT_EQ(j["object"], "chat.completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(dump_json(j["choices"][1]),
            R"({"index":1,"message":{"role":"assistant","content":"y"},"logprobs":null,)"
            R"("finish_reason":"length"})");
}

TEST_F(OpenAiResponseTest, ChatLogprobs) {
  SampledToken h = token("h", -0.5f, {{0, -0.5f}, {1, -1.25f}});
  ASSERT_EQ(tok_->piece(h.token), "h");
  h.top_logprobs[0].token = h.token;
  int64_t offset = 0;
  Json lp = logprobs_json(ApiKind::kChat, *tok_, std::span<const SampledToken>(&h, 1), &offset);
  ASSERT_EQ(lp["content"].size(), 1u);
  const Json& e = lp["content"][0];
  EXPECT_EQ(e["token"], "h");
  EXPECT_EQ(e["logprob"], -0.5);
  EXPECT_EQ(e["bytes"], Json::array({104}));
  ASSERT_EQ(e["top_logprobs"].size(), 2u);
  EXPECT_EQ(e["top_logprobs"][0]["token"], "h");
  EXPECT_EQ(e["top_logprobs"][1]["logprob"], -1.25);
  EXPECT_EQ(e["top_logprobs"][1]["bytes"].size(), tok_->piece(1).size());
}

TEST_F(OpenAiResponseTest, CompletionLogprobsAdvanceTextOffset) {
  std::vector<SampledToken> toks = {token("a", -0.25f), token(" ", -2.0f)};
  const std::string a = tok_->piece(toks[0].token), b = tok_->piece(toks[1].token);
  ASSERT_EQ(a, "a");
  int64_t offset = 3;
  Json lp = logprobs_json(ApiKind::kCompletion, *tok_, toks, &offset);
  EXPECT_EQ(lp["tokens"], Json::array({a, b}));
  EXPECT_EQ(lp["token_logprobs"], Json::array({-0.25, -2.0}));
  EXPECT_EQ(lp["text_offset"], Json::array({3, 4}));
  EXPECT_EQ(lp["top_logprobs"], Json::array({Json::object(), Json::object()}));
  EXPECT_EQ(offset, 4 + static_cast<int64_t>(b.size()));
}

// A choice cut at a stop string lists the logprobs of its first kept_tokens
// tokens only (the engine's ChoiceResult::kept_tokens); -1 lists them all.
TEST_F(OpenAiResponseTest, LogprobsListOnlyTheKeptTokens) {
  ChoiceOutput c;
  c.text = "ab";  // "abc" generated, stop "c": the token "c" lies after the cut
  c.tokens = {token("a", -0.5f), token("b", -1.0f), token("c", -1.5f)};
  c.finish_reason = "stop";
  c.text_offset_base = 2;
  for (const int64_t kept : {int64_t{-1}, int64_t{0}, int64_t{2}, int64_t{3}, int64_t{7}}) {
    c.kept_tokens = kept;
    const size_t want = kept < 0 || kept > 3 ? 3 : static_cast<size_t>(kept);
    Json j = response_body(ctx(ApiKind::kCompletion), std::vector<ChoiceOutput>{c}, Usage{}, *tok_,
                           true);
    const Json& lp = j["choices"][0]["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), want) << "kept " << kept;
    ASSERT_EQ(lp["token_logprobs"].size(), want) << "kept " << kept;
    ASSERT_EQ(lp["top_logprobs"].size(), want) << "kept " << kept;
    ASSERT_EQ(lp["text_offset"].size(), want) << "kept " << kept;
    if (want >= 2) {
      EXPECT_EQ(lp["tokens"][1], "b");
      EXPECT_EQ(lp["token_logprobs"][1], -1.0);
      EXPECT_EQ(lp["text_offset"][1], 3);
    }
    EXPECT_EQ(j["choices"][0]["text"], "ab");
    Json chat =
        response_body(ctx(ApiKind::kChat), std::vector<ChoiceOutput>{c}, Usage{}, *tok_, true);
    EXPECT_EQ(chat["choices"][0]["logprobs"]["content"].size(), want) << "kept " << kept;
  }
  c.kept_tokens = 2;
  Json chat =
      response_body(ctx(ApiKind::kChat), std::vector<ChoiceOutput>{c}, Usage{}, *tok_, true);
  EXPECT_EQ(chat["choices"][0]["logprobs"]["content"][1]["token"], "b");
  // Without logprobs asked for, nothing is listed whatever the count.
  EXPECT_TRUE(response_body(ctx(ApiKind::kChat), std::vector<ChoiceOutput>{c}, Usage{}, *tok_,
                            false)["choices"][0]["logprobs"]
                  .is_null());
}

// A token holding part of a character is written "bytes:\\xNN", as OpenAI
// does, and its bytes are exact.
TEST_F(OpenAiResponseTest, PartialCharacterTokens) {
  int32_t id = -1;
  for (int32_t t = 0; t < tok_->vocab().size() && id < 0; ++t) {
    const std::string p = tok_->piece(t);
    if (p.size() == 1 && static_cast<unsigned char>(p[0]) >= 0x80) id = t;
  }
  ASSERT_GE(id, 0) << "no single high-byte token in the vocabulary";
  const auto byte = static_cast<unsigned char>(tok_->piece(id)[0]);
  SampledToken t;
  t.token = id;
  t.logprob = -1.0f;
  int64_t offset = 0;
  Json c =
      logprobs_json(ApiKind::kCompletion, *tok_, std::span<const SampledToken>(&t, 1), &offset);
  EXPECT_EQ(c["tokens"][0], fmt::format("bytes:\\x{:02x}", byte));
  EXPECT_EQ(offset, 1);
  Json chat = logprobs_json(ApiKind::kChat, *tok_, std::span<const SampledToken>(&t, 1), &offset);
  EXPECT_EQ(chat["content"][0]["token"], fmt::format("bytes:\\x{:02x}", byte));
  EXPECT_EQ(chat["content"][0]["bytes"], Json::array({static_cast<int>(byte)}));
}

TEST_F(OpenAiResponseTest, ChatStreamChunks) {
  ResponseContext c = ctx(ApiKind::kChat);
  EXPECT_EQ(sse_event(stream_chunk(c, 0, true, "", nullptr, nullptr)),
            "data: "
            R"({"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"tiny",)"
            R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
            R"("finish_reason":null}]})"
            "\n\n");
  EXPECT_EQ(dump_json(stream_chunk(c, 2, false, "ab", nullptr, "stop")["choices"]),
            R"([{"index":2,"delta":{"content":"ab"},"logprobs":null,"finish_reason":"stop"}])");
  // The final chunk of OpenAI's streams: an empty delta with the reason.
  EXPECT_EQ(dump_json(stream_chunk(c, 0, false, "", nullptr, "length")["choices"][0]["delta"]),
            "{}");
  c.include_usage = true;
  Json with_usage = stream_chunk(c, 0, false, "a", nullptr, nullptr);
  ASSERT_TRUE(with_usage.contains("usage"));
  EXPECT_TRUE(with_usage["usage"].is_null());
  EXPECT_EQ(dump_json(usage_chunk(c, Usage{.prompt_tokens = 4, .completion_tokens = 6})),
            R"({"id":"id-1","object":"chat.completion.chunk","created":1700000000,"model":"tiny",)"
            R"("choices":[],"usage":{"prompt_tokens":4,"completion_tokens":6,"total_tokens":10,)"
            R"("prompt_tokens_details":{"cached_tokens":0}}})");
}

TEST_F(OpenAiResponseTest, CompletionStreamChunk) {
  EXPECT_EQ(dump_json(stream_chunk(ctx(ApiKind::kCompletion), 1, false, " x", nullptr, nullptr)),
            R"({"id":"id-1","object":"text_completion","created":1700000000,"model":"tiny",)"
            R"("choices":[{"text":" x","index":1,"logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST_F(OpenAiResponseTest, InvalidUtf8IsReplacedNotThrown) {
  ChoiceOutput c;
  c.text = "a\xE2\x82";  // a cut three-byte character
  c.finish_reason = "length";
  Json j =
      response_body(ctx(ApiKind::kCompletion), std::vector<ChoiceOutput>{c}, Usage{}, *tok_, false);
  EXPECT_NE(dump_json(j).find("a\xEF\xBF\xBD"), std::string::npos);
}

TEST_F(OpenAiResponseTest, FinishReasons) {
  EXPECT_STREQ(finish_reason_name(StopReason::kEndOfGeneration), "stop");
  EXPECT_STREQ(finish_reason_name(StopReason::kStopString), "stop");
  EXPECT_STREQ(finish_reason_name(StopReason::kLength), "length");
  EXPECT_STREQ(finish_reason_name(StopReason::kContextFull), "length");
}

TEST_F(OpenAiResponseTest, ResponseIds) {
  const std::string a = make_response_id(ApiKind::kChat);
  const std::string b = make_response_id(ApiKind::kChat);
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(make_response_id(ApiKind::kCompletion).rfind("cmpl-", 0), 0u);
  EXPECT_EQ(a.size(), std::string("chatcmpl-").size() + 24);
  EXPECT_NE(a, b);
}

TEST(ApiError, Shapes) {
  EXPECT_EQ(bad_request("bad temperature", "temperature").body(),
            R"({"error":{"message":"bad temperature","type":"invalid_request_error",)"
            R"("param":"temperature","code":null}})");
  EXPECT_EQ(unauthorized_error().http_status, 401);
  EXPECT_EQ(unauthorized_error().to_json()["error"]["code"], "invalid_api_key");
  EXPECT_EQ(unavailable_error("busy").to_json()["error"]["param"], nullptr);
  EXPECT_EQ(api_error_from_status(invalid_argument("x")).http_status, 400);
  EXPECT_EQ(api_error_from_status(out_of_range("x")).http_status, 413);
  EXPECT_EQ(api_error_from_status(out_of_range("x")).code, "context_length_exceeded");
  EXPECT_EQ(api_error_from_status(resource_exhausted("x")).http_status, 503);
  EXPECT_EQ(api_error_from_status(unsupported("x")).http_status, 400);
  EXPECT_EQ(api_error_from_status(internal_error("x")).http_status, 500);
}

}  // namespace
}  // namespace folio::server
