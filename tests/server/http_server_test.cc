// HttpServer on loopback over a scripted GenerationService: loading state,
// routes, error codes and shapes, API key, body limit, exact SSE framing of
// scripted events, and cancellation when a client walks away.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "scripted_server.h"
#include "test_client.h"

namespace folio::server {
namespace http_server_test {

using testing::HttpAnswer;
using testing::ScriptedService;

class HttpServerTest : public testing::ScriptedServerTest {
 protected:
};

// A stream whose one tool call is get_weather({"city":"Paris"}) in one
// fragment at index 0.
void expect_one_weather_call(const HttpAnswer& a) {
  const std::vector<Json> calls = testing::streamed_tool_calls(a);
  ASSERT_EQ(calls.size(), 1u) << a.body;
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
}

void expect_error(const HttpAnswer& a, int status, const std::string& param = "") {
  EXPECT_EQ(a.status, status) << a.body;
  Json j = testing::json_of(a);
  ASSERT_TRUE(j.is_object()) << a.body;
  ASSERT_TRUE(j.contains("error")) << a.body;
  const Json& e = j["error"];
  EXPECT_TRUE(e["message"].is_string());
  EXPECT_TRUE(e["type"].is_string());
  EXPECT_TRUE(e.contains("param"));
  EXPECT_TRUE(e.contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << a.body;
  }
  EXPECT_EQ(a.content_type, "application/json");
}

TEST_F(HttpServerTest, LoadingThenReady) {
  start();
  HttpAnswer h = testing::get(port_, "/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(testing::json_of(h), (Json{{"status", "loading model"}}));
  expect_error(testing::get(port_, "/v1/models"), 503);
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x"})"), 503);
  expect_error(testing::get(port_, "/metrics"), 503);
  EXPECT_FALSE(server_->ready());
  serve_model();
  EXPECT_TRUE(server_->ready());
  h = testing::get(port_, "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(testing::json_of(h), (Json{{"status", "ok"}}));
  HttpAnswer models = testing::get(port_, "/v1/models");
  EXPECT_EQ(models.status, 200);
  Json mj = testing::json_of(models);
  EXPECT_EQ(mj["object"], "list");
  ASSERT_EQ(mj["data"].size(), 1u);
  EXPECT_EQ(mj["data"][0]["id"], "tiny");
  EXPECT_EQ(mj["data"][0]["object"], "model");
  EXPECT_EQ(mj["data"][0]["max_model_len"], 256);
}

TEST_F(HttpServerTest, ClientFaults) {
  start();
  serve_model(/*n_ctx=*/16);
  expect_error(testing::get(port_, "/v1/nothing"), 404);
  expect_error(testing::post(port_, "/v1/nothing", "{}"), 404);
  expect_error(testing::post(port_, "/v1/completions", "{\"prompt\": "), 400);
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x", "top_p": 7})"), 400,
               "top_p");
  expect_error(testing::post(port_, "/v1/chat/completions", R"({"messages": 1})"), 400, "messages");
  HttpAnswer wrong_model =
      testing::post(port_, "/v1/completions", R"({"model": "gpt-9", "prompt": "x"})");
  expect_error(wrong_model, 404);
  EXPECT_EQ(testing::json_of(wrong_model)["error"]["code"], "model_not_found");
  // Token ids and logit_bias keys outside the vocabulary.
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": [1, 100000]})"), 400,
               "prompt");
  expect_error(
      testing::post(port_, "/v1/completions", R"({"prompt": "x", "logit_bias": {"99999": 1}})"),
      400);
  // Longer than the 16-token context.
  HttpAnswer long_prompt =
      testing::post(port_, "/v1/completions",
                    R"({"prompt": "a b c d e f g h i j k l m n o p q r s t u v w x y z"})");
  expect_error(long_prompt, 413);
  EXPECT_EQ(testing::json_of(long_prompt)["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(service_.n_submitted(), 0u);
}

TEST_F(HttpServerTest, EngineRefusalsMapToStatusCodes) {
  start();
  serve_model();
  service_.fail_submits_with(resource_exhausted("waiting queue full (1024 requests)"));
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x"})"), 503);
  service_.fail_submits_with(out_of_range("prompt 10 + max_tokens 300 > n_ctx 256"));
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x"})"), 413);
  service_.fail_submits_with(invalid_argument("n = 9 is above max_seqs = 8"));
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x"})"), 400);
}

