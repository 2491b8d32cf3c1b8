// The Anthropic Messages API (/v1/messages, /v1/messages/count_tokens):
// request translation into the chat request, hostile input (Anthropic's
// 400, never a crash), error shapes, the writer's body and stream events,
// and the routes end to end against a scripted engine.
#include "server/anthropic_api.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "named_sse.h"
#include "raw_http.h"
#include "scripted_server.h"

namespace folio::server {
namespace anthropic_api_test {

using testing::parse_named_sse;
using testing::ScriptedService;
using testing::SseEvent;

AnthropicRequest parse_ok(const std::string& body, bool count_tokens = false) {
  Json j;
  ApiError err;
  EXPECT_TRUE(parse_json_body(body, &j, &err)) << err.message;
  AnthropicRequest r;
  EXPECT_TRUE(parse_anthropic_request(j, count_tokens, &r, &err)) << body << ": " << err.message;
  return r;
}

ApiError parse_error(const std::string& body, bool count_tokens = false) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err;
  AnthropicRequest r;
  EXPECT_FALSE(parse_anthropic_request(j, count_tokens, &r, &err)) << body;
  return err;
}

constexpr const char* kHead = R"("model": "m", "max_tokens": 32)";

TEST(AnthropicRequest, SystemMessagesAndSampling) {
  AnthropicRequest r = parse_ok(std::string("{") + kHead + R"(,
      "system": [{"type": "text", "text": "Be"}, {"type": "text", "text": "brief."}],
      "messages": [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                   {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]}],
      "temperature": 0.3, "top_p": 0.8, "top_k": 5, "stop_sequences": ["END", "STOP"],
      "metadata": {"user_id": "u"}})");
  const Json& m = r.chat.messages;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0], (Json{{"role", "system"}, {"content", "Be\nbrief."}}));
  EXPECT_EQ(m[1], (Json{{"role", "user"}, {"content", "hi"}}));
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["content"], "hello");
  EXPECT_EQ(m[3]["content"], "more");
  EXPECT_EQ(r.chat.params.max_tokens, 32);
  EXPECT_FLOAT_EQ(r.chat.params.temperature, 0.3f);
  EXPECT_FLOAT_EQ(r.chat.params.top_p, 0.8f);
  EXPECT_EQ(r.chat.params.top_k, 5);
  EXPECT_EQ(r.chat.params.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(r.chat.model, "m");
  EXPECT_FALSE(r.stream);
}

