// Scheduler control paths: cancel (running and queued) frees every block and
// reports kCancelled; submit() errors, among them a request the KV pool
// could never hold (one that exactly fits runs to its end); a failing
// forward fails only the request it belongs to (through a KvCache wrapper,
// which also shows the scheduler needs only the generic interface); a
// sampling error fails its request; stop() ends everything; submits,
// cancels and metric reads from several threads at once (run under TSan
// too).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <thread>

#include "engine/scheduler.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_control_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

// A PagedKvCache behind a plain KvCache whose plan() fails (kInternal) for a
// batch holding `poison` at position 0. With lose_state it then behaves like
// a hybrid cache after a failed forward: every sequence of that batch that
// held positions is lost (kDataLoss at its next plan) until removed or
// truncated to 0.
class PoisonedKvCache final : public cache::KvCache {
 public:
  PoisonedKvCache(cache::KvCache& inner, int32_t poison, bool lose_state)
      : inner_(inner), poison_(poison), lose_state_(lose_state) {}
  int n_data_loss() const { return n_data_loss_; }

  int n_layer() const override { return inner_.n_layer(); }
  int64_t n_ctx() const override { return inner_.n_ctx(); }
  DType type() const override { return inner_.type(); }
  size_t bytes() const override { return inner_.bytes(); }
  std::string summary() const override { return inner_.summary(); }
  bool has_sequence(int seq) const override { return inner_.has_sequence(seq); }
  int64_t seq_len(int seq) const override { return inner_.seq_len(seq); }
  Result<int> add_sequence() override { return inner_.add_sequence(); }
  Result<int> fork_sequence(int parent) override { return inner_.fork_sequence(parent); }
  Status remove_sequence(int seq) override {
    lost_.erase(seq);
    return inner_.remove_sequence(seq);
  }
  Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> prompt) override {
    return inner_.take_cached_prefix(seq, prompt);
  }
  Status truncate(int seq, int64_t len) override {
    if (len == 0) lost_.erase(seq);
    return inner_.truncate(seq, len);
  }
  void clear() override { inner_.clear(); }
  Status plan(const cache::Batch& batch, cache::KvPlan& plan) const override {
    for (size_t i = 0; i < batch.tokens.size(); ++i) {
      if (lost_.count(batch.seq_idx[i]) != 0) {
        ++n_data_loss_;
        return data_loss("sequence {} lost its state", batch.seq_idx[i]);
      }
    }
    for (size_t i = 0; i < batch.tokens.size(); ++i) {
      if (batch.tokens[i] == poison_ && batch.pos[i] == 0) {
        for (size_t j = 0; j < batch.tokens.size() && lose_state_; ++j) {
          if (inner_.seq_len(batch.seq_idx[j]) > 0) lost_.insert(batch.seq_idx[j]);
        }
        return internal_error("poisoned token {} in the batch", poison_);
      }
    }
    return inner_.plan(batch, plan);
  }
  void prepare(const cache::KvPlan& plan) override { inner_.prepare(plan); }
  void apply(const cache::KvPlan& plan) override { inner_.apply(plan); }
  void discard(const cache::KvPlan& plan) override { inner_.discard(plan); }
  TensorView k_table(int layer) const override { return inner_.k_table(layer); }
  TensorView v_table(int layer) const override { return inner_.v_table(layer); }
  TensorView k_view(int layer) const override { return inner_.k_view(layer); }
  TensorView v_view(int layer) const override { return inner_.v_view(layer); }
  bool paged() const override { return inner_.paged(); }
  int block_size() const override { return inner_.block_size(); }
  const cache::KvCacheManager* block_manager() const override { return inner_.block_manager(); }

 private:
  cache::KvCache& inner_;
  int32_t poison_;
  bool lose_state_;
  // plan() is const in the interface; the step thread alone calls it.
  mutable std::set<int> lost_;
  mutable int n_data_loss_ = 0;
};

using SchedulerControlTest = SchedulerFixture;