TEST_F(HttpServerTest, ApiKey) {
  ServerOptions o;
  o.api_key = "sesame";
  start(o);
  serve_model();
  EXPECT_EQ(testing::get(port_, "/health").status, 200);  // open: load balancers probe it
  HttpAnswer missing = testing::get(port_, "/v1/models");
  expect_error(missing, 401);
  EXPECT_EQ(testing::json_of(missing)["error"]["code"], "invalid_api_key");
  expect_error(testing::get(port_, "/v1/models", "sesamE"), 401);
  expect_error(testing::get(port_, "/v1/models", "sesame2"), 401);
  expect_error(testing::post(port_, "/v1/completions", R"({"prompt": "x"})", "nope"), 401);
  expect_error(testing::get(port_, "/metrics"), 401);
  EXPECT_EQ(testing::get(port_, "/v1/models", "sesame").status, 200);
  EXPECT_EQ(testing::get(port_, "/metrics", "sesame").status, 200);
}

TEST_F(HttpServerTest, BodyLimit) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  serve_model();
  const std::string big = R"({"prompt": ")" + std::string(2000, 'a') + "\"}";
  expect_error(testing::post(port_, "/v1/completions", big), 413);
  // A chunked upload (no Content-Length) is cut off at the same limit.
  httplib::Client cli("127.0.0.1", port_);
  auto res = cli.Post(
      "/v1/completions",
      [&](size_t offset, httplib::DataSink& sink) {
        sink.write(big.data(), big.size());
        sink.done();
        return true;
      },
      "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(testing::get(port_, "/health").status, 200);
}

TEST_F(HttpServerTest, TokenizeAndDetokenize) {
  start();
  serve_model();
  HttpAnswer t = testing::post(port_, "/tokenize", R"({"content": "hello world"})");
  ASSERT_EQ(t.status, 200) << t.body;
  Json tokens = testing::json_of(t)["tokens"];
  EXPECT_EQ(tokens.get<std::vector<int32_t>>(),
            tok_->tokenize("hello world", {.add_special = false}));
  HttpAnswer d = testing::post(port_, "/detokenize", dump_json(Json{{"tokens", tokens}}));
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(testing::json_of(d)["content"], "hello world");
  expect_error(testing::post(port_, "/tokenize", R"({"content": 5})"), 400, "content");
  expect_error(testing::post(port_, "/detokenize", R"({"tokens": [1, -1]})"), 400, "tokens");
  expect_error(testing::post(port_, "/detokenize", R"({"tokens": [99999]})"), 400, "tokens");
}

