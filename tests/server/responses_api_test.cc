// The Responses API (/v1/responses): request translation into the chat
// request, hostile input (a 400 naming the field, never a crash), the
// response store, the writer's body and typed stream events, and the route
// end to end against a scripted engine.
#include "server/responses_api.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "named_sse.h"
#include "scripted_server.h"

namespace folio::server {
namespace responses_api_test {

using testing::parse_named_sse;
using testing::ScriptedService;
using testing::SseEvent;

ResponsesRequest parse_ok(const std::string& body, ResponseStore* store = nullptr) {
  Json j;
  ApiError err;
  EXPECT_TRUE(parse_json_body(body, &j, &err)) << err.message;
  ResponsesRequest r;
  EXPECT_TRUE(parse_responses_request(j, store, &r, &err)) << body << ": " << err.message;
  return r;
}

ApiError parse_error(const std::string& body, ResponseStore* store = nullptr) {
  Json j;
  ApiError err;
  if (!parse_json_body(body, &j, &err)) return err;
  ResponsesRequest r;
  EXPECT_FALSE(parse_responses_request(j, store, &r, &err)) << body;
  return err;
}

TEST(ResponsesRequest, StringInputAndInstructions) {
  ResponsesRequest r = parse_ok(
      R"({"model": "m", "input": "hello", "instructions": "Be brief.", "max_output_tokens": 20,
          "temperature": 0.5, "top_p": 0.9})");
  ASSERT_EQ(r.chat.messages.size(), 2u);
  EXPECT_EQ(r.chat.messages[0], (Json{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(r.chat.messages[1], (Json{{"role", "user"}, {"content", "hello"}}));
  // The store keeps the conversation without the instructions.
  ASSERT_EQ(r.history.size(), 1u);
  EXPECT_EQ(r.history[0]["role"], "user");
  EXPECT_EQ(r.chat.params.max_tokens, 20);
  EXPECT_FLOAT_EQ(r.chat.params.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.chat.params.top_p, 0.9f);
  EXPECT_EQ(r.chat.model, "m");
  EXPECT_TRUE(r.store);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(r.chat.n, 1);
}

TEST(ResponsesRequest, ItemsBecomeChatMessages) {
  ResponsesRequest r = parse_ok(R"({"input": [
      {"role": "developer", "content": "sys"},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                      {"type": "input_text", "text": "b"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [],
       "content": [{"type": "reasoning_text", "text": "think"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},
      {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "42"},
      {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "7"}]}
  ]})");
  const Json& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u) << m.dump();
  EXPECT_EQ(m[0]["role"], "system");  // developer, as chat completions normalises it
  EXPECT_EQ(m[1]["content"], "a\nb");
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_EQ(m[2]["content"], "ok");
  EXPECT_EQ(m[2]["reasoning_content"], "think");
  ASSERT_EQ(m[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], (Json{{"x", 1}}));
  EXPECT_EQ(m[3],
            (Json{{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "42"}, {"name", "f"}}));
  EXPECT_EQ(m[4]["content"], "7");
  EXPECT_EQ(m[4]["name"], "g");
}

TEST(ResponsesRequest, FunctionCallAfterUserStartsAnAssistantMessage) {
  ResponsesRequest r = parse_ok(R"({"input": [{"role": "user", "content": "q"},
      {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]})");
  ASSERT_EQ(r.chat.messages.size(), 2u);
  EXPECT_EQ(r.chat.messages[1]["role"], "assistant");
  EXPECT_TRUE(r.chat.messages[1]["content"].is_null());
  EXPECT_EQ(r.chat.messages[1]["tool_calls"].size(), 1u);
}