TEST_F(SchedulerControlTest, CancelFreesBlocksAndReportsCancelled) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  const auto ps = prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 16;
  const SoloRun want = solo(ps[1], params);

  SchedulerOptions so;
  so.max_seqs = 2;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  Collected longer, normal, queued;
  GenerationRequest req;
  req.prompt = ps[0];
  req.params = greedy_;  // no max_tokens: runs until the context is full
  req.ignore_eos = true;
  auto id_long = sched.submit(req, longer.callbacks());
  ASSERT_TRUE(id_long.ok());
  req.prompt = ps[1];
  req.params = params;
  req.ignore_eos = false;
  ASSERT_TRUE(sched.submit(req, normal.callbacks()).ok());
  req.prompt = ps[3];
  auto id_queued = sched.submit(req, queued.callbacks());  // max_seqs 2: waits
  ASSERT_TRUE(id_queued.ok());
  sched.cancel(*id_queued);  // still queued when the step thread starts
  ASSERT_TRUE(sched.start().ok());

  longer.wait_tokens(5);
  sched.cancel(*id_long);
  sched.cancel(*id_long);  // twice: no-op
  sched.cancel(12345);     // unknown: no-op
  sched.wait_idle();

  {
    std::lock_guard<std::mutex> lock(longer.mu);
    EXPECT_EQ(longer.n_done, 1);
    EXPECT_TRUE(longer.result.status.ok());
    ASSERT_EQ(longer.result.choices.size(), 1u);
    EXPECT_EQ(longer.result.choices[0].stop, StopReason::kCancelled);
    EXPECT_GE(longer.tokens[0].size(), 5u);
    EXPECT_LT(longer.tokens[0].size(), 256u - ps[0].size());
  }
  {
    std::lock_guard<std::mutex> lock(queued.mu);
    EXPECT_EQ(queued.n_done, 1);
    EXPECT_EQ(queued.result.choices[0].stop, StopReason::kCancelled);
    EXPECT_TRUE(queued.tokens[0].empty());
  }
  {
    std::lock_guard<std::mutex> lock(normal.mu);
    expect_equal(normal, want, 0, "the request beside the cancelled one");
  }
  const ServingMetrics::Snapshot m = sched.metrics();
  EXPECT_EQ(m.requests_cancelled, 2u);
  EXPECT_EQ(m.requests_finished, 3u);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_EQ(cache->manager().n_sequences(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerControlTest, SubmitErrors) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_waiting = 2;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  const std::vector<int32_t> prompt = prompts()[1];
  int callbacks = 0;
  RequestCallbacks cb;
  cb.on_token = [&](const TokenEvent&) { ++callbacks; };
  cb.on_done = [&](const RequestResult&) { ++callbacks; };
  auto code = [&](GenerationRequest r) { return sched.submit(std::move(r), cb).status().code(); };

  GenerationRequest ok;
  ok.prompt = prompt;
  ok.params = greedy_;
  GenerationRequest r = ok;
  r.prompt.clear();
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = ok;
  r.prompt.push_back(100000);  // outside the vocabulary
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = ok;
  r.n = 0;
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r.n = 17;
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = ok;
  r.params.temperature = -1.0f;
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = ok;
  r.params.top_p = 0.0f;
  EXPECT_EQ(code(r), StatusCode::kInvalidArgument);
  r = ok;
  r.prompt.assign(256, prompt[1]);  // no room left in n_ctx 256
  EXPECT_EQ(code(r), StatusCode::kOutOfRange);
  r = ok;
  r.params.max_tokens = 256;  // prompt + max_tokens > 256
  auto s = sched.submit(r, cb);
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.status().message().find("256"), std::string::npos) << s.status().message();
  EXPECT_EQ(callbacks, 0);  // nothing queued, no callback
  EXPECT_EQ(sched.metrics().requests_total, 0u);

  // Not started: two wait, the third finds the queue full.
  EXPECT_TRUE(sched.submit(ok, cb).ok());
  EXPECT_TRUE(sched.submit(ok, cb).ok());
  EXPECT_EQ(code(ok), StatusCode::kResourceExhausted);
  EXPECT_EQ(sched.metrics().requests_waiting, 2);
  SchedulerOptions bad = so;
  bad.max_seqs = 0;
  Scheduler bad_sched(*model_, *tok_, *ctx_, *cache, bad);
  EXPECT_EQ(bad_sched.start().code(), StatusCode::kInvalidArgument);
  // stop() without start(): the queued requests end kCancelled, here.
  sched.stop();
  EXPECT_EQ(callbacks, 2);
  EXPECT_EQ(code(ok), StatusCode::kResourceExhausted);
  EXPECT_EQ(sched.metrics().requests_cancelled, 2u);
}

