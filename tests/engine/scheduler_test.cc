// Scheduler on the tiny reference models: many concurrent requests with
// staggered arrivals give exactly the tokens, text and stop reason of solo
// greedy Generator runs (llama and qwen3); a small pool forces preemptions
// with the same outputs and no leaked block; n > 1 choices prefill once and
// equal solo runs (greedy, and seeded sampling with seed + choice index);
// priorities order admission; a stop string keeps the tokens whose text
// starts before it (kept_tokens); the metrics add up.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

class SchedulerTest : public SchedulerFixture {
 protected:
  // Submits every prompt (greedy, max_tokens), in three waves: the next wave
  // arrives once the first request of the previous one has streamed tokens.
  // Checks each against its solo run.
  void run_staggered(cache::KvCache& cache, SchedulerOptions so, int64_t max_tokens,
                     std::vector<int> priorities = {}) {
    const auto ps = prompts();
    SamplingParams params = greedy_;
    params.max_tokens = static_cast<int32_t>(max_tokens);
    std::vector<SoloRun> want;
    for (const auto& p : ps) want.push_back(solo(p, params));

    Scheduler sched(*model_, *tok_, *ctx_, cache, so);
    ASSERT_TRUE(sched.start().ok());
    std::vector<std::unique_ptr<Collected>> got;
    const size_t waves[] = {0, 3, 6, ps.size()};
    for (int w = 0; w < 3; ++w) {
      for (size_t i = waves[w]; i < waves[w + 1]; ++i) {
        got.push_back(std::make_unique<Collected>());
        GenerationRequest req;
        req.prompt = ps[i];
        req.params = params;
        if (!priorities.empty()) req.priority = priorities[i];
        auto id = sched.submit(req, got.back()->callbacks());
        ASSERT_TRUE(id.ok()) << id.status().to_string();
      }
      got[waves[w]]->wait_tokens(3);
    }
    sched.wait_idle();
    for (size_t i = 0; i < ps.size(); ++i) {
      std::lock_guard<std::mutex> lock(got[i]->mu);
      EXPECT_EQ(got[i]->n_done, 1);
      EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
      EXPECT_EQ(got[i]->result.prompt_tokens, static_cast<int64_t>(ps[i].size()));
      expect_equal(*got[i], want[i], 0, "prompt " + std::to_string(i));
    }
    last_metrics_ = sched.metrics();
  }

  ServingMetrics::Snapshot last_metrics_;
};

TEST_F(SchedulerTest, StaggeredRequestsEqualSoloRuns) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 48;
  so.ubatch = 16;  // chunk cap min(48, max(16, ceil(0.04 * 256))) = 16: prompts fill in chunks
  run_staggered(*cache, so, 16);
  const ServingMetrics::Snapshot& m = last_metrics_;
  EXPECT_EQ(m.preemptions, 0u);
  EXPECT_GT(m.prefix_hit_tokens, 0u);  // the shared prefix was reused
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, DecodeLastAndOneTokenBudgetStillMatch) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 24;
  so.ubatch = 8;
  so.chunk_cap = 8;
  so.decode_first = false;
  run_staggered(*cache, so, 10);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
}

TEST_F(SchedulerTest, Qwen3StaggeredRequestsEqualSoloRuns) {
  load("tiny-qwen3-f32.gguf");
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 40;
  so.ubatch = 16;
  run_staggered(*cache, so, 12);
  EXPECT_TRUE(cache->check_invariants().ok());
}