TEST(ResponsesRequest, ToolsToolChoiceReasoningAndText) {
  ResponsesRequest r = parse_ok(R"({"input": "q",
      "tools": [{"type": "function", "name": "get_weather", "description": "d",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                 "strict": true},
                {"type": "function", "name": "noargs"}],
      "tool_choice": {"type": "function", "name": "get_weather"},
      "parallel_tool_calls": false,
      "reasoning": {"effort": "high"},
      "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}}})");
  ASSERT_EQ(r.chat.tools.size(), 2u);
  EXPECT_EQ(r.chat.tools[0]["type"], "function");
  EXPECT_EQ(r.chat.tools[0]["function"]["name"], "get_weather");
  EXPECT_EQ(r.chat.tools[0]["function"]["description"], "d");
  EXPECT_EQ(r.chat.tools[0]["function"]["strict"], true);
  EXPECT_EQ(r.chat.tools[1]["function"]["parameters"]["type"], "object");
  // Echoed in Responses' flat shape.
  EXPECT_EQ(r.tools[0]["name"], "get_weather");
  EXPECT_EQ(r.tools[1]["strict"], false);
  EXPECT_EQ(r.chat.tool_choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(r.chat.tool_choice.name, "get_weather");
  EXPECT_FALSE(r.chat.parallel_tool_calls);
  EXPECT_EQ(r.chat.reasoning_effort, "high");
  EXPECT_EQ(r.chat.output.kind, OutputConstraint::Kind::kJsonSchema);

  ResponsesRequest none = parse_ok(R"({"input": "q", "reasoning": {"effort": "none"},
      "tools": [{"type": "function", "name": "f"}], "tool_choice": "none",
      "text": {"format": {"type": "json_object"}}, "store": false, "stream": true})");
  EXPECT_EQ(none.chat.chat_template_kwargs["enable_thinking"], false);
  EXPECT_TRUE(none.chat.tools.is_null());  // "none": the model is not told about tools
  EXPECT_EQ(none.chat.output.kind, OutputConstraint::Kind::kJsonObject);
  EXPECT_FALSE(none.store);
  EXPECT_TRUE(none.stream);
}

TEST(ResponsesRequest, HostileInputIsA400NamingTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "input"},
      {R"({"input": null})", "input"},
      {R"({"input": 5})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": [5]})", "input"},
      {R"({"input": [{"type": 5}]})", "input"},
      {R"({"input": [{"type": "item_reference", "id": "x"}]})", "input"},
      {R"({"input": [{"role": "wizard", "content": "x"}]})", "input"},
      {R"({"input": [{"role": "user"}]})", "input"},
      {R"({"input": [{"role": "user", "content": 5}]})", "input"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]})",
       "input"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_text"}]}]})", "input"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", "input"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]})",
       "input"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c"}]})", "input"},
      {R"({"input": [{"type": "reasoning", "content": [{"type": "reasoning_text"}]}]})", "input"},
      {R"({"input": "q", "instructions": 5})", "instructions"},
      {R"({"input": "q", "tools": {}})", "tools"},
      {R"({"input": "q", "tools": [{"type": "web_search"}]})", "tools"},
      {R"({"input": "q", "tools": [{"type": "function"}]})", "tools"},
      {R"({"input": "q", "tools": [{"type": "function", "name": "f", "parameters": 5}]})", "tools"},
      {R"({"input": "q", "tools": [{"type": "function", "name": "f", "strict": "yes"}]})", "tools"},
      {R"({"input": "q", "tool_choice": "sometimes"})", "tool_choice"},
      {R"({"input": "q", "tool_choice": {"type": "file_search"}})", "tool_choice"},
      {R"({"input": "q", "tool_choice": "required"})", "tool_choice"},
      {R"({"input": "q", "tools": [{"type": "function", "name": "f"}],
           "tool_choice": {"type": "function", "name": "g"}})",
       "tool_choice"},
      {R"({"input": "q", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "q", "max_output_tokens": "many"})", "max_output_tokens"},
      {R"({"input": "q", "temperature": -1})", "temperature"},
      {R"({"input": "q", "top_p": "x"})", "top_p"},
      {R"({"input": "q", "reasoning": "high"})", "reasoning"},
      {R"({"input": "q", "reasoning": {"effort": "extreme"}})", "reasoning"},
      {R"({"input": "q", "text": {"format": {"type": "yaml"}}})", "text"},
      {R"({"input": "q", "text": {"format": {"type": "json_schema", "name": "x"}}})", "text"},
      {R"({"input": "q", "text": 5})", "text"},
      {R"({"input": "q", "store": "yes"})", "store"},
      {R"({"input": "q", "stream": 1})", "stream"},
      {R"({"input": "q", "metadata": []})", "metadata"},
      {R"({"input": "q", "background": true})", "background"},
      {R"({"input": "q", "conversation": "conv_1"})", "conversation"},
      {R"({"input": "q", "previous_response_id": 5})", "previous_response_id"},
      {R"({"input": "q", "model": 5})", "model"},
  };
  for (const Case& c : cases) {
    ApiError e = parse_error(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  ApiError body_not_object = parse_error("[1]");
  EXPECT_EQ(body_not_object.http_status, 400);
}

TEST(ResponsesRequest, HugeInputIsParsedNotCopiedAboutWithoutLimit) {
  // 20000 items and a 1 MB argument string parse into a chat request.
  std::string body = R"({"input": [)";
  for (int i = 0; i < 20000; ++i) body += R"({"role": "user", "content": "x"},)";
  body += R"({"type": "function_call", "call_id": "c", "name": "f", "arguments": ")" +
          std::string(1 << 20, 'a') + R"("}]})";
  ResponsesRequest r = parse_ok(body);
  EXPECT_EQ(r.chat.messages.size(), 20001u);
  // Arguments that are not JSON stay the string they were.
  EXPECT_EQ(
      r.chat.messages.back()["tool_calls"][0]["function"]["arguments"].get<std::string>().size(),
      size_t{1} << 20);
}