// A request whose sequence could never fit the KV pool, even alone, is
// refused at submit (kInvalidArgument: the server's 400), counting prompt +
// max_tokens - 1 positions (the last token is never fed back), or n_ctx - 1
// when max_tokens is unset. 4 usable blocks of 8 hold 32 positions.
TEST_F(SchedulerControlTest, SubmitRefusesWhatThePoolCanNeverHold) {
  auto cache = make_cache(4 + 1);
  ASSERT_NE(cache, nullptr);
  ASSERT_EQ(cache->token_capacity(), 32);
  Scheduler sched(*model_, *tok_, *ctx_, *cache, SchedulerOptions{});
  const std::vector<int32_t> prompt = prompts()[1];
  const auto n_prompt = static_cast<int32_t>(prompt.size());
  RequestCallbacks cb;  // never started: accepted requests just wait
  GenerationRequest req;
  req.prompt = prompt;
  req.params = greedy_;

  req.params.max_tokens = 34 - n_prompt;  // 33 positions
  Result<uint64_t> r = sched.submit(req, cb);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("needs 33 KV cache positions"), std::string::npos) << msg;
  EXPECT_NE(msg.find("holds 32"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("at most {}", 33 - n_prompt)), std::string::npos) << msg;
  // n > 1 asks for no more: the choices need not run at once.
  req.params.max_tokens = 33 - n_prompt;
  req.n = 4;
  EXPECT_TRUE(sched.submit(req, cb).ok());
  req.n = 1;
  // Unset max_tokens: up to the context (256), 255 positions.
  req.params.max_tokens = -1;
  r = sched.submit(req, cb);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("needs 255"), std::string::npos) << r.status().message();
  // A prompt of 33 tokens does not fit at all; 32 tokens and one more do.
  req.prompt.assign(33, prompt[1]);
  req.params.max_tokens = 1;
  r = sched.submit(req, cb);
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("prompt of 33 tokens does not fit the KV cache"),
            std::string::npos)
      << r.status().message();
  req.prompt.assign(32, prompt[1]);
  EXPECT_TRUE(sched.submit(req, cb).ok());
  // Nothing to generate: nothing to hold.
  req.prompt.assign(100, prompt[1]);
  req.params.max_tokens = 0;
  EXPECT_TRUE(sched.submit(req, cb).ok());
  // The context check comes first (413).
  req.params.max_tokens = 200;
  EXPECT_EQ(sched.submit(req, cb).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(sched.metrics().requests_total, 3u);
}

// A request that exactly fits the pool runs to its end with the tokens of a
// solo run: prompt + max_tokens - 1 = 32 positions in 4 blocks of 8; unset
// max_tokens with a context of 33 fills the context (n_ctx - 1 = 32
// positions held); n = 2 choices that cannot both be held at once still
// finish (the pool preempts one, which resumes afterwards).
TEST_F(SchedulerControlTest, RequestThatExactlyFitsThePoolCompletes) {
  const std::vector<int32_t> prompt = prompts()[1];
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  ASSERT_LT(n_prompt, 8);  // so that two choices need more than 4 blocks
  // Solo reference runs to the end, end-of-generation ignored.
  auto solo_tokens = [&](int64_t n_ctx, int64_t n_predict) {
    auto c = make_cache(0, 1, n_ctx);
    Generator gen(*model_, *tok_, *solo_ctx_, *c);
    GenerateOptions go;
    go.n_predict = n_predict;
    go.ignore_eos = true;
    auto r = gen.generate(prompt, greedy_, go, [](std::string_view) { return true; });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r->tokens : std::vector<int32_t>{};
  };

  struct Case {
    int64_t n_ctx;
    int32_t max_tokens;
    int n;
    StopReason stop;
  };
  const Case cases[] = {
      {256, static_cast<int32_t>(33 - n_prompt), 1, StopReason::kLength},
      {33, -1, 1, StopReason::kContextFull},
      {256, static_cast<int32_t>(33 - n_prompt), 2, StopReason::kLength},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(fmt::format("n_ctx {}, max_tokens {}, n {}", k.n_ctx, k.max_tokens, k.n));
    auto cache = make_cache(4 + 1, 0, k.n_ctx);
    ASSERT_NE(cache, nullptr);
    const std::vector<int32_t> want = solo_tokens(k.n_ctx, 33 - n_prompt);
    ASSERT_EQ(static_cast<int64_t>(want.size()), 33 - n_prompt);
    SchedulerOptions so;
    so.max_seqs = 4;
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    ASSERT_TRUE(sched.start().ok());
    Collected got(k.n);
    GenerationRequest req;
    req.prompt = prompt;
    req.params = greedy_;
    req.params.max_tokens = k.max_tokens;
    req.n = k.n;
    req.ignore_eos = true;
    auto id = sched.submit(req, got.callbacks());
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    sched.wait_idle();
    std::lock_guard<std::mutex> lock(got.mu);
    EXPECT_TRUE(got.result.status.ok()) << got.result.status.to_string();
    ASSERT_EQ(got.result.choices.size(), static_cast<size_t>(k.n));
    for (int c = 0; c < k.n; ++c) {
      EXPECT_EQ(got.result.choices[static_cast<size_t>(c)].stop, k.stop) << "choice " << c;
      EXPECT_EQ(got.tokens[static_cast<size_t>(c)], want) << "choice " << c;
    }
    const ServingMetrics::Snapshot m = sched.metrics();
    if (k.n > 1) {
      EXPECT_GT(m.preemptions, 0u);  // the two choices never fit at once
    }
    EXPECT_EQ(m.requests_failed, 0u);
    EXPECT_EQ(cache->manager().peak_used(), 4);
    EXPECT_EQ(cache->manager().pool().n_used(), 0);
    EXPECT_TRUE(cache->check_invariants().ok());
  }
}

