// The whole serving stack on loopback (tiny llama, Scheduler, HttpServer):
// greedy answers, streamed or not, equal a solo Generator run; n > 1, prompt
// lists, stop strings, logprobs, usage, seeds, error codes, /metrics; a
// client that disconnects mid-stream gets its blocks freed.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <thread>

#include "model_fixture.h"

namespace folio::server {
namespace server_model_test {

using testing::HttpAnswer;
using testing::ServingStack;

const std::vector<std::string> kPrompts = {"Once upon a time", "The capital of France is",
                                           "def fibonacci(n):"};

std::string completion_body(const std::string& prompt, int max_tokens, bool stream,
                            const std::string& extra = "") {
  Json j = {{"model", ServingStack::kModelId},
            {"prompt", prompt},
            {"max_tokens", max_tokens},
            {"temperature", 0},
            {"stream", stream}};
  std::string s = dump_json(j);
  if (!extra.empty()) s = s.substr(0, s.size() - 1) + ", " + extra + "}";
  return s;
}

TEST(ServerModel, GreedyCompletionsMatchSoloRuns) {
  ServingStack stack;
  for (const std::string& prompt : kPrompts) {
    const auto solo =
        stack.solo(ServingStack::completion_tokens(prompt), testing::greedy(), /*max_tokens=*/24);
    HttpAnswer plain =
        testing::post(stack.port(), "/v1/completions", completion_body(prompt, 24, false));
    ASSERT_EQ(plain.status, 200) << plain.body;
    Json j = testing::json_of(plain);
    EXPECT_EQ(j["choices"][0]["text"], solo.text) << prompt;
    EXPECT_EQ(j["choices"][0]["finish_reason"], solo.finish) << prompt;
    EXPECT_EQ(j["usage"]["completion_tokens"], solo.n_generated);
    EXPECT_EQ(j["usage"]["prompt_tokens"], ServingStack::completion_tokens(prompt).size());

    HttpAnswer streamed =
        testing::post(stack.port(), "/v1/completions", completion_body(prompt, 24, true));
    ASSERT_EQ(streamed.status, 200);
    EXPECT_TRUE(streamed.sse_well_formed);
    EXPECT_TRUE(streamed.done);
    EXPECT_EQ(testing::streamed_text(streamed), solo.text) << prompt;
    EXPECT_EQ(testing::streamed_finish(streamed), solo.finish) << prompt;
    for (const Json& e : streamed.events) {
      EXPECT_EQ(e["object"], "text_completion");
      EXPECT_FALSE(e.contains("usage"));  // no include_usage
    }
  }
  EXPECT_EQ(stack.used_blocks_when_idle(), 0);
}

TEST(ServerModel, GreedyChatMatchesSoloRun) {
  ServingStack stack;
  const Json messages = Json::array({Json{{"role", "system"}, {"content", "You are terse."}},
                                     Json{{"role", "user"}, {"content", "Name a color."}}});
  const auto solo =
      stack.solo(ServingStack::chat_tokens(messages), testing::greedy(), /*max_tokens=*/20);
  Json req = {{"model", "tiny"}, {"messages", messages}, {"max_tokens", 20}, {"temperature", 0}};
  HttpAnswer plain = testing::post(stack.port(), "/v1/chat/completions", dump_json(req));
  ASSERT_EQ(plain.status, 200) << plain.body;
  Json j = testing::json_of(plain);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], solo.text);
  EXPECT_EQ(j["choices"][0]["finish_reason"], solo.finish);

  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  HttpAnswer streamed = testing::post(stack.port(), "/v1/chat/completions", dump_json(req));
  ASSERT_EQ(streamed.status, 200);
  EXPECT_TRUE(streamed.done);
  EXPECT_EQ(testing::streamed_text(streamed), solo.text);
  EXPECT_EQ(testing::streamed_finish(streamed), solo.finish);
  ASSERT_GE(streamed.events.size(), 2u);
  EXPECT_EQ(streamed.events[0]["choices"][0]["delta"]["role"], "assistant");
  const Json& usage = streamed.events.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], solo.n_generated);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], ServingStack::chat_tokens(messages).size());
}

TEST(ServerModel, ChoicesAndPromptListsShareNothingButOutputs) {
  ServingStack stack;
  Json req = {
      {"prompt", {kPrompts[0], kPrompts[1]}}, {"n", 2}, {"max_tokens", 16}, {"temperature", 0}};
  HttpAnswer a = testing::post(stack.port(), "/v1/completions", dump_json(req));
  ASSERT_EQ(a.status, 200) << a.body;
  Json j = testing::json_of(a);
  ASSERT_EQ(j["choices"].size(), 4u);
  for (int p = 0; p < 2; ++p) {
    const auto solo =
        stack.solo(ServingStack::completion_tokens(kPrompts[p]), testing::greedy(), 16);
    for (int c = 0; c < 2; ++c) {
      EXPECT_EQ(j["choices"][p * 2 + c]["index"], p * 2 + c);
      EXPECT_EQ(j["choices"][p * 2 + c]["text"], solo.text) << p << "/" << c;
    }
  }
  req["stream"] = true;
  HttpAnswer s = testing::post(stack.port(), "/v1/completions", dump_json(req));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(testing::streamed_text(s, i), j["choices"][i]["text"]) << i;
  }
  EXPECT_EQ(stack.used_blocks_when_idle(), 0);
}