// Gemma 3 (5 of 6 layers with a 16-token window, blocks of 8): the windowed
// layers' pages drop blocks as sequences grow, the shared 40-token prefix
// is still taken from the cache (only the window before the hit is
// needed), and every request equals its solo run.
TEST_F(SchedulerTest, SlidingWindowPagesEqualSoloRuns) {
  load(std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/tiny-gemma3-f32.gguf");
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  ASSERT_EQ(cache->n_groups(), 2);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 48;
  so.ubatch = 16;
  run_staggered(*cache, so, 24);
  const ServingMetrics::Snapshot& m = last_metrics_;
  EXPECT_GT(m.prefix_hit_tokens, 0u);
  EXPECT_GT(m.kv_window_blocks_total, 0);
  EXPECT_EQ(m.kv_window_blocks_used, 0);
  // The windows held at most max_seqs windows plus a step at once.
  EXPECT_LE(cache->manager(1).peak_used(), cache->manager(1).pool().n_usable());
  EXPECT_LT(cache->manager(1).peak_used(), cache->manager().peak_used());
  EXPECT_TRUE(cache->check_invariants().ok());
}

// Gemma 4 (tiny-gemma4: sliding-window and full-attention layers, the last
// two reading the K/V of layers 2 and 3, per-layer inputs): the cache holds
// the 4 owning layers in two page groups, and every request of a staggered,
// prefix-sharing workload equals its solo run.
TEST_F(SchedulerTest, SharedKvLayersEqualSoloRuns) {
  load(std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/tiny-gemma4-f32.gguf");
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->n_layer(), 4);
  ASSERT_EQ(cache->n_groups(), 2);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 48;
  so.ubatch = 16;
  run_staggered(*cache, so, 24);
  EXPECT_GT(last_metrics_.prefix_hit_tokens, 0u);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, SlidingWindowPagesWithASmallPoolPreemptAndStillMatch) {
  load(std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/tiny-gemma3-f32.gguf");
  auto cache = make_cache(19);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 64;
  so.ubatch = 32;
  so.chunk_cap = 32;
  run_staggered(*cache, so, 24);
  EXPECT_GT(last_metrics_.preemptions, 0u);
  EXPECT_EQ(last_metrics_.requests_failed, 0u);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, SmallPoolPreemptsAndStillMatches) {
  auto cache = make_cache(19);  // 18 usable blocks of 8; one long sequence needs up to 16
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 64;
  so.ubatch = 32;
  so.chunk_cap = 32;
  run_staggered(*cache, so, 24);
  const ServingMetrics::Snapshot& m = last_metrics_;
  EXPECT_GT(m.preemptions, 0u);
  EXPECT_EQ(m.requests_failed, 0u);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, SmallPoolWithPrioritiesStillMatches) {
  auto cache = make_cache(19);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 64;
  so.ubatch = 32;
  run_staggered(*cache, so, 24, {0, 2, 1, 0, 3, 1, 0, 2, 0, 1});
  EXPECT_GT(last_metrics_.preemptions, 0u);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, ChoicesShareThePromptAndEqualSoloRuns) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  const auto ps = prompts();
  const std::vector<int32_t>& prompt = ps[0];
  SamplingParams greedy = greedy_;
  greedy.max_tokens = 12;
  SamplingParams sampled;  // llama.cpp defaults, seeded
  sampled.seed = 42;
  sampled.max_tokens = 12;
  const SoloRun want_greedy = solo(prompt, greedy);
  std::vector<SoloRun> want_sampled;
  for (uint64_t i = 0; i < 3; ++i) {
    SamplingParams p = sampled;
    p.seed = 42 + i;
    want_sampled.push_back(solo(prompt, p));
  }

  SchedulerOptions so;
  so.max_seqs = 4;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  ASSERT_TRUE(sched.start().ok());
  Collected two(2);
  GenerationRequest req;
  req.prompt = prompt;
  req.params = greedy;
  req.n = 2;
  ASSERT_TRUE(sched.submit(req, two.callbacks()).ok());
  sched.wait_idle();
  {
    std::lock_guard<std::mutex> lock(two.mu);
    EXPECT_EQ(two.n_done, 1);
    ASSERT_EQ(two.result.choices.size(), 2u);
    expect_equal(two, want_greedy, 0, "greedy choice 0");
    expect_equal(two, want_greedy, 1, "greedy choice 1");
    EXPECT_EQ(two.result.completion_tokens, 2 * static_cast<int64_t>(want_greedy.tokens.size()));
  }
  // The prompt was computed once for both choices (empty cache).
  ServingMetrics::Snapshot m = sched.metrics();
  EXPECT_EQ(m.prompt_tokens, prompt.size());
  EXPECT_EQ(m.generated_tokens, static_cast<uint64_t>(two.result.completion_tokens));

  Collected three(3);
  req.params = sampled;
  req.n = 3;
  ASSERT_TRUE(sched.submit(req, three.callbacks()).ok());
  sched.wait_idle();
  std::lock_guard<std::mutex> lock(three.mu);
  ASSERT_EQ(three.result.choices.size(), 3u);
  for (int i = 0; i < 3; ++i) expect_equal(three, want_sampled[i], i, "sampled choice");
  EXPECT_NE(three.tokens[0], three.tokens[1]);  // different seeds, different draws
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerTest, MoreChoicesThanMaxSeqs) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  const std::vector<int32_t> prompt = prompts()[2];
  SamplingParams sampled;
  sampled.seed = 7;
  sampled.max_tokens = 10;
  std::vector<SoloRun> want;
  for (uint64_t i = 0; i < 5; ++i) {
    SamplingParams p = sampled;
    p.seed = 7 + i;
    want.push_back(solo(prompt, p));
  }
  SchedulerOptions so;
  so.max_seqs = 2;  // 5 choices: 2 run at once, the rest start from the prefix cache
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  ASSERT_TRUE(sched.start().ok());
  Collected five(5);
  GenerationRequest req;
  req.prompt = prompt;
  req.params = sampled;
  req.n = 5;
  ASSERT_TRUE(sched.submit(req, five.callbacks()).ok());
  sched.wait_idle();
  std::lock_guard<std::mutex> lock(five.mu);
  ASSERT_EQ(five.result.choices.size(), 5u);
  EXPECT_TRUE(five.result.status.ok());
  for (int i = 0; i < 5; ++i) expect_equal(five, want[static_cast<size_t>(i)], i, "choice");
  const ServingMetrics::Snapshot m = sched.metrics();
  EXPECT_GT(m.prefix_hit_tokens, 0u);
  EXPECT_LT(m.prompt_tokens, 2 * prompt.size());  // the prompt's full blocks computed once
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
}