// Drives one streamed chat request with scripted events and checks every
// byte of the SSE answer's structure.
TEST_F(HttpServerTest, ChatStreamShape) {
  start();
  serve_model();
  HttpAnswer a;
  std::thread client([&] {
    a = testing::post(port_, "/v1/chat/completions",
                      R"({"messages": [{"role": "user", "content": "hi"}], "stream": true,
                          "n": 2, "stream_options": {"include_usage": true}})");
  });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  EXPECT_EQ(s.request.n, 2);
  // The ChatML rendering of the conversation, tokenized.
  EXPECT_EQ(tok_->detokenize(s.request.prompt, {.render_special = true}),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(s.request.params.max_tokens, 256 - static_cast<int32_t>(s.request.prompt.size()));
  s.callbacks.on_token(testing::token_event(0, 5, "Hel"));
  s.callbacks.on_token(testing::token_event(1, 6, "Yo"));
  s.callbacks.on_token(testing::token_event(0, 7, ""));  // held back
  s.callbacks.on_token(testing::token_event(0, 8, "lo"));
  RequestResult r;
  r.choices.resize(2);
  r.choices[0].stop = StopReason::kStopString;
  r.choices[0].tail = "";
  r.choices[1].stop = StopReason::kLength;
  r.choices[1].tail = "!";
  r.prompt_tokens = static_cast<int64_t>(s.request.prompt.size());
  r.cached_prompt_tokens = 2;
  r.completion_tokens = 4;
  s.callbacks.on_done(r);
  client.join();
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "text/event-stream");
  EXPECT_TRUE(a.sse_well_formed) << a.body;
  EXPECT_TRUE(a.done);
  EXPECT_EQ(a.body.substr(a.body.size() - 14), "data: [DONE]\n\n");
  ASSERT_GE(a.events.size(), 5u);
  for (const Json& e : a.events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    EXPECT_EQ(e["model"], "tiny");
    EXPECT_EQ(e["id"], a.events[0]["id"]);
    ASSERT_TRUE(e.contains("usage"));
  }
  // First a role chunk for each choice.
  EXPECT_EQ(dump_json(a.events[0]["choices"]),
            R"([{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
            R"("finish_reason":null}])");
  EXPECT_EQ(a.events[1]["choices"][0]["index"], 1);
  EXPECT_EQ(a.events[1]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(testing::streamed_text(a, 0), "Hello");
  EXPECT_EQ(testing::streamed_text(a, 1), "Yo!");
  EXPECT_EQ(testing::streamed_finish(a, 0), "stop");
  EXPECT_EQ(testing::streamed_finish(a, 1), "length");
  // The usage chunk comes last, with no choices.
  const Json& last = a.events.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["prompt_tokens"], r.prompt_tokens);
  EXPECT_EQ(last["usage"]["completion_tokens"], 4);
  EXPECT_EQ(last["usage"]["total_tokens"], r.prompt_tokens + 4);
  EXPECT_EQ(last["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
  for (size_t i = 0; i + 1 < a.events.size(); ++i) EXPECT_TRUE(a.events[i]["usage"].is_null());
}

TEST_F(HttpServerTest, NonStreamingCollectsChoices) {
  start();
  serve_model();
  HttpAnswer a;
  std::thread client([&] {
    a = testing::post(port_, "/v1/completions",
                      R"({"prompt": ["one", "two"], "echo": true, "max_tokens": 3})");
  });
  ScriptedService::Submitted s0, s1;
  ASSERT_TRUE(service_.wait_submitted(0, &s0));
  ASSERT_TRUE(service_.wait_submitted(1, &s1));
  EXPECT_EQ(s0.request.params.max_tokens, 3);
  s1.callbacks.on_token(testing::token_event(0, 5, " B"));
  s0.callbacks.on_token(testing::token_event(0, 5, " A"));
  RequestResult r;
  r.choices.resize(1);
  r.choices[0].stop = StopReason::kEndOfGeneration;
  r.prompt_tokens = 1;
  r.completion_tokens = 1;
  s0.callbacks.on_done(r);
  r.choices[0].stop = StopReason::kLength;
  s1.callbacks.on_done(r);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  Json j = testing::json_of(a);
  EXPECT_EQ(j["object"], "text_completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["text"], "one A");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][1]["text"], "two B");
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
}

TEST_F(HttpServerTest, EchoWithZeroMaxTokensSubmitsNothing) {
  start();
  serve_model();
  HttpAnswer a = testing::post(port_, "/v1/completions",
                               R"({"prompt": "just this", "echo": true, "max_tokens": 0})");
  ASSERT_EQ(a.status, 200) << a.body;
  Json j = testing::json_of(a);
  EXPECT_EQ(j["choices"][0]["text"], "just this");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 0);
  EXPECT_EQ(j["usage"]["prompt_tokens"],
            static_cast<int64_t>(
                tok_->tokenize("just this", {.add_special = true, .parse_special = true}).size()));
  EXPECT_EQ(service_.n_submitted(), 0u);
}

TEST_F(HttpServerTest, EngineFailureMidStreamIsAnErrorEvent) {
  start();
  serve_model();
  HttpAnswer a;
  std::thread client(
      [&] { a = testing::post(port_, "/v1/completions", R"({"prompt": "x", "stream": true})"); });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  s.callbacks.on_token(testing::token_event(0, 5, "a"));
  RequestResult r;
  r.status = internal_error("forward failed");
  s.callbacks.on_done(r);
  client.join();
  ASSERT_EQ(a.status, 200);
  EXPECT_TRUE(a.done);
  ASSERT_GE(a.events.size(), 2u);
  EXPECT_EQ(a.events.back()["error"]["message"], "forward failed");
}

TEST_F(HttpServerTest, DisconnectCancels) {
  start();
  serve_model();
  for (bool stream : {true, false}) {
    const size_t k = service_.n_submitted();
    std::thread client([&] {
      if (stream) {
        testing::post(port_, "/v1/completions", R"({"prompt": "x", "stream": true})", "",
                      /*drop_after=*/1);
      } else {
        // A client that gives up: read timeout well before the answer.
        httplib::Client cli("127.0.0.1", port_);
        cli.set_read_timeout(0, 200000);
        auto res = cli.Post("/v1/completions", R"({"prompt": "x"})", "application/json");
        EXPECT_FALSE(res);
      }
    });
    ScriptedService::Submitted s;
    ASSERT_TRUE(service_.wait_submitted(k, &s));
    s.callbacks.on_token(testing::token_event(0, 5, "a"));
    client.join();
    EXPECT_TRUE(service_.wait_cancelled(s.id)) << (stream ? "stream" : "non-stream");
    RequestResult r;  // the engine reports the end of a cancelled request
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kCancelled;
    s.callbacks.on_done(r);
  }
  EXPECT_EQ(testing::get(port_, "/health").status, 200);
}

TEST_F(HttpServerTest, StopEndsOpenStreams) {
  start();
  serve_model();
  HttpAnswer a;
  std::thread client(
      [&] { a = testing::post(port_, "/v1/completions", R"({"prompt": "x", "stream": true})"); });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  server_->stop();
  client.join();
  EXPECT_FALSE(a.done);
  EXPECT_TRUE(service_.wait_cancelled(s.id));
}

}  // namespace
}  // namespace folio::server