TEST(ResponsesRequest, PreviousResponseIdPrependsTheStoredConversation) {
  ResponseStore store(4, 1 << 20);
  Json earlier = Json::array({Json{{"role", "user"}, {"content", "first"}},
                              Json{{"role", "assistant"}, {"content", "answer"}}});
  ASSERT_TRUE(store.put("resp_a", earlier));
  ResponsesRequest r = parse_ok(
      R"({"input": "second", "previous_response_id": "resp_a", "instructions": "I"})", &store);
  ASSERT_EQ(r.chat.messages.size(), 4u);
  EXPECT_EQ(r.chat.messages[0]["content"], "I");
  EXPECT_EQ(r.chat.messages[1]["content"], "first");
  EXPECT_EQ(r.chat.messages[2]["content"], "answer");
  EXPECT_EQ(r.chat.messages[3]["content"], "second");
  EXPECT_EQ(r.history.size(), 3u);
  EXPECT_EQ(r.previous_response_id, "resp_a");

  ApiError e = parse_error(R"({"input": "x", "previous_response_id": "resp_gone"})", &store);
  EXPECT_EQ(e.http_status, 404);
  EXPECT_EQ(e.param, "previous_response_id");
  EXPECT_EQ(e.code, "previous_response_not_found");
  EXPECT_EQ(parse_error(R"({"input": "x", "previous_response_id": "resp_a"})", nullptr).http_status,
            404);
}

TEST(ResponseStore, EvictsLeastRecentlyUsedByCountAndBytes) {
  ResponseStore store(2, 1000);
  const Json m = Json::array({Json{{"role", "user"}, {"content", "x"}}});
  ASSERT_TRUE(store.put("a", m));
  ASSERT_TRUE(store.put("b", m));
  ASSERT_TRUE(store.get("a").has_value());  // a is now the most recent
  ASSERT_TRUE(store.put("c", m));
  EXPECT_TRUE(store.get("a").has_value());
  EXPECT_FALSE(store.get("b").has_value());
  EXPECT_TRUE(store.get("c").has_value());
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(*store.get("c"), m);

  // Over the byte bound on its own: not kept, nothing else lost.
  const Json big = Json::array({Json{{"role", "user"}, {"content", std::string(2000, 'z')}}});
  EXPECT_FALSE(store.put("big", big));
  EXPECT_EQ(store.size(), 2u);
  // Entries that together pass the byte bound push the oldest out.
  const Json half = Json::array({Json{{"role", "user"}, {"content", std::string(600, 'h')}}});
  ASSERT_TRUE(store.put("h1", half));
  ASSERT_TRUE(store.put("h2", half));
  EXPECT_FALSE(store.get("h1").has_value());
  EXPECT_TRUE(store.get("h2").has_value());
  EXPECT_LE(store.bytes(), 1000u);
  // A store of no entries keeps nothing.
  ResponseStore none(0, 1000);
  EXPECT_FALSE(none.put("a", m));
  EXPECT_FALSE(none.get("a").has_value());
}