TEST(AnthropicRequest, ToolUseToolResultAndThinkingBlocks) {
  AnthropicRequest r = parse_ok(std::string("{") + kHead + R"(,
      "tools": [{"name": "get_weather", "description": "d",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
                {"type": "custom", "name": "noop", "input_schema": {"type": "object"}}],
      "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
      "thinking": {"type": "enabled", "budget_tokens": 2048},
      "messages": [{"role": "user", "content": "weather?"},
                   {"role": "assistant", "content": [
                     {"type": "thinking", "thinking": "need a tool", "signature": "sig"},
                     {"type": "redacted_thinking", "data": "xx"},
                     {"type": "text", "text": "Checking."},
                     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
                   {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                     {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                      "content": [{"type": "text", "text": "again"}]},
                     {"type": "text", "text": "thanks"}]}]})");
  const Json& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u) << m.dump();
  EXPECT_EQ(m[1]["role"], "assistant");
  EXPECT_EQ(m[1]["content"], "Checking.");
  EXPECT_EQ(m[1]["reasoning_content"], "need a tool");
  ASSERT_EQ(m[1]["tool_calls"].size(), 1u);
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[1]["tool_calls"][0]["function"]["arguments"], (Json{{"city", "Paris"}}));
  EXPECT_EQ(m[2], (Json{{"role", "tool"},
                        {"tool_call_id", "toolu_1"},
                        {"content", "sunny"},
                        {"name", "get_weather"}}));
  EXPECT_EQ(m[3]["content"], "again");
  EXPECT_EQ(m[4], (Json{{"role", "user"}, {"content", "thanks"}}));
  EXPECT_EQ(r.chat.reasoning_budget_tokens, 2048);  // enforced as the reasoning budget
  ASSERT_EQ(r.chat.tools.size(), 2u);
  EXPECT_EQ(r.chat.tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(r.chat.tools[0]["function"]["parameters"]["properties"]["city"]["type"], "string");
  EXPECT_EQ(r.chat.tool_choice.mode, ToolChoiceMode::kRequired);
  EXPECT_FALSE(r.chat.parallel_tool_calls);
  EXPECT_EQ(r.chat.chat_template_kwargs["enable_thinking"], true);

  AnthropicRequest named = parse_ok(std::string("{") + kHead + R"(,
      "tools": [{"name": "f", "input_schema": {"type": "object"}}],
      "tool_choice": {"type": "tool", "name": "f"}, "thinking": {"type": "disabled"},
      "messages": [{"role": "user", "content": "x"}], "stream": true})");
  EXPECT_EQ(named.chat.tool_choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(named.chat.tool_choice.name, "f");
  EXPECT_EQ(named.chat.chat_template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(named.stream);

  AnthropicRequest none = parse_ok(std::string("{") + kHead + R"(,
      "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "none"},
      "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_TRUE(none.chat.tools.is_null());
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokens) {
  AnthropicRequest r =
      parse_ok(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})", true);
  EXPECT_EQ(r.chat.messages.size(), 1u);
  ApiError e = parse_error(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_EQ(e.http_status, 400);
}

TEST(AnthropicRequest, HostileInputIsA400NamingTheField) {
  struct Case {
    std::string body;
    const char* param;
  };
  const std::string h = std::string("{") + kHead + ",";
  const std::string msgs = R"("messages": [{"role": "user", "content": "x"}])";
  const Case cases[] = {
      {R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]})", "model"},
      {R"({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]})",
       "max_tokens"},
      {R"({"model": "m", "max_tokens": "5", "messages": [{"role": "user", "content": "x"}]})",
       "max_tokens"},
      {R"({"model": "m", "max_tokens": 1.5, "messages": [{"role": "user", "content": "x"}]})",
       "max_tokens"},
      {h + R"("messages": []})", "messages"},
      {h + R"("messages": "hi"})", "messages"},
      {h + R"("messages": [5]})", "messages"},
      {h + R"("messages": [{"role": "system", "content": "x"}]})", "messages"},
      {h + R"("messages": [{"role": "user"}]})", "messages"},
      {h + R"("messages": [{"role": "user", "content": 5}]})", "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"text": "x"}]}]})", "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "hologram"}]}]})", "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": "x"}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})", "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image"}]}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}]}]})",
       "messages"},
      {h + R"("messages": [{"role": "assistant", "content": [{"type": "thinking"}]}]})",
       "messages"},
      {h + msgs + R"(, "system": 5})", "system"},
      {h + msgs + R"(, "system": [{"type": "image"}]})", "system"},
      {h + msgs + R"(, "temperature": 1.5})", "temperature"},
      {h + msgs + R"(, "temperature": "hot"})", "temperature"},
      {h + msgs + R"(, "top_p": 2})", "top_p"},
      {h + msgs + R"(, "stop_sequences": "END"})", "stop_sequences"},
      {h + msgs + R"(, "stop_sequences": [5]})", "stop_sequences"},
      {h + msgs + R"(, "tools": {}})", "tools"},
      {h + msgs + R"(, "tools": [{"name": "f"}]})", "tools"},
      {h + msgs + R"(, "tools": [{"input_schema": {}}]})", "tools"},
      {h + msgs + R"(, "tools": [{"name": "f", "input_schema": 5}]})", "tools"},
      {h + msgs + R"(, "tools": [{"type": "bash_20250124", "name": "bash"}]})", "tools"},
      {h + msgs + R"(, "tools": [{"name": "f", "input_schema": {}, "description": 5}]})", "tools"},
      {h + msgs + R"(, "tool_choice": "auto"})", "tool_choice"},
      {h + msgs + R"(, "tool_choice": {"type": "sometimes"}})", "tool_choice"},
      {h + msgs + R"(, "tool_choice": {"type": "any"}})", "tool_choice"},
      {h + msgs +
           R"(, "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "tool"}})",
       "tool_choice"},
      {h + msgs +
           R"(, "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "g"}})",
       "tool_choice"},
      {h + msgs +
           R"(, "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "auto", "disable_parallel_tool_use": 1}})",
       "tool_choice"},
      {h + msgs + R"(, "thinking": true})", "thinking"},
      {h + msgs + R"(, "thinking": {"type": "enabled"}})", "thinking"},
      {h + msgs + R"(, "thinking": {"type": "maybe"}})", "thinking"},
      {h + msgs + R"(, "thinking": {"type": "enabled", "budget_tokens": 3000000000}})",
       "thinking.budget_tokens"},
      {h + msgs + R"(, "stream": "yes"})", "stream"},
  };
  for (const Case& c : cases) {
    ApiError e = parse_error(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_EQ(parse_error("[]").http_status, 400);
}

TEST(AnthropicRequest, HugeInputParses) {
  // A 1 MB tool input and 20000 messages.
  std::string body = std::string("{") + kHead + R"(, "messages": [)";
  for (int i = 0; i < 10000; ++i) {
    body += R"({"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},)";
  }
  body += R"({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
             "input": {"blob": ")" +
          std::string(1 << 20, 'a') + R"("}}]}]})";
  AnthropicRequest r = parse_ok(body);
  EXPECT_EQ(r.chat.messages.size(), 20001u);
}