namespace folio::server {
namespace http_server_test {

// Tool calls in the format of the model's template (Qwen 2.5: hermes),
// streamed and not, with the scripted engine writing the model's text.
class ToolCallServerTest : public HttpServerTest {
 protected:
  void SetUp() override {
    HttpServerTest::SetUp();
    std::ifstream f(std::string(FOLIO_REFDATA_DIR) + "/templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    std::stringstream ss;
    ss << f.rdbuf();
    auto t = chat::ChatTemplate::parse(ss.str(), "", "<|im_end|>");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tmpl_ = std::make_unique<chat::ChatTemplate>(std::move(t).value());
  }

  // Writes the model's answer in pieces that split the markers.
  void answer(ScriptedService::Submitted& s) {
    for (const char* piece : {"Checking.", "<tool_", "call>\n{\"name\": \"get_weather\", ",
                              "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>",
                              "{\"name\": \"get_time\", \"arguments\": {}}</tool_call>"}) {
      s.callbacks.on_token(testing::token_event(0, 5, piece));
    }
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kEndOfGeneration;
    s.callbacks.on_done(r);
  }

  static constexpr const char* kRequest = R"({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}])";
};

TEST_F(ToolCallServerTest, NonStreaming) {
  start();
  serve_model(/*n_ctx=*/2048);
  HttpAnswer a;
  std::thread client(
      [&] { a = testing::post(port_, "/v1/chat/completions", std::string(kRequest) + "}"); });
  ScriptedService::Submitted s;
  if (!service_.wait_submitted(0, &s)) {
    client.join();
    FAIL() << "not submitted: " << a.status << " " << a.body;
  }
  // The template told the model about the tools.
  EXPECT_NE(tok_->detokenize(s.request.prompt, {.render_special = true}).find("get_weather"),
            std::string::npos);
  answer(s);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  const Json c = testing::json_of(a)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["content"], "Checking.\n");
  ASSERT_EQ(c["message"]["tool_calls"].size(), 2u);
  const Json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_FALSE(call.contains("index"));
  EXPECT_EQ(c["message"]["tool_calls"][1]["function"]["name"], "get_time");
}

TEST_F(ToolCallServerTest, StreamingAndOneCallAtMost) {
  start();
  serve_model(/*n_ctx=*/2048);
  HttpAnswer a;
  std::thread client([&] {
    a = testing::post(port_, "/v1/chat/completions",
                      std::string(kRequest) + R"(, "stream": true, "parallel_tool_calls": false})");
  });
  ScriptedService::Submitted s;
  if (!service_.wait_submitted(0, &s)) {
    client.join();
    FAIL() << "not submitted: " << a.status << " " << a.body;
  }
  answer(s);
  client.join();
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(a.done);
  EXPECT_EQ(testing::streamed_text(a), "Checking.\n");
  EXPECT_EQ(testing::streamed_finish(a), "tool_calls");
  expect_one_weather_call(a);
  // OpenAI's shape: the call's index, id, type and name first, then
  // arguments fragments alone.
  const std::vector<Json> deltas = testing::streamed_tool_call_deltas(a);
  ASSERT_GE(deltas.size(), 2u) << a.body;
  EXPECT_EQ(deltas[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(deltas[0]["type"], "function");
  EXPECT_EQ(deltas[0]["function"]["name"], "get_weather");
  for (size_t i = 1; i < deltas.size(); ++i) {
    EXPECT_EQ(deltas[i]["index"], 0);
    EXPECT_FALSE(deltas[i].contains("id"));
    EXPECT_FALSE(deltas[i]["function"].contains("name"));
  }
}

TEST_F(ToolCallServerTest, ACallCutByMaxTokensEndsWithLength) {
  start();
  serve_model(/*n_ctx=*/2048);
  for (const bool stream : {false, true}) {
    HttpAnswer a;
    std::thread client([&] {
      a = testing::post(port_, "/v1/chat/completions",
                        std::string(kRequest) + (stream ? R"(, "stream": true})" : "}"));
    });
    ScriptedService::Submitted s;
    if (!service_.wait_submitted(stream ? 1 : 0, &s)) {
      client.join();
      FAIL() << "not submitted: " << a.status << " " << a.body;
    }
    for (const char* piece : {"<tool_call>{\"name\": \"get_weather\", ", "\"arguments\": {\"ci"}) {
      s.callbacks.on_token(testing::token_event(0, 5, piece));
    }
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kLength;
    s.callbacks.on_done(r);
    client.join();
    ASSERT_EQ(a.status, 200) << a.body;
    // The call went out as it was read; the reply says it was cut.
    if (stream) {
      EXPECT_EQ(testing::streamed_finish(a), "length");
      const std::vector<Json> calls = testing::streamed_tool_calls(a);
      ASSERT_EQ(calls.size(), 1u) << a.body;
      EXPECT_EQ(calls[0]["function"]["arguments"], R"({"ci)");
    } else {
      const Json c = testing::json_of(a)["choices"][0];
      EXPECT_EQ(c["finish_reason"], "length");
      ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
      EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"], R"({"ci)");
    }
  }
}

TEST_F(ToolCallServerTest, ToolChoiceIsValidated) {
  start();
  serve_model(/*n_ctx=*/2048);
  const std::string base(kRequest);
  auto a = testing::post(port_, "/v1/chat/completions",
                         base + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})");
  expect_error(a, 400, "tool_choice");
  a = testing::post(port_, "/v1/chat/completions",
                    R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"})");
  expect_error(a, 400, "tool_choice");
  a = testing::post(port_, "/v1/chat/completions", base + R"(, "tool_choice": "sometimes"})");
  expect_error(a, 400, "tool_choice");
  EXPECT_EQ(service_.n_submitted(), 0u);
}

// A user message: request bodies are kUser + their other fields + "}".
constexpr const char* kUser = R"({"messages": [{"role": "user", "content": "2+2?"}])";

// A conversation whose assistant turn reasoned before calling a tool.
constexpr const char* kReasonedToolCall = R"({"messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "reasoning_content": "Need the tool.",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather",
       "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description":
      "Weather of a city.", "parameters": {"type": "object", "properties": {"city": {"type":
      "string"}}}}}]})";

