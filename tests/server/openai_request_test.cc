// OpenAI request parsing: defaults, every accepted field shape, and a 400
// naming the field for every malformed one.
#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace folio::server {
namespace openai_request_test {

OpenAiRequest parse_ok(const std::string& body, ApiKind kind) {
  Json j;
  ApiError err;
  EXPECT_TRUE(parse_json_body(body, &j, &err)) << err.message;
  OpenAiRequest r;
  EXPECT_TRUE(parse_openai_request(j, kind, &r, &err)) << body << ": " << err.message;
  return r;
}

ApiError parse_error(const std::string& body, ApiKind kind) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err;
  OpenAiRequest r;
  EXPECT_FALSE(parse_openai_request(j, kind, &r, &err)) << body;
  return err;
}

constexpr ApiKind kCompl = ApiKind::kCompletion;
constexpr ApiKind kChat = ApiKind::kChat;

TEST(OpenAiRequest, CompletionDefaultsAreOpenAis) {
  OpenAiRequest r = parse_ok(R"({"model": "m", "prompt": "hello"})", kCompl);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].text, "hello");
  EXPECT_EQ(r.params.temperature, 1.0f);
  EXPECT_EQ(r.params.top_p, 1.0f);
  EXPECT_EQ(r.params.top_k, 0);
  EXPECT_EQ(r.params.min_p, 0.0f);
  EXPECT_EQ(r.params.max_tokens, 16);  // OpenAI's completions default
  EXPECT_FALSE(r.params.seed.has_value());
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_FALSE(r.params.logprobs);
}

TEST(OpenAiRequest, ChatDefaultsGenerateUntilContextEnds) {
  OpenAiRequest r = parse_ok(R"({"messages": [{"role": "user", "content": "hi"}]})", kChat);
  EXPECT_EQ(r.params.max_tokens, -1);
  EXPECT_TRUE(r.add_generation_prompt);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
}

TEST(OpenAiRequest, EverySamplingField) {
  OpenAiRequest r = parse_ok(R"({
    "prompt": [1, 2, 3], "max_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": 40,
    "min_p": 0.1, "presence_penalty": 0.5, "frequency_penalty": -1.5, "repetition_penalty": 1.1,
    "repeat_last_n": -1, "seed": 42, "stop": ["a", "bc"], "n": 3, "logprobs": 2,
    "logit_bias": {"5": -100, "17": 2.5}, "stream": true, "stream_options": {"include_usage": true},
    "user": "someone", "priority": 5, "ignore_eos": true, "best_of": 3, "suffix": null})",
                             kCompl);
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  const SamplingParams& p = r.params;
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_EQ(p.temperature, 0.0f);
  EXPECT_EQ(p.top_p, 0.5f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.1f);
  EXPECT_EQ(p.presence_penalty, 0.5f);
  EXPECT_EQ(p.frequency_penalty, -1.5f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  EXPECT_EQ(p.penalty_last_n, -1);
  ASSERT_TRUE(p.seed.has_value());
  EXPECT_EQ(*p.seed, 42u);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.logprobs, 2);
  EXPECT_TRUE(p.logprobs);
  EXPECT_EQ(p.top_logprobs, 2);
  EXPECT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(p.logit_bias.at(5), -100.0f);
  EXPECT_EQ(p.logit_bias.at(17), 2.5f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.priority, 5);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_TRUE(r.speculative);  // not given: speculates when the server does
  EXPECT_TRUE(p.validate(100).ok());
  EXPECT_FALSE(parse_ok(R"({"prompt": "x", "speculative": false})", kCompl).speculative);
  EXPECT_EQ(parse_error(R"({"prompt": "x", "speculative": 1})", kCompl).param, "speculative");
}

TEST(OpenAiRequest, PromptShapes) {
  OpenAiRequest a = parse_ok(R"({"prompt": ["x", "y"]})", kCompl);
  ASSERT_EQ(a.prompts.size(), 2u);
  EXPECT_EQ(a.prompts[1].text, "y");
  OpenAiRequest b = parse_ok(R"({"prompt": [[1, 2], [3]]})", kCompl);
  ASSERT_EQ(b.prompts.size(), 2u);
  EXPECT_EQ(b.prompts[1].tokens, std::vector<int32_t>{3});
  EXPECT_EQ(parse_error(R"({"prompt": []})", kCompl).param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": [1, "x"]})", kCompl).param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": [-1]})", kCompl).param, "prompt");
  EXPECT_EQ(parse_error(R"({"prompt": 5})", kCompl).param, "prompt");
  EXPECT_EQ(parse_error(R"({"max_tokens": 5})", kCompl).param, "prompt");
}

