// Scheduler over a hybrid cache (tiny qwen35: gated DeltaNet + attention
// layers, cache::HybridKvCache with a paged attention part and prefix
// checkpoints): concurrent requests give the tokens of solo Generator runs
// with whole or chunked prompts, also when a small pool forces preemption,
// and nothing leaks. The scheduler sees only the KvCache interface.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "cache/hybrid_kv_cache.h"
#include "engine/scheduler.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_hybrid_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

class SchedulerHybridTest : public SchedulerFixture {
 protected:
  void SetUp() override { load("tiny-qwen35-f32.gguf"); }

  // Solo run on the model's own (contiguous hybrid) cache.
  SoloRun solo_hybrid(const std::vector<int32_t>& prompt, const SamplingParams& params) {
    cache::KvCacheOptions co;
    co.n_ctx = 256;
    auto cache = model_->make_cache(co);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    if (!cache.ok()) return {};
    return solo_in(**cache, prompt, params);
  }
};

struct HybridCase {
  int32_t n_blocks;
  int64_t chunk_cap;
};

class SchedulerHybridCaseTest : public SchedulerHybridTest,
                                public ::testing::WithParamInterface<HybridCase> {};

TEST_P(SchedulerHybridCaseTest, ConcurrentRequestsEqualSoloRuns) {
  const HybridCase hc = GetParam();
  cache::KvCacheOptions o;
  o.storage = cache::KvStorage::kPaged;
  o.type = DType::F32;
  o.block_size = 8;
  o.n_ctx = 256;
  o.n_blocks = hc.n_blocks;
  o.n_seq = 0;
  o.max_seqs = 4;
  auto c = cache::HybridKvCache::create(model_->config().cache_geometry(), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cache::HybridKvCache& cache = **c;

  const auto ps = prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  std::vector<SoloRun> want;
  for (size_t i = 0; i < 6; ++i) want.push_back(solo_hybrid(ps[i], params));

  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 256;
  so.ubatch = 256;
  so.chunk_cap = hc.chunk_cap;
  Scheduler sched(*model_, *tok_, *ctx_, cache, so);
  ASSERT_TRUE(sched.start().ok());
  std::vector<std::unique_ptr<Collected>> got;
  // The later requests arrive while the first ones decode: the first
  // request's third token holds the scheduler thread (inside its callback)
  // until they are submitted, whatever the machine's speed.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool gate_open = false;
  for (size_t i = 0; i < 6; ++i) {
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[i];
    req.params = params;
    RequestCallbacks cb = got.back()->callbacks();
    if (i == 0) {
      cb.on_token = [&, inner = cb.on_token, n = 0](const TokenEvent& ev) mutable {
        inner(ev);
        if (++n != 3) return;
        std::unique_lock<std::mutex> lock(gate_mu);
        gate_cv.wait_for(lock, std::chrono::seconds(20), [&] { return gate_open; });
      };
    }
    ASSERT_TRUE(sched.submit(req, std::move(cb)).ok());
    if (i == 2) got[0]->wait_tokens(3);
  }
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    gate_open = true;
  }
  gate_cv.notify_all();
  sched.wait_idle();
  for (size_t i = 0; i < 6; ++i) {
    std::lock_guard<std::mutex> lock(got[i]->mu);
    EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
    expect_equal(*got[i], want[i], 0, "prompt " + std::to_string(i));
  }
  const ServingMetrics::Snapshot m = sched.metrics();
  if (hc.n_blocks < 32) {
    EXPECT_GT(m.preemptions, 0u);  // recomputed from prefix checkpoints
  }
  EXPECT_GT(m.prefix_hit_tokens, 0u);  // the shared prefix resumed from a checkpoint
  EXPECT_EQ(cache.block_manager()->pool().n_used(), 0);
  EXPECT_TRUE(cache.check_invariants().ok()) << cache.check_invariants().to_string();
}

INSTANTIATE_TEST_SUITE_P(Pools, SchedulerHybridCaseTest,
                         ::testing::Values(HybridCase{4 * 32 + 1, 256}, HybridCase{4 * 32 + 1, 16},
                                           HybridCase{19, 256}, HybridCase{19, 16}));

}  // namespace
}  // namespace folio