// Reasoning split out of replies in the template's family, streamed and
// not; the server's reasoning controls and the request's reasoning fields.
class ReasoningServerTest : public HttpServerTest {
 protected:
  void use_template(const char* name) {
    std::ifstream f(std::string(FOLIO_REFDATA_DIR) + "/templates/" + name + ".jinja");
    std::stringstream ss;
    ss << f.rdbuf();
    auto t = chat::ChatTemplate::parse(ss.str(), "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().to_string();
    tmpl_ = std::make_unique<chat::ChatTemplate>(std::move(t).value());
  }

  void serve(chat::ReasoningFormat format = chat::ReasoningFormat::kAuto, int budget = -1) {
    ServedModel m;
    m.id = "tiny";
    m.n_ctx = 4096;
    m.n_vocab = tok_->vocab().size();
    m.tokenizer = tok_.get();
    m.chat_template = tmpl_.get();
    m.reasoning_format = format;
    m.reasoning_budget = budget;
    m.service = &service_;
    server_->set_model(m);
  }

  // Posts `body`, answers with `pieces` and returns the answer and the
  // submitted prompt's text.
  HttpAnswer run(const std::string& body, const std::vector<std::string>& pieces,
                 std::string* prompt = nullptr, bool* render_special = nullptr,
                 std::shared_ptr<const ReasoningBudgetSpec>* budget = nullptr) {
    HttpAnswer a;
    std::thread client([&] { a = testing::post(port_, "/v1/chat/completions", body); });
    ScriptedService::Submitted s;
    if (!service_.wait_submitted(submitted_++, &s)) {
      client.join();
      ADD_FAILURE() << "not submitted: " << a.status << " " << a.body;
      return a;
    }
    if (prompt) *prompt = tok_->detokenize(s.request.prompt, {.render_special = true});
    if (render_special) *render_special = s.request.render_special;
    if (budget) *budget = s.request.reasoning_budget;
    for (const std::string& p : pieces) s.callbacks.on_token(testing::token_event(0, 5, p));
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kEndOfGeneration;
    s.callbacks.on_done(r);
    client.join();
    return a;
  }

  // The reasoning budget the engine is asked for by kUser + `fields` (the
  // reply: "x"); `prompt`, when given, gets the submitted prompt's text.
  std::shared_ptr<const ReasoningBudgetSpec> budget_for(const std::string& fields,
                                                        std::string* prompt = nullptr) {
    std::shared_ptr<const ReasoningBudgetSpec> b;
    const HttpAnswer a = run(std::string(kUser) + fields + "}", {"x"}, prompt, nullptr, &b);
    EXPECT_EQ(a.status, 200) << fields << ": " << a.body;
    return b;
  }

  static std::string streamed_reasoning(const HttpAnswer& a) {
    std::string s;
    for (const Json& e : a.events) {
      if (!e.contains("choices")) continue;
      for (const Json& c : e["choices"]) {
        if (c.contains("delta") && c["delta"].contains("reasoning_content"))
          s += c["delta"]["reasoning_content"].get<std::string>();
      }
    }
    return s;
  }

  int submitted_ = 0;
};

TEST_F(ReasoningServerTest, ThinkBlockOpenedByThePrompt) {
  use_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B");
  start();
  serve();
  const std::vector<std::string> pieces = {"Two plus", " two is four.\n</th", "ink>\n\nIt is 4."};
  std::string prompt;
  bool special = false;
  HttpAnswer a = run(std::string(kUser) + "}", pieces, &prompt, &special);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(prompt.ends_with("<think>\n")) << prompt;
  EXPECT_TRUE(special);
  const Json msg = testing::json_of(a)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Two plus two is four.");
  EXPECT_EQ(msg["content"], "It is 4.");

  a = run(std::string(kUser) + R"(, "stream": true})", pieces);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(a.done);
  EXPECT_EQ(streamed_reasoning(a), "Two plus two is four.");
  EXPECT_EQ(testing::streamed_text(a), "It is 4.");
  EXPECT_EQ(testing::streamed_finish(a), "stop");
}

TEST_F(ReasoningServerTest, ReasoningFormatNoneKeepsTheText) {
  use_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B");
  start();
  serve(chat::ReasoningFormat::kNone);
  bool special = true;
  HttpAnswer a = run(std::string(kUser) + "}", {"x</think>y"}, nullptr, &special);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_FALSE(special);
  const Json msg = testing::json_of(a)["choices"][0]["message"];
  EXPECT_FALSE(msg.contains("reasoning_content")) << msg;
  EXPECT_EQ(msg["content"], "x</think>y");
}

TEST_F(ReasoningServerTest, BudgetZeroTurnsThinkingOffUnlessTheRequestSaysOtherwise) {
  use_template("Qwen-Qwen3-0.6B");
  start();
  serve(chat::ReasoningFormat::kAuto, /*budget=*/0);
  std::string prompt;
  HttpAnswer a = run(std::string(kUser) + "}", {"4"}, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(prompt.ends_with("<think>\n\n</think>\n\n")) << prompt;
  EXPECT_EQ(testing::json_of(a)["choices"][0]["message"]["content"], "4");
  a = run(std::string(kUser) + R"(, "chat_template_kwargs": {"enable_thinking": true}})",
          {"<think>a</think>b"}, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(prompt.ends_with("<|im_start|>assistant\n")) << prompt;
  EXPECT_EQ(testing::json_of(a)["choices"][0]["message"]["reasoning_content"], "a");
}

// What a reasoning budget asks of the engine (the engine's tests show it
// enforced): the format's markers, the close marker as the model's tokens,
// whether the prompt opened the block; the request's budget over the
// server's; none for -1 and for formats without reasoning; for 0 the
// template is also asked to turn thinking off.
TEST_F(ReasoningServerTest, ReasoningBudgetReachesTheEngine) {
  use_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B");
  start();
  serve();
  std::shared_ptr<const ReasoningBudgetSpec> b = budget_for(R"(, "reasoning_budget_tokens": 7)");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->tokens, 7);
  EXPECT_EQ(b->open, "<think>");
  EXPECT_EQ(b->close, "</think>");
  EXPECT_TRUE(b->starts_inside);
  EXPECT_EQ(b->forced, tok_->tokenize("</think>", {.add_special = false, .parse_special = true}));
  EXPECT_EQ(tok_->detokenize(b->forced, {.render_special = true}), "</think>");
  b = budget_for(R"(, "thinking_budget_tokens": 3)");
  ASSERT_NE(b, nullptr);  // llama-server's alias
  EXPECT_EQ(b->tokens, 3);
  for (const char* unlimited : {"", R"(, "reasoning_budget_tokens": -1)"}) {
    EXPECT_EQ(budget_for(unlimited), nullptr) << unlimited;
  }

  serve(chat::ReasoningFormat::kAuto, /*budget=*/12);
  b = budget_for("");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->tokens, 12);
  EXPECT_EQ(budget_for(R"(, "reasoning_budget_tokens": -1)"), nullptr);
  std::string prompt;
  b = budget_for(R"(, "reasoning_budget_tokens": 0)", &prompt);
  // 0 asks the template for enable_thinking=false; this template ignores it
  // and opens the block, which the engine then closes at once.
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->tokens, 0);
  EXPECT_TRUE(b->starts_inside);
  EXPECT_TRUE(prompt.ends_with("<think>\n")) << prompt;
}