TEST_F(SchedulerTest, PriorityOrdersAdmission) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 1;  // one at a time: admission order = order of first tokens
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  const auto ps = prompts();
  const int prio[] = {0, 0, 5, 1, 5};
  std::atomic<int64_t> order{0};
  std::vector<std::unique_ptr<Collected>> got;
  for (int i = 0; i < 5; ++i) {  // queued before start: all wait together
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[static_cast<size_t>(i) + 1];
    req.params = greedy_;
    req.params.max_tokens = 3;
    req.ignore_eos = true;
    req.priority = prio[i];
    ASSERT_TRUE(sched.submit(req, got.back()->callbacks(&order)).ok());
  }
  ASSERT_TRUE(sched.start().ok());
  sched.wait_idle();
  // Priority first, then arrival: 2, 4 (priority 5), 3 (1), 0, 1 (0).
  const int64_t expected[] = {3, 4, 0, 2, 1};
  for (int i = 0; i < 5; ++i) {
    std::lock_guard<std::mutex> lock(got[static_cast<size_t>(i)]->mu);
    EXPECT_EQ(got[static_cast<size_t>(i)]->first_event, expected[i]) << "request " << i;
  }
}

// A stop string cuts the output: ChoiceResult::kept_tokens counts the tokens
// whose text starts before the cut (a token straddling it is kept, the ones
// after it are not), for every choice; TokenEvent::kept_tokens grows to it.
// Without a stop every generated token is kept.
TEST_F(SchedulerTest, StopStringKeepsTheTokensBeforeTheCut) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  Scheduler sched(*model_, *tok_, *ctx_, *cache, SchedulerOptions{});
  ASSERT_TRUE(sched.start().ok());
  const std::vector<int32_t> prompt = prompts()[1];

  struct Got {
    std::mutex mu;
    std::vector<std::vector<int32_t>> tokens = std::vector<std::vector<int32_t>>(2);
    // [choice] TokenEvent::kept_tokens of each event
    std::vector<std::vector<int64_t>> kept = std::vector<std::vector<int64_t>>(2);
    std::vector<std::string> text = std::vector<std::string>(2);
    std::vector<std::string> pieces;  // choice 0: each event's text
    RequestResult result;
  };
  auto run = [&](std::vector<std::string> stops, int n, Got* got) {
    GenerationRequest req;
    req.prompt = prompt;
    req.params = greedy_;
    req.params.max_tokens = 24;
    req.params.logprobs = true;
    req.params.stop = std::move(stops);
    req.n = n;
    req.ignore_eos = true;
    RequestCallbacks cb;
    cb.on_token = [got](const TokenEvent& ev) {
      std::lock_guard<std::mutex> lock(got->mu);
      const auto c = static_cast<size_t>(ev.choice);
      got->tokens[c].push_back(ev.token.token);
      got->kept[c].push_back(ev.kept_tokens);
      got->text[c] += ev.text;
      if (c == 0) got->pieces.push_back(ev.text);
    };
    cb.on_done = [got](const RequestResult& r) {
      std::lock_guard<std::mutex> lock(got->mu);
      got->result = r;
      for (size_t c = 0; c < r.choices.size(); ++c) got->text[c] += r.choices[c].tail;
    };
    ASSERT_TRUE(sched.submit(req, cb).ok());
    sched.wait_idle();
  };

  Got plain;
  run({}, 1, &plain);
  ASSERT_EQ(plain.result.choices.size(), 1u);
  EXPECT_EQ(plain.result.choices[0].stop, StopReason::kLength);
  EXPECT_EQ(plain.result.choices[0].kept_tokens, 24);
  // Where each token's text starts in the output: the text released before
  // its event (no stop string: every event releases its token's text).
  const std::string& joined = plain.text[0];
  ASSERT_EQ(plain.pieces.size(), 24u);
  std::vector<size_t> start;
  size_t at = 0;
  for (const std::string& p : plain.pieces) {
    start.push_back(at);
    at += p.size();
  }
  auto ascii = [](const std::string& p) {
    for (char ch : p) {
      if (static_cast<unsigned char>(ch) >= 0x80) return false;
    }
    return !p.empty();
  };
  // A token j of two or more ASCII bytes followed by another, such that a
  // stop string starting at j's second byte first occurs there.
  size_t j = 0;
  std::string inside, on_start;
  for (size_t k = 1; k + 1 < plain.pieces.size() && inside.empty(); ++k) {
    const std::string& pk = plain.pieces[k];
    const std::string& next = plain.pieces[k + 1];
    if (pk.size() < 2 || !ascii(pk) || !ascii(next)) continue;
    const std::string a = pk.substr(1) + next;
    const std::string b = pk + next;
    if (joined.find(a) == start[k] + 1 && joined.find(b) == start[k]) {
      j = k;
      inside = a;
      on_start = b;
    }
  }
  ASSERT_FALSE(inside.empty()) << "no token to cut inside in: " << joined;

  Got cut_inside;
  run({inside}, 2, &cut_inside);
  ASSERT_EQ(cut_inside.result.choices.size(), 2u);
  for (size_t c = 0; c < 2; ++c) {
    const ChoiceResult& r = cut_inside.result.choices[c];
    EXPECT_EQ(r.stop, StopReason::kStopString) << "choice " << c;
    EXPECT_EQ(r.n_generated, static_cast<int64_t>(j) + 2) << "choice " << c;  // j + 1 completes it
    EXPECT_EQ(r.kept_tokens, static_cast<int64_t>(j) + 1) << "choice " << c;  // j straddles the cut
    EXPECT_EQ(cut_inside.text[c], joined.substr(0, start[j] + 1)) << "choice " << c;
    ASSERT_EQ(cut_inside.kept[c].size(), j + 2);
    EXPECT_EQ(cut_inside.kept[c].back(), static_cast<int64_t>(j) + 1);
    for (size_t e = 0; e < cut_inside.kept[c].size(); ++e) {
      EXPECT_LE(cut_inside.kept[c][e], static_cast<int64_t>(e) + 1);
      if (e > 0) {
        EXPECT_GE(cut_inside.kept[c][e], cut_inside.kept[c][e - 1]);
      }
    }
  }

  Got cut_on_start;
  run({on_start}, 1, &cut_on_start);
  ASSERT_EQ(cut_on_start.result.choices.size(), 1u);
  EXPECT_EQ(cut_on_start.result.choices[0].stop, StopReason::kStopString);
  EXPECT_EQ(cut_on_start.result.choices[0].n_generated, static_cast<int64_t>(j) + 2);
  EXPECT_EQ(cut_on_start.result.choices[0].kept_tokens, static_cast<int64_t>(j));
  EXPECT_EQ(cut_on_start.text[0], joined.substr(0, start[j]));
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
}