TEST(ServerModel, StopStringCutsTheOutput) {
  ServingStack stack;
  const std::string prompt = kPrompts[0];
  const auto full = stack.solo(ServingStack::completion_tokens(prompt), testing::greedy(), 40);
  // A short ASCII piece from the middle of the output as the stop string.
  std::string stop;
  for (size_t i = 8; i + 2 <= full.text.size() && stop.empty(); ++i) {
    if (std::isalnum(static_cast<unsigned char>(full.text[i])) &&
        std::isalnum(static_cast<unsigned char>(full.text[i + 1]))) {
      stop = full.text.substr(i, 2);
    }
  }
  ASSERT_FALSE(stop.empty()) << full.text;
  const std::string expected = full.text.substr(0, full.text.find(stop));
  for (bool stream : {false, true}) {
    HttpAnswer a = testing::post(
        stack.port(), "/v1/completions",
        completion_body(prompt, 40, stream, "\"stop\": [\"@@@\", " + dump_json(stop) + "]"));
    ASSERT_EQ(a.status, 200) << a.body;
    const std::string text = stream ? testing::streamed_text(a)
                                    : testing::json_of(a)["choices"][0]["text"].get<std::string>();
    EXPECT_EQ(text, expected) << "stop " << stop;
    const std::string finish =
        stream ? testing::streamed_finish(a)
               : testing::json_of(a)["choices"][0]["finish_reason"].get<std::string>();
    EXPECT_EQ(finish, "stop");
  }
}

TEST(ServerModel, LogprobsAndUsage) {
  ServingStack stack;
  HttpAnswer a = testing::post(stack.port(), "/v1/completions",
                               completion_body(kPrompts[1], 8, false, "\"logprobs\": 3"));
  ASSERT_EQ(a.status, 200) << a.body;
  Json j = testing::json_of(a);
  const Json& lp = j["choices"][0]["logprobs"];
  const int64_t n = j["usage"]["completion_tokens"];
  ASSERT_GT(n, 0);
  ASSERT_EQ(lp["tokens"].size(), static_cast<size_t>(n));
  ASSERT_EQ(lp["token_logprobs"].size(), static_cast<size_t>(n));
  ASSERT_EQ(lp["text_offset"].size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_LE(lp["top_logprobs"][i].size(), 3u);
    EXPECT_GE(lp["top_logprobs"][i].size(), 1u);
    // Greedy: the chosen token is the most likely one.
    double best = -1e30;
    for (const auto& [tok, v] : lp["top_logprobs"][i].items())
      best = std::max(best, v.get<double>());
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), best) << dump_json(lp);
  }

  Json chat = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"max_tokens", 6},
               {"temperature", 0},
               {"logprobs", true},
               {"top_logprobs", 2},
               {"stream", true}};
  HttpAnswer s = testing::post(stack.port(), "/v1/chat/completions", dump_json(chat));
  ASSERT_EQ(s.status, 200);
  size_t entries = 0;
  for (const Json& e : s.events) {
    for (const Json& c : e["choices"]) {
      if (!c["logprobs"].is_object()) continue;
      for (const Json& t : c["logprobs"]["content"]) {
        ++entries;
        EXPECT_TRUE(t["token"].is_string());
        EXPECT_TRUE(t["bytes"].is_array());
        EXPECT_EQ(t["top_logprobs"].size(), 2u);
        EXPECT_DOUBLE_EQ(t["logprob"].get<double>(), t["top_logprobs"][0]["logprob"].get<double>());
      }
    }
  }
  EXPECT_EQ(entries, 6u);
}

TEST(ServerModel, SeededSamplingRepeats) {
  ServingStack stack;
  const std::string body = dump_json(
      Json{{"prompt", kPrompts[0]}, {"max_tokens", 16}, {"temperature", 0.9}, {"seed", 1234}});
  HttpAnswer a = testing::post(stack.port(), "/v1/completions", body);
  HttpAnswer b = testing::post(stack.port(), "/v1/completions", body);
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(testing::json_of(a)["choices"][0]["text"], testing::json_of(b)["choices"][0]["text"]);
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = 1234;
  EXPECT_EQ(testing::json_of(a)["choices"][0]["text"],
            stack.solo(ServingStack::completion_tokens(kPrompts[0]), p, 16).text);
}