TEST_F(ReasoningServerTest, ReasoningBudgetForHarmonyAndForFormatsWithoutReasoning) {
  use_template("openai-gpt-oss-120b");
  start();
  serve(chat::ReasoningFormat::kAuto, /*budget=*/5);
  std::shared_ptr<const ReasoningBudgetSpec> b = budget_for("");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->open, "<|channel|>analysis<|message|>");
  EXPECT_EQ(b->close, "<|end|>");
  EXPECT_FALSE(b->starts_inside);  // the model opens the analysis channel
  EXPECT_EQ(b->forced, tok_->tokenize("<|end|>", {.add_special = false, .parse_special = true}));

  use_template("microsoft-Phi-3.5-mini-instruct");
  serve(chat::ReasoningFormat::kAuto, /*budget=*/5);
  EXPECT_EQ(budget_for(""), nullptr);
}

TEST_F(ReasoningServerTest, HarmonyChannelsEffortAndReasoningSentBack) {
  use_template("openai-gpt-oss-120b");
  start();
  serve();
  const std::vector<std::string> pieces = {
      "<|channel|>analysis<|message|>Simple sum.<|e", "nd|><|start|>assistant<|channel|>final",
      "<|message|>4"};
  std::string prompt;
  HttpAnswer a = run(std::string(kUser) + R"(, "reasoning_effort": "high"})", pieces, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(prompt.find("Reasoning: high"), std::string::npos) << prompt;
  const Json msg = testing::json_of(a)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Simple sum.");
  EXPECT_EQ(msg["content"], "4");

  a = run(std::string(kUser) + R"(, "stream": true})", pieces);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(streamed_reasoning(a), "Simple sum.");
  EXPECT_EQ(testing::streamed_text(a), "4");

  // Reasoning before a tool call, sent back as reasoning_content, reaches
  // gpt-oss's template as the analysis channel it reads from `thinking`.
  a = run(kReasonedToolCall, {"<|channel|>final<|message|>Sunny."}, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(prompt.find("<|channel|>analysis<|message|>Need the tool.<|end|>"), std::string::npos)
      << prompt;
  EXPECT_EQ(testing::json_of(a)["choices"][0]["message"]["content"], "Sunny.");
}

TEST_F(ReasoningServerTest, HarmonyToolCallsStreamed) {
  use_template("openai-gpt-oss-120b");
  start();
  serve();
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather?"}],
      "stream": true, "tools": [{"type": "function", "function": {"name": "get_weather",
      "description": "Weather of a city.", "parameters": {"type": "object", "properties":
      {"city": {"type": "string"}}}}}]})";
  HttpAnswer a = run(body, {"<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant",
                            "<|channel|>commentary to=functions.get_weather <|constrain|>json",
                            "<|message|>{\"city\": ", "\"Paris\"}<|call|>"});
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(streamed_reasoning(a), "Use the tool.");
  EXPECT_EQ(testing::streamed_text(a), "");
  EXPECT_EQ(testing::streamed_finish(a), "tool_calls");
  expect_one_weather_call(a);
}