TEST(OpenAiRequest, StopAcceptsStringListOrNull) {
  EXPECT_EQ(parse_ok(R"({"prompt": "p", "stop": "END"})", kCompl).params.stop,
            std::vector<std::string>{"END"});
  EXPECT_TRUE(parse_ok(R"({"prompt": "p", "stop": null})", kCompl).params.stop.empty());
  EXPECT_TRUE(parse_ok(R"({"prompt": "p", "stop": ""})", kCompl).params.stop.empty());
  EXPECT_EQ(parse_error(R"({"prompt": "p", "stop": [1]})", kCompl).param, "stop");
  std::string many = R"({"prompt": "p", "stop": [)";
  for (int i = 0; i < 17; ++i) many += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
  EXPECT_EQ(parse_error(many + "]}", kCompl).param, "stop");
}

TEST(OpenAiRequest, ChatLogprobsAreABoolPlusTopLogprobs) {
  OpenAiRequest r = parse_ok(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 3})",
      kChat);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.top_logprobs, 3);
  OpenAiRequest plain =
      parse_ok(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})", kChat);
  EXPECT_EQ(plain.logprobs, 0);
  EXPECT_TRUE(plain.params.logprobs);
  EXPECT_EQ(
      parse_error(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", kChat)
          .param,
      "top_logprobs");
  EXPECT_EQ(parse_error(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})", kChat)
                .param,
            "logprobs");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logprobs": true})", kCompl).param, "logprobs");
  EXPECT_EQ(parse_error(R"({"prompt": "x", "logprobs": 21})", kCompl).param, "logprobs");
}

TEST(OpenAiRequest, MessagesAreNormalised) {
  OpenAiRequest r = parse_ok(R"({"messages": [
      {"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}]})",
                             kChat);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_TRUE(r.messages[2]["content"].is_null());
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(r.messages[3]["tool_call_id"], "c1");
}

TEST(OpenAiRequest, BadMessagesName400) {
  for (
      const char* body : {
          R"({"messages": []})",
          R"({"messages": "hi"})",
          R"({"messages": [{"content": "x"}]})",
          R"({"messages": [{"role": "wizard", "content": "x"}]})",
          R"({"messages": [{"role": "user", "content": 5}]})",
          R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
          R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
      }) {
    ApiError e = parse_error(body, kChat);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, "messages") << body;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

// OpenAI's schema requires content in system, developer, user and tool
// messages; a null one would reach the template and render as "None".
TEST(OpenAiRequest, NullContentOnlyInAssistantMessages) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"messages": [{"role": "user", "content": null}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user"}]})", "missing"},
      {R"({"messages": [{"role": "system", "content": "s"}, {"role": "system", "content": null}]})",
       "messages[1].content"},
      {R"({"messages": [{"role": "developer", "content": null}]})", "'developer'"},
      {R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null,
           "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": null}]})",
       "messages[2].content"},
  };
  for (const auto& [body, says] : cases) {
    ApiError e = parse_error(body, kChat);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, "messages") << body;
    EXPECT_NE(e.message.find(says), std::string::npos) << body << ": " << e.message;
  }
  ApiError e = parse_error(R"({"messages": [{"role": "user", "content": null}]})", kChat);
  EXPECT_NE(e.message.find("'user'"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("null"), std::string::npos) << e.message;

  // Assistant messages may leave it null (or out), with or without tool calls.
  OpenAiRequest r = parse_ok(R"({"messages": [{"role": "user", "content": "q"},
      {"role": "assistant", "content": null}, {"role": "assistant"},
      {"role": "user", "content": []}]})",
                             kChat);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_TRUE(r.messages[1]["content"].is_null());
  EXPECT_TRUE(r.messages[2]["content"].is_null());
  EXPECT_EQ(r.messages[3]["content"], "");
}