ChatOutcome outcome_of(std::string reasoning, std::string content,
                       std::vector<chat::ParsedToolCall> calls, StopReason stop) {
  ChatOutcome o;
  o.reasoning = std::move(reasoning);
  o.content = std::move(content);
  o.calls = std::move(calls);
  o.stop = stop;
  o.usage.prompt_tokens = 11;
  o.usage.completion_tokens = 7;
  o.usage.cached_tokens = 3;
  return o;
}

TEST(ResponsesWriter, BodyHoldsTheItemsUsageAndSettings) {
  ResponseStore store(8, 1 << 20);
  auto shared = std::shared_ptr<ResponseStore>(&store, [](ResponseStore*) {});
  ResponsesRequest r = parse_ok(R"({"input": "q", "instructions": "I", "max_output_tokens": 9,
      "tools": [{"type": "function", "name": "f"}]})");
  ResponsesWriter w(r, "tiny", nullptr, shared);
  chat::ParsedToolCall call{"", "f", R"({"a":1})"};
  const Json b = w.body(outcome_of("hmm", "text", {call}, StopReason::kEndOfGeneration));
  EXPECT_EQ(b["id"], w.id());
  EXPECT_EQ(b["id"].get<std::string>().rfind("resp_", 0), 0u);
  EXPECT_EQ(b["object"], "response");
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["model"], "tiny");
  EXPECT_EQ(b["instructions"], "I");
  EXPECT_EQ(b["max_output_tokens"], 9);
  EXPECT_EQ(b["tools"][0]["name"], "f");
  ASSERT_EQ(b["output"].size(), 3u);
  EXPECT_EQ(b["output"][0]["type"], "reasoning");
  EXPECT_EQ(b["output"][0]["content"][0], (Json{{"type", "reasoning_text"}, {"text", "hmm"}}));
  EXPECT_EQ(b["output"][0]["summary"], Json::array());
  EXPECT_EQ(b["output"][1]["type"], "message");
  EXPECT_EQ(b["output"][1]["role"], "assistant");
  EXPECT_EQ(b["output"][1]["content"][0]["type"], "output_text");
  EXPECT_EQ(b["output"][1]["content"][0]["text"], "text");
  EXPECT_EQ(b["output"][2]["type"], "function_call");
  EXPECT_EQ(b["output"][2]["name"], "f");
  EXPECT_EQ(b["output"][2]["arguments"], R"({"a":1})");
  EXPECT_EQ(b["output"][2]["call_id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(b["usage"]["input_tokens"], 11);
  EXPECT_EQ(b["usage"]["output_tokens"], 7);
  EXPECT_EQ(b["usage"]["total_tokens"], 18);
  EXPECT_EQ(b["usage"]["input_tokens_details"]["cached_tokens"], 3);

  // The store keeps the conversation and this answer, instructions apart.
  std::optional<Json> kept = store.get(w.id());
  ASSERT_TRUE(kept.has_value());
  ASSERT_EQ(kept->size(), 2u);
  EXPECT_EQ((*kept)[0]["content"], "q");
  EXPECT_EQ((*kept)[1]["role"], "assistant");
  EXPECT_EQ((*kept)[1]["content"], "text");
  EXPECT_EQ((*kept)[1]["reasoning_content"], "hmm");
  EXPECT_EQ((*kept)[1]["tool_calls"][0]["id"], b["output"][2]["call_id"]);

  // Out of tokens: incomplete; store false: nothing kept.
  ResponsesRequest nostore = parse_ok(R"({"input": "q", "store": false})");
  ResponsesWriter w2(nostore, "tiny", nullptr, shared);
  const Json b2 = w2.body(outcome_of("", "", {}, StopReason::kLength));
  EXPECT_EQ(b2["status"], "incomplete");
  EXPECT_EQ(b2["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(b2["output"].size(), 1u);  // an empty message, so output_text is ""
  EXPECT_EQ(b2["output"][0]["content"][0]["text"], "");
  EXPECT_FALSE(store.get(w2.id()).has_value());
}

TEST(ResponsesWriter, StreamEventsAreTypedNumberedAndAddUp) {
  ResponsesRequest r = parse_ok(R"({"input": "q"})");
  ResponsesWriter w(r, "tiny", nullptr, nullptr);
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
  sse += w.stream_content("after");
  ChatOutcome o =
      outcome_of("think", "Helloafter", {{"", "f", R"({"a":1})"}}, StopReason::kEndOfGeneration);
  sse += w.stream_end(o);
  const std::vector<SseEvent> events = parse_named_sse(sse);
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].event, events[i].data["type"]);
    EXPECT_EQ(events[i].data["sequence_number"], static_cast<int64_t>(i));
    types.push_back(events[i].event);
  }
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(types, expected);
  EXPECT_EQ(events[0].data["response"]["status"], "in_progress");
  EXPECT_EQ(events[0].data["response"]["id"], w.id());
  EXPECT_EQ(events[5].data["text"], "think");
  EXPECT_EQ(events[11].data["text"], "Hello");
  EXPECT_EQ(events[11].data["output_index"], 1);
  EXPECT_EQ(events[11].data["item_id"], events[7].data["item"]["id"]);
  EXPECT_EQ(events[14].data["item"]["name"], "f");
  EXPECT_EQ(events[14].data["item"]["arguments"], "");
  EXPECT_EQ(events[15].data["delta"], R"({"a":)");
  EXPECT_EQ(events[16].data["delta"], "1}");
  EXPECT_EQ(events[16].data["item_id"], events[14].data["item"]["id"]);
  EXPECT_EQ(events[17].data["arguments"], R"({"a":1})");
  EXPECT_EQ(events[17].data["output_index"], 2);
  // The call keeps one call_id from added to done.
  EXPECT_EQ(events[14].data["item"]["call_id"], events[18].data["item"]["call_id"]);
  const Json& done = events.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 4u);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "think");
  EXPECT_EQ(done["output"][1]["content"][0]["text"], "Hello");
  EXPECT_EQ(done["output"][2]["type"], "function_call");
  EXPECT_EQ(done["output"][3]["content"][0]["text"], "after");
  EXPECT_EQ(done["usage"]["output_tokens"], 7);
}