TEST_F(SchedulerControlTest, MaxTokensZeroEndsAtOnce) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  Scheduler sched(*model_, *tok_, *ctx_, *cache, SchedulerOptions{});
  ASSERT_TRUE(sched.start().ok());
  Collected c(2);
  GenerationRequest req;
  req.prompt = prompts()[1];
  req.params = greedy_;
  req.params.max_tokens = 0;
  req.n = 2;
  ASSERT_TRUE(sched.submit(req, c.callbacks()).ok());
  sched.wait_idle();
  std::lock_guard<std::mutex> lock(c.mu);
  EXPECT_EQ(c.n_done, 1);
  ASSERT_EQ(c.result.choices.size(), 2u);
  EXPECT_EQ(c.result.choices[1].stop, StopReason::kLength);
  EXPECT_EQ(c.result.completion_tokens, 0);
  EXPECT_EQ(c.n_events, 0);
}

class SchedulerFailureTest : public SchedulerFixture, public ::testing::WithParamInterface<bool> {};

TEST_P(SchedulerFailureTest, FailingForwardFailsOnlyItsRequest) {
  const bool lose_state = GetParam();
  auto paged = make_cache(4 * 32 + 1);
  ASSERT_NE(paged, nullptr);
  const auto ps = prompts();
  const int32_t poison = ps[1][0] == 7 ? 8 : 7;
  PoisonedKvCache cache(*paged, poison, lose_state);
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  std::vector<SoloRun> want = {solo(ps[1], params), solo(ps[3], params)};

  SchedulerOptions so;
  so.max_seqs = 4;
  Scheduler sched(*model_, *tok_, *ctx_, cache, so);
  Collected good1, bad, good2, bad_sampling;
  GenerationRequest req;
  req.params = params;
  GenerationRequest bad_req = req;
  bad_req.prompt = ps[3];
  bad_req.prompt.insert(bad_req.prompt.begin(), poison);
  GenerationRequest bad_sampling_req = req;
  bad_sampling_req.prompt = ps[5];
  // Every token banned: the sampler has nothing to draw.
  for (int32_t t = 0; t < static_cast<int32_t>(model_->config().n_vocab); ++t)
    bad_sampling_req.params.logit_bias[t] = -INFINITY;
  // The failing requests arrive while the good ones decode (submitted from
  // good1's second token, on the step thread), so their first batch holds
  // the good ones' decode tokens too.
  RequestCallbacks cb1 = good1.callbacks();
  auto on_token = cb1.on_token;
  int seen = 0;
  cb1.on_token = [&, on_token](const TokenEvent& ev) {
    on_token(ev);
    if (++seen == 2) {
      EXPECT_TRUE(sched.submit(bad_req, bad.callbacks()).ok());
      EXPECT_TRUE(sched.submit(bad_sampling_req, bad_sampling.callbacks()).ok());
    }
  };
  req.prompt = ps[1];
  ASSERT_TRUE(sched.submit(req, cb1).ok());
  req.prompt = ps[3];
  ASSERT_TRUE(sched.submit(req, good2.callbacks()).ok());
  ASSERT_TRUE(sched.start().ok());
  sched.wait_idle();

  {
    std::lock_guard<std::mutex> lock(bad.mu);
    EXPECT_EQ(bad.n_done, 1);
    EXPECT_EQ(bad.result.status.code(), StatusCode::kInternal);
    EXPECT_NE(bad.result.status.message().find("poisoned"), std::string::npos);
  }
  {
    std::lock_guard<std::mutex> lock(bad_sampling.mu);
    EXPECT_EQ(bad_sampling.n_done, 1);
    EXPECT_FALSE(bad_sampling.result.status.ok());
    EXPECT_EQ(bad_sampling.n_events, 0);
  }
  {
    std::lock_guard<std::mutex> lock(good1.mu);
    EXPECT_TRUE(good1.result.status.ok());
    expect_equal(good1, want[0], 0, "good request 1");
  }
  {
    std::lock_guard<std::mutex> lock(good2.mu);
    EXPECT_TRUE(good2.result.status.ok());
    expect_equal(good2, want[1], 0, "good request 2");
  }
  if (lose_state) {
    EXPECT_GT(cache.n_data_loss(), 0);  // lost sequences were recomputed
  }
  const ServingMetrics::Snapshot m = sched.metrics();
  EXPECT_EQ(m.requests_failed, 2u);
  EXPECT_EQ(m.requests_finished, 4u);
  EXPECT_EQ(paged->manager().pool().n_used(), 0);
  EXPECT_TRUE(paged->check_invariants().ok());
}