TEST(OpenAiRequest, EveryBadValueIsA400NamingItsField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"prompt": "p", "temperature": "hot"})", "temperature"},
      {R"({"prompt": "p", "temperature": -0.5})", "temperature"},
      {R"({"prompt": "p", "top_p": 0})", "top_p"},
      {R"({"prompt": "p", "top_p": 1.5})", "top_p"},
      {R"({"prompt": "p", "top_k": -2})", "top_k"},
      {R"({"prompt": "p", "top_k": 2.5})", "top_k"},
      {R"({"prompt": "p", "min_p": 2})", "min_p"},
      {R"({"prompt": "p", "presence_penalty": 3})", "presence_penalty"},
      {R"({"prompt": "p", "frequency_penalty": -2.5})", "frequency_penalty"},
      {R"({"prompt": "p", "repetition_penalty": 0})", "repetition_penalty"},
      {R"({"prompt": "p", "max_tokens": -5})", "max_tokens"},
      {R"({"prompt": "p", "max_tokens": "ten"})", "max_tokens"},
      {R"({"prompt": "p", "max_completion_tokens": 1e20})", "max_completion_tokens"},
      {R"({"prompt": "p", "n": 0})", "n"},
      {R"({"prompt": "p", "n": 17})", "n"},
      {R"({"prompt": "p", "seed": "x"})", "seed"},
      {R"({"prompt": "p", "seed": 18446744073709551615})", "seed"},
      {R"({"prompt": "p", "stream": "yes"})", "stream"},
      {R"({"prompt": "p", "stream_options": {"include_usage": 1}})", "stream_options"},
      {R"({"prompt": "p", "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"prompt": "p", "logit_bias": {"1": 101}})", "logit_bias"},
      {R"({"prompt": "p", "logit_bias": [1, 2]})", "logit_bias"},
      {R"({"prompt": "p", "echo": 1})", "echo"},
      {R"({"prompt": "p", "echo": true, "logprobs": 1})", "echo"},
      {R"({"prompt": "p", "suffix": "tail"})", "suffix"},
      {R"({"prompt": "p", "best_of": 2})", "best_of"},
      {R"({"prompt": "p", "priority": 1.5})", "priority"},
      {R"({"prompt": "p", "model": 3})", "model"},
      {R"({"prompt": "p", "response_format": {"type": "yaml"}})", "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools"},
  };
  for (const auto& [body, param] : cases) {
    const bool chat = std::string(body).find("messages") != std::string::npos;
    ApiError e = parse_error(body, chat ? kChat : kCompl);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(OpenAiRequest, TooManyChoicesInAll) {
  std::string body = R"({"prompt": [)";
  for (int i = 0; i < 20; ++i) body += (i ? ",\"p\"" : "\"p\"");
  body += R"(], "n": 8})";
  EXPECT_EQ(parse_error(body, kCompl).param, "n");
}

TEST(OpenAiRequest, MalformedJsonIs400) {
  Json j;
  ApiError err;
  EXPECT_FALSE(parse_json_body("{\"prompt\": ", &j, &err));
  EXPECT_EQ(err.http_status, 400);
  EXPECT_NE(err.message.find("malformed JSON"), std::string::npos);
  EXPECT_FALSE(parse_json_body("[1, 2]", &j, &err));
  EXPECT_EQ(err.http_status, 400);
  EXPECT_FALSE(parse_json_body("", &j, &err));
}

// A number beyond a double's range is valid JSON grammar that the parser
// cannot hold (nlohmann::json throws out_of_range 406): a 400, wherever it is.
TEST(OpenAiRequest, NumberOverflowingADoubleIs400) {
  for (const std::string& body : std::vector<std::string>{
           R"({"prompt": "x", "max_tokens": 1e309})",
           R"({"prompt": "x", "temperature": -1e309})",
           R"({"prompt": "x", "logit_bias": {"5": 1E+400}})",
           R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
               "function": {"name": "f", "parameters": {"maximum": [1, 2e999]}}}]})",
           "{\"prompt\": \"x\", \"n\": 1" + std::string(400, '0') + "}",
       }) {
    Json j;
    ApiError err;
    EXPECT_FALSE(parse_json_body(body, &j, &err)) << body;
    EXPECT_EQ(err.http_status, 400) << body;
    EXPECT_EQ(err.type, "invalid_request_error") << body;
    EXPECT_NE(err.message.find("request body"), std::string::npos) << err.message;
    EXPECT_NE(err.body().find("\"error\""), std::string::npos);
    EXPECT_LE(err.message.size(), 260u);  // the quoted number is cut short
  }
  // Tiny magnitudes round to zero; that is no error.
  Json j;
  ApiError err;
  EXPECT_TRUE(parse_json_body(R"({"prompt": "x", "temperature": 1e-400})", &j, &err))
      << err.message;
}

TEST(OpenAiRequest, DeepNestingIsRefusedBeforeParsing) {
  Json j;
  ApiError err;
  const std::string deep =
      R"({"tools": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_FALSE(parse_json_body(deep, &j, &err));
  EXPECT_EQ(err.http_status, 400);
  EXPECT_NE(err.message.find("deeper than"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(parse_json_body(R"({"prompt": ")" + std::string(1000, '[') + R"(\"["})", &j, &err))
      << err.message;
  std::string ok = R"({"a": )" + std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_TRUE(parse_json_body(ok, &j, &err)) << err.message;
}

TEST(OpenAiRequest, NullMeansDefault) {
  OpenAiRequest r = parse_ok(
      R"({"prompt": "p", "temperature": null, "max_tokens": null, "n": null, "seed": null,
          "logprobs": null, "stream": null, "stream_options": null, "logit_bias": null})",
      kCompl);
  EXPECT_EQ(r.params.temperature, 1.0f);
  EXPECT_EQ(r.params.max_tokens, 16);
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(r.logprobs, -1);
}

TEST(OpenAiRequest, ToolChoiceNoneHidesTools) {
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  EXPECT_TRUE(parse_ok("{" + msgs + ", " + tools + "}", kChat).tools.is_array());
  EXPECT_TRUE(
      parse_ok("{" + msgs + ", " + tools + R"(, "tool_choice": "none"})", kChat).tools.is_null());
}

}  // namespace
}  // namespace folio::server