TEST_F(ReasoningServerTest, Gemma4ThoughtChannelAndReasoningSentBack) {
  use_template("google-gemma-4-31B-it");
  start();
  serve();
  // Thinking on: the reply opens the thought channel itself.
  const std::vector<std::string> pieces = {"<|channel>thou", "ght\nTwo and two.<chan",
                                           "nel|>It is 4."};
  const std::string on = std::string(kUser) + R"(, "chat_template_kwargs": {"enable_thinking": true})";
  std::string prompt;
  bool special = false;
  HttpAnswer a = run(on + "}", pieces, &prompt, &special);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(prompt.find("<|think|>"), std::string::npos) << prompt;
  EXPECT_TRUE(prompt.ends_with("<|turn>model\n")) << prompt;
  EXPECT_TRUE(special);
  Json msg = testing::json_of(a)["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Two and two.");
  EXPECT_EQ(msg["content"], "It is 4.");
  a = run(on + R"(, "stream": true})", pieces);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(streamed_reasoning(a), "Two and two.");
  EXPECT_EQ(testing::streamed_text(a), "It is 4.");
  // Thinking off: the prompt closed an empty channel; the reply is content.
  a = run(std::string(kUser) + "}", {"4"}, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(prompt.ends_with("<|channel>thought\n<channel|>")) << prompt;
  msg = testing::json_of(a)["choices"][0]["message"];
  EXPECT_EQ(msg["content"], "4");
  EXPECT_FALSE(msg.contains("reasoning_content")) << msg;
  // Reasoning before a call of the current turn, sent back, is rendered as
  // the template's thought channel.
  a = run(kReasonedToolCall, {"Sunny."}, &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(prompt.find("<|channel>thought\nNeed the tool.\n<channel|><|tool_call>call:get_weather"),
            std::string::npos)
      << prompt;
  EXPECT_EQ(testing::json_of(a)["choices"][0]["message"]["content"], "Sunny.");
}

// Phi-4-mini: the tools reach its template in the system message, earlier
// calls in the assistant's content, and its reply's calls are read back.
TEST_F(ReasoningServerTest, Phi4MiniToolsInTheSystemMessageAndCallsReadBack) {
  use_template("microsoft-Phi-4-mini-instruct");
  start();
  serve();
  const std::string body = R"({"messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "rain"},
      {"role": "user", "content": "And Paris?"}], "stream": true,
      "tools": [{"type": "function", "function": {"name": "get_weather", "description":
      "Weather of a city.", "parameters": {"type": "object", "properties": {"city": {"type":
      "string"}}}}}]})";
  std::string prompt;
  HttpAnswer a = run(body, {"<|tool_call|>[{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": ",
                            "\"Paris\"}}]<|/tool", "_call|>"},
                     &prompt);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(prompt.starts_with(
      R"(<|system|>You are a helpful assistant with some tools.<|tool|>[{"name": "get_weather", )"
      R"("description": "Weather of a city.", "parameters": )"))
      << prompt;
  EXPECT_NE(prompt.find(R"(<|assistant|><|tool_call|>[{"name": "get_weather", "arguments": )"
                        R"({"city": "Oslo"}}]<|/tool_call|><|end|><|tool|>rain<|end|>)"),
            std::string::npos)
      << prompt;
  EXPECT_EQ(testing::streamed_finish(a), "tool_calls");
  expect_one_weather_call(a);
}

