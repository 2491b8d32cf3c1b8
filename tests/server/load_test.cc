// Bounded load test on loopback: 32 concurrent streaming clients (chat and
// completions, prompts from a few tokens to ~300), about 10% of them
// disconnecting mid-stream, against a scheduler with fewer sequence slots
// and KV blocks than the load wants (so requests queue and may be
// preempted). Every client that stays gets exactly the text and finish
// reason of a solo greedy run of its request; afterwards no KV block is
// referenced, the dropped requests were cancelled, and /health answered 200
// throughout.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "model_fixture.h"

namespace folio::server {
namespace load_test {

using testing::HttpAnswer;
using testing::ServingStack;

struct Client {
  bool chat = false;
  Json request;
  std::vector<int32_t> prompt;  // as the server tokenizes it
  int max_tokens = 0;
  int drop_after = -1;  // events before walking away; -1 stays
  HttpAnswer answer;
};

std::string make_text(int i, int words) {
  static const char* kWords[] = {"river", "stone", "lamp",   "north", "quiet", "paper",
                                 "seven", "glass", "harbor", "field", "ember", "cloud"};
  std::string s = "Story " + std::to_string(i) + ":";
  for (int w = 0; w < words; ++w) s += std::string(" ") + kWords[(i * 7 + w * 3) % 12];
  return s;
}

TEST(ServerLoad, ThirtyTwoStreamingClients) {
  testing::StackOptions o;
  o.max_seqs = 6;
  o.n_ctx = 512;
  o.n_blocks = 48;  // 47 usable: fewer than 6 running requests want, so some are preempted
  o.max_batch_tokens = 128;
  o.ubatch = 32;
  ServingStack stack(o);

  constexpr int kClients = 32;
  std::vector<Client> clients(kClients);
  for (int i = 0; i < kClients; ++i) {
    Client& c = clients[i];
    c.chat = i % 3 == 1;
    const int words = (i % 4 == 0) ? 2 + i : (i % 4 == 1 ? 40 : (i % 4 == 2 ? 80 : 8));
    const std::string text = make_text(i, words);
    c.max_tokens = 8 + (i * 5) % 33;
    c.drop_after = (i % 10 == 3) ? 3 : -1;  // clients 3, 13, 23: ~10%
    c.request = {{"model", ServingStack::kModelId},
                 {"max_tokens", c.drop_after >= 0 ? 400 : c.max_tokens},
                 {"temperature", 0},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    if (c.drop_after >= 0) c.request["ignore_eos"] = true;
    if (c.chat) {
      c.request["messages"] = {{{"role", "user"}, {"content", text}}};
      c.prompt = ServingStack::chat_tokens(c.request["messages"]);
    } else {
      c.request["prompt"] = text;
      c.prompt = ServingStack::completion_tokens(text);
    }
  }

  std::atomic<bool> running{true};
  std::atomic<int> health_ok{0}, health_bad{0};
  std::thread health([&] {
    while (running) {
      (testing::get(stack.port(), "/health").status == 200 ? health_ok : health_bad)++;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      Client& c = clients[i];
      c.answer = testing::post(stack.port(), c.chat ? "/v1/chat/completions" : "/v1/completions",
                               dump_json(c.request), "", c.drop_after);
    });
    // The listen backlog is short: spread the connects a little.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(stack.used_blocks_when_idle(), 0) << "KV blocks leaked";
  running = false;
  health.join();
  EXPECT_EQ(health_bad, 0);
  EXPECT_GT(health_ok, 0);

  int dropped = 0;
  for (int i = 0; i < kClients; ++i) {
    const Client& c = clients[i];
    if (c.drop_after >= 0) {
      ++dropped;
      EXPECT_FALSE(c.answer.done) << "client " << i;
      continue;
    }
    ASSERT_EQ(c.answer.status, 200) << "client " << i << ": " << c.answer.body;
    EXPECT_TRUE(c.answer.sse_well_formed) << "client " << i;
    EXPECT_TRUE(c.answer.done) << "client " << i;
    const auto solo = stack.solo(c.prompt, testing::greedy(), c.max_tokens);
    EXPECT_EQ(testing::streamed_text(c.answer), solo.text) << "client " << i;
    EXPECT_EQ(testing::streamed_finish(c.answer), solo.finish) << "client " << i;
    ASSERT_FALSE(c.answer.events.empty());
    const Json& usage = c.answer.events.back()["usage"];
    EXPECT_EQ(usage["prompt_tokens"], c.prompt.size()) << "client " << i;
    EXPECT_EQ(usage["completion_tokens"], solo.n_generated) << "client " << i;
  }
  const ServingMetrics::Snapshot m = stack.scheduler().metrics();
  EXPECT_EQ(m.requests_total, static_cast<uint64_t>(kClients));
  EXPECT_EQ(m.requests_finished, static_cast<uint64_t>(kClients));
  EXPECT_EQ(m.requests_cancelled, static_cast<uint64_t>(dropped));
  EXPECT_EQ(m.kv_blocks_used, 0);
  std::printf("load: %d clients, %d dropped, %llu steps, %llu preemptions, %d health checks\n",
              kClients, dropped, static_cast<unsigned long long>(m.steps),
              static_cast<unsigned long long>(m.preemptions), health_ok.load());
}

}  // namespace
}  // namespace folio::server