TEST(ServerModel, ErrorCodes) {
  testing::StackOptions o;
  o.n_ctx = 64;
  o.api_key = "k";
  ServingStack stack(o);
  std::string longer;
  for (int i = 0; i < 80; ++i) longer += "word ";
  HttpAnswer too_long =
      testing::post(stack.port(), "/v1/completions", completion_body(longer, 4, false), "k");
  EXPECT_EQ(too_long.status, 413) << too_long.body;
  EXPECT_EQ(testing::post(stack.port(), "/v1/completions", completion_body("x", 4, false)).status,
            401);
  EXPECT_EQ(testing::post(stack.port(), "/v1/completions", "not json", "k").status, 400);
  // n above max_seqs (4): the extra choices wait for a slot.
  HttpAnswer many = testing::post(stack.port(), "/v1/completions",
                                  completion_body("x", 4, false, "\"n\": 5"), "k");
  ASSERT_EQ(many.status, 200) << many.body;
  ASSERT_EQ(testing::json_of(many)["choices"].size(), 5u);
  EXPECT_EQ(testing::json_of(many)["choices"][4]["text"],
            testing::json_of(many)["choices"][0]["text"]);
  // max_tokens beyond the context is capped, not refused.
  HttpAnswer capped =
      testing::post(stack.port(), "/v1/completions",
                    completion_body("x", 100000, false, "\"ignore_eos\": true"), "k");
  ASSERT_EQ(capped.status, 200) << capped.body;
  Json j = testing::json_of(capped);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(
      j["usage"]["prompt_tokens"].get<int64_t>() + j["usage"]["completion_tokens"].get<int64_t>(),
      64);
  EXPECT_EQ(testing::get(stack.port(), "/health").status, 200);
}

TEST(ServerModel, Metrics) {
  ServingStack stack;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(testing::post(stack.port(), "/v1/completions", completion_body(kPrompts[0], 5, false))
                  .status,
              200);
  }
  stack.scheduler().wait_idle();
  // The server notices a client's close asynchronously: wait (bounded) until
  // the earlier connections are gone so the gauge below counts only this one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stack.http().transport_stats().open_connections > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(stack.http().transport_stats().open_connections, 0);
  HttpAnswer m = testing::get(stack.port(), "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("folio:requests_total{model_name=\"tiny\"} 2\n"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("folio:num_requests_running{model_name=\"tiny\"} 0\n"), std::string::npos);
  std::smatch hit;
  ASSERT_TRUE(std::regex_search(m.body, hit,
                                std::regex("folio:generation_tokens_total\\{[^}]*\\} (\\d+)")));
  EXPECT_GE(std::stoi(hit[1]), 2);
  EXPECT_NE(m.body.find("folio:time_to_first_token_seconds_count{model_name=\"tiny\"} 2\n"),
            std::string::npos);
  // The HTTP layer: this request's connection is open; three heads read.
  EXPECT_NE(m.body.find("folio:http_connections_open{model_name=\"tiny\"} 1\n"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("folio:http_requests_total{model_name=\"tiny\"} 3\n"), std::string::npos);
  EXPECT_NE(m.body.find("folio:http_connections_rejected_total{model_name=\"tiny\"} 0\n"),
            std::string::npos);
}

TEST(ServerModel, DisconnectMidStreamFreesBlocks) {
  ServingStack stack;
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = std::string(path).find("chat") != std::string::npos;
    Json req = {{"max_tokens", 400}, {"temperature", 0}, {"ignore_eos", true}, {"stream", true}};
    if (chat) {
      req["messages"] = {{{"role", "user"}, {"content", kPrompts[2]}}};
    } else {
      req["prompt"] = kPrompts[2];
    }
    HttpAnswer a = testing::post(stack.port(), path, dump_json(req), "", /*drop_after=*/4);
    EXPECT_EQ(a.events.size(), 4u);
    EXPECT_FALSE(a.done);
    // The request was running (its blocks in use) when the client left;
    // cancellation ends it long before 400 tokens.
    const auto t0 = std::chrono::steady_clock::now();
    ServingMetrics::Snapshot s;
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s = stack.scheduler().metrics();
    } while (s.requests_running + s.requests_waiting > 0 &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    EXPECT_EQ(s.requests_running + s.requests_waiting, 0);
    EXPECT_LT(s.generated_tokens, 400u * (chat ? 2 : 1));
    EXPECT_EQ(stack.used_blocks_when_idle(), 0);
  }
  EXPECT_EQ(stack.scheduler().metrics().requests_cancelled, 2u);
  EXPECT_EQ(stack.scheduler().metrics().choices_aborted, 2u);  // vllm:request_success{abort}
}

}  // namespace
}  // namespace folio::server