TEST(ResponsesWriter, StreamFailureAndLengthEnd) {
  ResponsesRequest r = parse_ok(R"({"input": "q"})");
  ResponsesWriter w(r, "tiny", nullptr, nullptr);
  std::string sse = w.stream_start() + w.stream_content("x");
  sse += w.stream_error(unavailable_error("the server is stopping"));
  std::vector<SseEvent> events = parse_named_sse(sse);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "response.failed");
  EXPECT_EQ(events.back().data["response"]["status"], "failed");
  EXPECT_EQ(events.back().data["response"]["error"]["message"], "the server is stopping");
  // The open message was closed before the failure.
  EXPECT_EQ(events[events.size() - 2].event, "response.output_item.done");

  ResponsesWriter w2(r, "tiny", nullptr, nullptr);
  events = parse_named_sse(w2.stream_start() +
                           w2.stream_end(outcome_of("", "", {}, StopReason::kLength)));
  EXPECT_EQ(events.back().event, "response.incomplete");
  EXPECT_EQ(events.back().data["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

// --- the route against a scripted engine --------------------------------------------

class ResponsesServerTest : public testing::ScriptedServerTest {
 protected:
  // Answers submission k with `pieces` and an end of generation.
  void answer(size_t k, std::vector<std::string> pieces,
              ScriptedService::Submitted* out = nullptr) {
    ScriptedService::Submitted s;
    ASSERT_TRUE(service_.wait_submitted(k, &s));
    for (const std::string& p : pieces) s.callbacks.on_token(testing::token_event(0, 5, p));
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kEndOfGeneration;
    r.prompt_tokens = static_cast<int64_t>(s.request.prompt.size());
    r.completion_tokens = static_cast<int64_t>(pieces.size());
    s.callbacks.on_done(r);
    if (out != nullptr) *out = s;
  }

  std::string prompt_text(const ScriptedService::Submitted& s) {
    return tok_->detokenize(s.request.prompt, {.render_special = true});
  }
};

TEST_F(ResponsesServerTest, AnswersStoresAndContinues) {
  start_serving();
  testing::HttpAnswer a;
  std::thread client([&] {
    a = testing::post(port_, "/v1/responses",
                      R"({"model": "tiny", "input": "Say hi", "max_output_tokens": 8})");
  });
  ScriptedService::Submitted s;
  answer(0, {"Hi", " there"}, &s);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(s.request.params.max_tokens, 8);
  const Json first = testing::json_of(a);
  EXPECT_EQ(first["output"][0]["content"][0]["text"], "Hi there");
  EXPECT_EQ(first["usage"]["output_tokens"], 2);

  // The next turn sees the first one through previous_response_id.
  std::thread client2([&] {
    a = testing::post(
        port_, "/v1/responses",
        Json{{"input", "And again"}, {"previous_response_id", first["id"]}, {"stream", true}}
            .dump());
  });
  answer(1, {"Hi", " again"}, &s);
  client2.join();
  ASSERT_EQ(a.status, 200) << a.body;
  const std::string prompt = prompt_text(s);
  EXPECT_NE(prompt.find("Say hi"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Hi there"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("And again"), std::string::npos) << prompt;
  EXPECT_EQ(a.content_type.rfind("text/event-stream", 0), 0u);
  const std::vector<SseEvent> events = parse_named_sse(a.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().event, "response.created");
  EXPECT_EQ(events.back().event, "response.completed");
  std::string text;
  for (const SseEvent& e : events) {
    if (e.event == "response.output_text.delta") text += e.data["delta"].get<std::string>();
  }
  EXPECT_EQ(text, "Hi again");

  // A third turn continues from the streamed one.
  const std::string second_id = events.back().data["response"]["id"];
  std::thread client3([&] {
    a = testing::post(port_, "/v1/responses",
                      Json{{"input", "third"}, {"previous_response_id", second_id}}.dump());
  });
  answer(2, {"ok"}, &s);
  client3.join();
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(prompt_text(s).find("Hi again"), std::string::npos);
}

TEST_F(ResponsesServerTest, ErrorsAreOpenAisShape) {
  start_serving();
  testing::HttpAnswer a = testing::post(port_, "/v1/responses", R"({"input": 5})");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(testing::json_of(a)["error"]["param"], "input");
  a = testing::post(port_, "/v1/responses", R"({"input": "x", "previous_response_id": "resp_x"})");
  EXPECT_EQ(a.status, 404);
  EXPECT_EQ(testing::json_of(a)["error"]["code"], "previous_response_not_found");
  a = testing::post(port_, "/v1/responses", R"({"input": "x", "model": "other"})");
  EXPECT_EQ(a.status, 404);
  a = testing::post(port_, "/v1/responses", "{not json");
  EXPECT_EQ(a.status, 400);
  EXPECT_TRUE(testing::json_of(a)["error"].is_object());
  EXPECT_EQ(service_.n_submitted(), 0u);
}

TEST_F(ResponsesServerTest, FailureAfterAcceptanceHasItsStatus) {
  start_serving();
  testing::HttpAnswer a;
  std::thread client([&] { a = testing::post(port_, "/v1/responses", R"({"input": "x"})"); });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  RequestResult r;
  r.status = resource_exhausted("the cache cannot hold the request");
  s.callbacks.on_done(r);
  client.join();
  EXPECT_EQ(a.status, 503) << a.body;
  EXPECT_TRUE(testing::json_of(a)["error"].is_object());
}

}  // namespace responses_api_test
}  // namespace folio::server