INSTANTIATE_TEST_SUITE_P(LoseState, SchedulerFailureTest, ::testing::Bool());

TEST_F(SchedulerControlTest, StopCancelsRunningRequests) {
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  Collected a, b;
  {
    Scheduler sched(*model_, *tok_, *ctx_, *cache, SchedulerOptions{});
    ASSERT_TRUE(sched.start().ok());
    GenerationRequest req;
    req.prompt = prompts()[1];
    req.params = greedy_;
    req.ignore_eos = true;
    ASSERT_TRUE(sched.submit(req, a.callbacks()).ok());
    ASSERT_TRUE(sched.submit(req, b.callbacks()).ok());
    a.wait_tokens(3);
    sched.stop();
    EXPECT_EQ(sched.start().code(), StatusCode::kInvalidArgument);  // not after stop
  }  // the destructor's stop() is a no-op now
  for (Collected* c : {&a, &b}) {
    std::lock_guard<std::mutex> lock(c->mu);
    EXPECT_EQ(c->n_done, 1);
    EXPECT_EQ(c->result.choices[0].stop, StopReason::kCancelled);
  }
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

TEST_F(SchedulerControlTest, ConcurrentSubmitCancelAndMetrics) {
  auto cache = make_cache(24 + 1);  // small: preemptions happen too
  ASSERT_NE(cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 32;
  so.ubatch = 16;
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  ASSERT_TRUE(sched.start().ok());
  const auto ps = prompts();
  constexpr int kThreads = 3, kPerThread = 4;
  std::vector<std::unique_ptr<Collected>> got;
  for (int i = 0; i < kThreads * kPerThread; ++i) got.push_back(std::make_unique<Collected>(2));
  std::atomic<bool> running{true};
  std::thread reader([&] {
    while (running.load()) {
      const ServingMetrics::Snapshot m = sched.metrics();
      EXPECT_LE(m.requests_finished, m.requests_total);
      EXPECT_LE(m.kv_blocks_used, m.kv_blocks_total);
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int k = 0; k < kPerThread; ++k) {
        const int i = t * kPerThread + k;
        GenerationRequest req;
        req.prompt = ps[static_cast<size_t>(i) % ps.size()];
        req.params.seed = static_cast<uint64_t>(i);
        req.params.max_tokens = 12;
        req.n = 1 + i % 2;
        req.priority = i % 3;
        auto id = sched.submit(req, got[static_cast<size_t>(i)]->callbacks());
        ASSERT_TRUE(id.ok()) << id.status().to_string();
        if (rng() % 3 == 0) sched.cancel(*id);
      }
    });
  }
  for (auto& th : submitters) th.join();
  sched.wait_idle();
  running = false;
  reader.join();
  int64_t completion = 0;
  for (auto& g : got) {
    std::lock_guard<std::mutex> lock(g->mu);
    EXPECT_EQ(g->n_done, 1);
    EXPECT_TRUE(g->result.status.ok()) << g->result.status.to_string();
    completion += g->result.completion_tokens;
  }
  const ServingMetrics::Snapshot m = sched.metrics();
  EXPECT_EQ(m.requests_total, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(m.requests_finished, m.requests_total);
  EXPECT_EQ(m.generated_tokens, static_cast<uint64_t>(completion));
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_EQ(cache->manager().n_sequences(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

}  // namespace
}  // namespace folio