TEST_F(ReasoningServerTest, BadReasoningFieldsAreRefused) {
  use_template("openai-gpt-oss-120b");
  start();
  serve();
  HttpAnswer a = testing::post(port_, "/v1/chat/completions",
                               std::string(kUser) + R"(, "reasoning_effort": "extreme"})");
  expect_error(a, 400, "reasoning_effort");
  a = testing::post(port_, "/v1/chat/completions",
                    std::string(kUser) + R"(, "reasoning_effort": 3})");
  expect_error(a, 400, "reasoning_effort");
  a = testing::post(port_, "/v1/chat/completions",
                    R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant",
                        "content": "b", "reasoning_content": {"x": 1}}]})");
  expect_error(a, 400, "messages");
  for (const char* bad : {"-2", "\"x\"", "1.5", "4294967296"}) {
    a = testing::post(port_, "/v1/chat/completions",
                      std::string(kUser) + R"(, "reasoning_budget_tokens": )" + bad + "}");
    expect_error(a, 400, "reasoning_budget_tokens");
  }
  a = testing::post(port_, "/v1/chat/completions",
                    std::string(kUser) + R"(, "thinking_budget_tokens": -5})");
  expect_error(a, 400, "thinking_budget_tokens");
  EXPECT_EQ(service_.n_submitted(), 0u);
}

}  // namespace
}  // namespace folio::server