TEST(AnthropicErrors, ShapeAndTypes) {
  const Json j = anthropic_error_json(bad_request("max_tokens: Field required", "max_tokens"));
  EXPECT_EQ(j, (Json{{"type", "error"},
                     {"error", Json{{"type", "invalid_request_error"},
                                    {"message", "max_tokens: Field required"}}}}));
  EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
  EXPECT_STREQ(anthropic_error_type(403), "permission_error");
  EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
  EXPECT_STREQ(anthropic_error_type(413), "request_too_large");
  EXPECT_STREQ(anthropic_error_type(415), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_STREQ(anthropic_error_type(500), "api_error");
  HttpReply r = anthropic_error_reply(unauthorized_error());
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Json::parse(r.body)["error"]["type"], "authentication_error");
}

TEST(StopSequence, TheFirstToCompleteWins) {
  EXPECT_EQ(matched_stop_sequence("abc END more", {"STOP", "END"}), "END");
  EXPECT_EQ(matched_stop_sequence("abc ENDING", {"ENDING", "END"}), "END");
  EXPECT_EQ(matched_stop_sequence("x STOP y END", {"END", "STOP"}), "STOP");
  EXPECT_EQ(matched_stop_sequence("nothing", {"END"}), "");
  EXPECT_EQ(matched_stop_sequence("abc", {}), "");
  EXPECT_EQ(matched_stop_sequence("abc", {""}), "");
}

ChatOutcome outcome_of(std::string reasoning, std::string content,
                       std::vector<chat::ParsedToolCall> calls, StopReason stop,
                       std::string stop_sequence = "") {
  ChatOutcome o;
  o.reasoning = std::move(reasoning);
  o.content = std::move(content);
  o.calls = std::move(calls);
  o.stop = stop;
  o.stop_sequence = std::move(stop_sequence);
  o.usage.prompt_tokens = 10;
  o.usage.completion_tokens = 4;
  o.usage.cached_tokens = 2;
  return o;
}