TEST_F(SchedulerTest, MetricsAddUp) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 32;
  so.ubatch = 16;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  EXPECT_EQ(sched.effective_chunk_cap(), 16);  // min(32, max(16, ceil(0.04 * 256)))
  ASSERT_TRUE(sched.start().ok());
  const auto ps = prompts();
  std::vector<std::unique_ptr<Collected>> got;
  uint64_t prompt_sum = 0;
  for (size_t i = 0; i < 6; ++i) {
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[i];
    req.params = greedy_;
    req.params.max_tokens = 8;
    req.ignore_eos = true;  // every request ends by length: decodes = completion - 1
    prompt_sum += ps[i].size();
    ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
  }
  sched.wait_idle();
  const ServingMetrics::Snapshot m = sched.metrics();
  uint64_t completion = 0, cached = 0, itl = 0;
  for (auto& g : got) {
    std::lock_guard<std::mutex> lock(g->mu);
    completion += static_cast<uint64_t>(g->result.completion_tokens);
    cached += static_cast<uint64_t>(g->result.cached_prompt_tokens);
    if (g->result.completion_tokens > 0)
      itl += static_cast<uint64_t>(g->result.completion_tokens) - 1;
    EXPECT_EQ(static_cast<int64_t>(g->tokens[0].size()), g->result.completion_tokens);
  }
  EXPECT_EQ(m.requests_total, 6u);
  EXPECT_EQ(m.requests_finished, 6u);
  EXPECT_EQ(m.requests_cancelled, 0u);
  EXPECT_EQ(m.requests_failed, 0u);
  EXPECT_EQ(m.requests_running, 0);
  EXPECT_EQ(m.requests_waiting, 0);
  EXPECT_EQ(m.generated_tokens, completion);
  EXPECT_EQ(m.preemptions, 0u);
  // Without preemption every prompt is looked up once and computed once.
  EXPECT_EQ(m.prefix_queried_tokens, prompt_sum);
  EXPECT_EQ(m.prefix_hit_tokens, cached);
  EXPECT_GT(cached, 0u);
  EXPECT_EQ(m.prompt_tokens, prompt_sum - cached);
  EXPECT_EQ(m.ttft.count(), 6u);
  EXPECT_EQ(m.e2e.count(), 6u);
  EXPECT_EQ(m.itl.count(), itl);
  EXPECT_EQ(m.step_time.count(), m.steps);
  EXPECT_EQ(m.batch_tokens.count(), m.steps);
  EXPECT_DOUBLE_EQ(m.batch_tokens.sum(), static_cast<double>(m.prompt_tokens + completion - 6));
  EXPECT_EQ(m.kv_blocks_total, 4 * 32);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_blocks_free, 4 * 32);
  EXPECT_GT(m.kv_blocks_cached, 0);
  EXPECT_EQ(m.kv_blocks_cached, cache->manager().pool().n_cached());  // none in use
  EXPECT_DOUBLE_EQ(m.kv_usage, 0.0);
  EXPECT_EQ(m.kv_block_size, cache->block_size());
  // vLLM's counts: whole prompts (hits included), finished choices by reason.
  EXPECT_EQ(m.request_prompt_tokens, prompt_sum);
  EXPECT_EQ(m.request_prompt.count(), 6u);
  EXPECT_DOUBLE_EQ(m.request_prompt.sum(), static_cast<double>(prompt_sum));
  EXPECT_DOUBLE_EQ(m.request_generation.sum(), static_cast<double>(completion));
  EXPECT_EQ(m.choices_length, 6u);
  EXPECT_EQ(m.choices_stopped + m.choices_aborted, 0u);
}

}  // namespace
}  // namespace folio