TEST(AnthropicWriter, BodyBlocksAndStopReasons) {
  AnthropicWriter w("tiny", 10);
  Json b =
      w.body(outcome_of("hmm", "text", {{"", "f", R"({"a":1})"}}, StopReason::kEndOfGeneration));
  EXPECT_EQ(b["id"], w.id());
  EXPECT_EQ(b["id"].get<std::string>().rfind("msg_", 0), 0u);
  EXPECT_EQ(b["type"], "message");
  EXPECT_EQ(b["role"], "assistant");
  EXPECT_EQ(b["model"], "tiny");
  ASSERT_EQ(b["content"].size(), 3u);
  EXPECT_EQ(b["content"][0], (Json{{"type", "thinking"}, {"thinking", "hmm"}, {"signature", ""}}));
  EXPECT_EQ(b["content"][1], (Json{{"type", "text"}, {"text", "text"}}));
  EXPECT_EQ(b["content"][2]["type"], "tool_use");
  EXPECT_EQ(b["content"][2]["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(b["content"][2]["input"], (Json{{"a", 1}}));
  EXPECT_EQ(b["stop_reason"], "tool_use");
  EXPECT_TRUE(b["stop_sequence"].is_null());
  EXPECT_EQ(b["usage"]["input_tokens"], 10);
  EXPECT_EQ(b["usage"]["output_tokens"], 4);
  EXPECT_EQ(b["usage"]["cache_read_input_tokens"], 2);

  EXPECT_EQ(w.body(outcome_of("", "x", {}, StopReason::kEndOfGeneration))["stop_reason"],
            "end_turn");
  EXPECT_EQ(w.body(outcome_of("", "x", {}, StopReason::kLength))["stop_reason"], "max_tokens");
  EXPECT_EQ(w.body(outcome_of("", "x", {}, StopReason::kContextFull))["stop_reason"], "max_tokens");
  // A call cut by the token limit: its arguments may be incomplete.
  EXPECT_EQ(w.body(outcome_of("", "", {{"", "f", R"({"a":)"}}, StopReason::kLength))["stop_reason"],
            "max_tokens");
  Json stopped = w.body(outcome_of("", "x", {}, StopReason::kStopString, "END"));
  EXPECT_EQ(stopped["stop_reason"], "stop_sequence");
  EXPECT_EQ(stopped["stop_sequence"], "END");
  // Nothing generated: one empty text block.
  Json empty = w.body(outcome_of("", "", {}, StopReason::kEndOfGeneration));
  EXPECT_EQ(empty["content"], Json::array({Json{{"type", "text"}, {"text", ""}}}));
}

TEST(AnthropicWriter, StreamEventsFollowAnthropicsOrder) {
  AnthropicWriter w("tiny", 10);
  std::string sse = w.stream_start();
  sse += w.stream_reasoning("th");
  sse += w.stream_reasoning("ink");
  sse += w.stream_content("Hel");
  sse += w.stream_content("lo");
  // A call streamed in pieces: its name, then its arguments in two.
  sse += w.stream_call_delta({0, true, "", "f", ""});
  sse += w.stream_call_delta({0, false, "", "", R"({"a":)"});
  sse += w.stream_call_delta({0, false, "", "", "1}"});
  sse += w.stream_call_done({"", "f", R"({"a":1})"});
  sse += w.stream_end(
      outcome_of("think", "Hello", {{"", "f", R"({"a":1})"}}, StopReason::kEndOfGeneration));
  const std::vector<SseEvent> e = parse_named_sse(sse);
  std::vector<std::string> types;
  for (const SseEvent& x : e) types.push_back(x.event);
  const std::vector<std::string> expected = {"message_start",       "ping",
                                             "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "message_delta",
                                             "message_stop"};
  ASSERT_EQ(types, expected);
  EXPECT_EQ(e[0].data["message"]["id"], w.id());
  EXPECT_EQ(e[0].data["message"]["usage"]["input_tokens"], 10);
  EXPECT_EQ(e[0].data["message"]["content"], Json::array());
  EXPECT_EQ(e[2].data["index"], 0);
  EXPECT_EQ(e[2].data["content_block"]["type"], "thinking");
  EXPECT_EQ(e[3].data["delta"], (Json{{"type", "thinking_delta"}, {"thinking", "th"}}));
  EXPECT_EQ(e[5].data["delta"]["type"], "signature_delta");
  EXPECT_EQ(e[7].data["index"], 1);
  EXPECT_EQ(e[7].data["content_block"], (Json{{"type", "text"}, {"text", ""}}));
  EXPECT_EQ(e[9].data["delta"], (Json{{"type", "text_delta"}, {"text", "lo"}}));
  EXPECT_EQ(e[11].data["index"], 2);
  EXPECT_EQ(e[11].data["content_block"]["type"], "tool_use");
  EXPECT_EQ(e[11].data["content_block"]["name"], "f");
  EXPECT_EQ(e[11].data["content_block"]["input"], Json::object());
  EXPECT_EQ(e[12].data["delta"]["type"], "input_json_delta");
  EXPECT_EQ(e[13].data["delta"]["type"], "input_json_delta");
  EXPECT_EQ(e[12].data["index"], 2);
  EXPECT_EQ(e[13].data["index"], 2);
  // The pieces spell the input.
  EXPECT_EQ(Json::parse(e[12].data["delta"]["partial_json"].get<std::string>() +
                        e[13].data["delta"]["partial_json"].get<std::string>()),
            (Json{{"a", 1}}));
  EXPECT_EQ(e[14].data["index"], 2);
  EXPECT_EQ(e[15].data["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(e[15].data["usage"]["output_tokens"], 4);

  AnthropicWriter w2("tiny", 1);
  const std::vector<SseEvent> err =
      parse_named_sse(w2.stream_start() + w2.stream_error(unavailable_error("stopping")));
  EXPECT_EQ(err.back().event, "error");
  EXPECT_EQ(err.back().data["error"]["type"], "overloaded_error");
}

// --- the routes against a scripted engine ---------------------------------------------

class AnthropicServerTest : public testing::ScriptedServerTest {
 protected:
  void finish(ScriptedService::Submitted& s, std::vector<std::string> pieces, StopReason stop) {
    for (const std::string& p : pieces) {
      s.callbacks.on_token(
          testing::token_event(0, tok_->tokenize(p, {.add_special = false}).at(0), p));
    }
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = stop;
    r.prompt_tokens = static_cast<int64_t>(s.request.prompt.size());
    r.completion_tokens = static_cast<int64_t>(pieces.size());
    s.callbacks.on_done(r);
  }
};

// One request on a raw connection (Connection: close), the answer's bytes.
std::string raw_exchange(int port, const std::string& request) {
  testing::RawConnection c(port);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.send(request));
  std::string out;
  EXPECT_TRUE(c.read_until_closed(std::chrono::seconds(30), &out));
  return out;
}

constexpr const char* kBody =
    R"({"model": "tiny", "max_tokens": 16, "system": "S", "messages": [{"role": "user", "content": "Say hi"}]})";

TEST_F(AnthropicServerTest, MessagesAndCountTokensAgree) {
  start_serving();
  testing::HttpAnswer a;
  std::thread client([&] { a = testing::post(port_, "/v1/messages", kBody); });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  EXPECT_EQ(s.request.params.max_tokens, 16);
  finish(s, {"Hi"}, StopReason::kEndOfGeneration);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  const Json b = testing::json_of(a);
  EXPECT_EQ(b["content"][0]["text"], "Hi");
  EXPECT_EQ(b["stop_reason"], "end_turn");
  EXPECT_EQ(b["usage"]["input_tokens"], static_cast<int64_t>(s.request.prompt.size()));

  testing::HttpAnswer c = testing::post(
      port_, "/v1/messages/count_tokens",
      R"({"model": "tiny", "system": "S", "messages": [{"role": "user", "content": "Say hi"}]})");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(testing::json_of(c)["input_tokens"], static_cast<int64_t>(s.request.prompt.size()));
  EXPECT_EQ(service_.n_submitted(), 1u);  // counting generates nothing
}

TEST_F(AnthropicServerTest, StreamWithStopSequence) {
  start_serving();
  testing::HttpAnswer a;
  std::thread client([&] {
    a = testing::post(port_, "/v1/messages",
                      R"({"model": "tiny", "max_tokens": 16, "stream": true,
                          "stop_sequences": ["zebra", "lion"],
                          "messages": [{"role": "user", "content": "x"}]})");
  });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  EXPECT_EQ(s.request.params.stop, (std::vector<std::string>{"zebra", "lion"}));
  // The engine cut the text before " lion": the token is delivered without text.
  s.callbacks.on_token(
      testing::token_event(0, tok_->tokenize(" cat", {.add_special = false}).at(0), " cat"));
  for (int32_t id : tok_->tokenize(" lion", {.add_special = false})) {
    s.callbacks.on_token(testing::token_event(0, id, ""));
  }
  RequestResult r;
  r.choices.resize(1);
  r.choices[0].stop = StopReason::kStopString;
  s.callbacks.on_done(r);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  const std::vector<SseEvent> e = parse_named_sse(a.body);
  ASSERT_GE(e.size(), 4u);
  EXPECT_EQ(e.front().event, "message_start");
  EXPECT_EQ(e.back().event, "message_stop");
  const SseEvent& delta = e[e.size() - 2];
  EXPECT_EQ(delta.event, "message_delta");
  EXPECT_EQ(delta.data["delta"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(delta.data["delta"]["stop_sequence"], "lion");
  std::string text;
  for (const SseEvent& x : e) {
    if (x.event == "content_block_delta") text += x.data["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(text, " cat");
}

TEST_F(AnthropicServerTest, ErrorsAreAnthropicsShapeEvenFromScreening) {
  ServerOptions o;
  o.api_key = "k";
  start_serving(o);
  // No key, a wrong key, then the right one as Anthropic's clients send it.
  testing::HttpAnswer a = testing::post(port_, "/v1/messages", kBody);
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(testing::json_of(a)["error"]["type"], "authentication_error");
  EXPECT_EQ(testing::json_of(a)["type"], "error");
  const std::string head =
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  std::string missing = R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}]})";
  std::string reply = raw_exchange(
      port_, head + "x-api-key: k\r\nContent-Length: " + std::to_string(missing.size()) +
                 "\r\nConnection: close\r\n\r\n" + missing);
  EXPECT_NE(reply.find("HTTP/1.1 400"), std::string::npos) << reply;
  EXPECT_NE(reply.find(R"("type":"invalid_request_error")"), std::string::npos) << reply;
  EXPECT_NE(reply.find("max_tokens"), std::string::npos) << reply;
  reply = raw_exchange(port_, head +
                                  "x-api-key: wrong\r\nContent-Length: 2\r\n"
                                  "Connection: close\r\n\r\n{}");
  EXPECT_NE(reply.find("HTTP/1.1 401"), std::string::npos) << reply;
  // A body that is not JSON: 415 in Anthropic's shape.
  reply = raw_exchange(port_,
                       "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\n"
                       "Content-Type: text/plain\r\nContent-Length: 2\r\n"
                       "Connection: close\r\n\r\n{}");
  EXPECT_NE(reply.find("HTTP/1.1 415"), std::string::npos) << reply;
  EXPECT_NE(reply.find(R"("type":"error")"), std::string::npos) << reply;
  EXPECT_EQ(service_.n_submitted(), 0u);
}

TEST_F(AnthropicServerTest, ClientThatLeavesIsCancelled) {
  start_serving();
  const std::string body = R"({"model": "tiny", "max_tokens": 16, "stream": true,
                               "messages": [{"role": "user", "content": "x"}]})";
  testing::RawConnection c(port_);
  ASSERT_TRUE(
      c.send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body));
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  std::string head;
  c.read_for(std::chrono::milliseconds(500), &head);
  EXPECT_NE(head.find("message_start"), std::string::npos) << head;
  c.close();
  EXPECT_TRUE(service_.wait_cancelled(s.id));
}

}  // namespace anthropic_api_test
}  // namespace folio::server
