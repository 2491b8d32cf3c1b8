// The scheduler with every layer, the KV cache and (for hybrid models) the
// recurrent-state pool on the Vulkan device (lavapipe on CI machines):
// concurrent requests give exactly the tokens of solo runs on the same
// device, also when a small pool forces preemption, prefixes are shared,
// choices of one request share its blocks (copy-on-write on the device), and
// no block leaks; hybrid models speculate exactly there too. The scheduler
// is host-side: only where the memory lives changes.
#include <gtest/gtest.h>

#include <filesystem>

#include "cache/kv_cache.h"
#include "engine/scheduler.h"
#include "scheduler_fixture.h"
#include "vulkan_test_device.h"

namespace folio {
namespace scheduler_device_test {

using testing_sched::Collected;
using testing_sched::SoloRun;

struct DeviceCase {
  const char* file;   // in tests/data's models, or under tests/model/refdata
  int32_t n_blocks;   // the scheduler's pool (blocks of 8)
  int64_t chunk_cap;  // prefill chunk cap
  // Solo runs on a contiguous cache: the paged one must then give the same
  // bits (sliding-window pages dropping blocks included).
  bool solo_contiguous = false;
};

std::string model_path(const char* file) {
  const std::string shared = testing_sched::kModels + file;
  return std::filesystem::exists(shared)
             ? shared
             : std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/" + file;
}

std::string case_name(const ::testing::TestParamInfo<DeviceCase>& info) {
  std::string s = std::string(info.param.file) + "_blocks" + std::to_string(info.param.n_blocks) +
                  "_chunk" + std::to_string(info.param.chunk_cap);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

class SchedulerDeviceTest : public testing_sched::SchedulerFixture,
                            public ::testing::WithParamInterface<DeviceCase> {
 protected:
  void SetUp() override {}

  // The model with every layer and the output head on `device`.
  void load_on(Backend* device) {
    model::LoadOptions lo;
    lo.offload_type = &device->default_buffer_type();
    auto m = model::Model::load(model_path(GetParam().file), lo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    ctx_ = model::ForwardContext::with_device(device, 2);
    solo_ctx_ = model::ForwardContext::with_device(device, 1);
    greedy_.temperature = 0.0f;
    const BufferType* type = &device->default_buffer_type();
    alloc_ = [type](size_t bytes) { return type->alloc(bytes); };
  }

  Result<std::unique_ptr<cache::KvCache>> device_cache(int32_t n_blocks, int max_seqs, int n_seq,
                                                      bool contiguous = false,
                                                      int draft_slots = 0) {
    cache::KvCacheOptions o;
    o.storage = contiguous ? cache::KvStorage::kContiguous : cache::KvStorage::kPaged;
    o.type = DType::F32;
    o.block_size = 8;
    o.n_ctx = 256;
    o.n_blocks = n_blocks;
    o.n_seq = n_seq;
    o.max_seqs = max_seqs;
    o.max_step_tokens = 256;
    o.draft_slots = draft_slots;
    o.alloc = alloc_;
    return model_->make_cache(o);
  }

  SoloRun solo_on_device(const std::vector<int32_t>& prompt, const SamplingParams& params) {
    auto cache = device_cache(0, 1, 1, GetParam().solo_contiguous);
    EXPECT_TRUE(cache.ok()) << cache.status().to_string();
    if (!cache.ok()) return {};
    return solo_in(**cache, prompt, params);
  }

  cache::CacheAllocator alloc_;
};

TEST_P(SchedulerDeviceTest, ConcurrentRequestsEqualSoloRunsAndNothingLeaks) {
  FOLIO_VULKAN_OR_SKIP(vk);
  load_on(vk);
  if (HasFatalFailure()) return;
  const DeviceCase dc = GetParam();
  constexpr int kSeqs = 4;
  constexpr size_t kRequests = 6;
  auto c = device_cache(dc.n_blocks, kSeqs, 0);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cache::KvCache& cache = **c;

  const auto ps = prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 10;
  std::vector<SoloRun> want;
  for (size_t i = 0; i < kRequests; ++i) want.push_back(solo_on_device(ps[i], params));

  SchedulerOptions so;
  so.max_seqs = kSeqs;
  so.max_batch_tokens = 256;
  so.ubatch = 256;
  so.chunk_cap = dc.chunk_cap;
  Scheduler sched(*model_, *tok_, *ctx_, cache, so);
  ASSERT_TRUE(sched.start().ok());
  std::vector<std::unique_ptr<Collected>> got;
  for (size_t i = 0; i < kRequests; ++i) {
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[i];
    req.params = params;
    ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
  }
  // Two choices sharing one prompt's blocks: the first decode write into the
  // shared partial block copies it on the device (copy-on-write), and a
  // hybrid model forks the recurrent state; greedy, both equal the solo run.
  const std::vector<int32_t>& forked = ps[kRequests];
  const SoloRun want_forked = solo_on_device(forked, params);
  Collected two(2);
  {
    GenerationRequest req;
    req.prompt = forked;
    req.params = params;
    req.n = 2;
    ASSERT_TRUE(sched.submit(req, two.callbacks()).ok());
  }
  sched.wait_idle();
  for (size_t i = 0; i < kRequests; ++i) {
    std::lock_guard<std::mutex> lock(got[i]->mu);
    EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
    expect_equal(*got[i], want[i], 0, "prompt " + std::to_string(i));
  }
  {
    std::lock_guard<std::mutex> lock(two.mu);
    EXPECT_TRUE(two.result.status.ok()) << two.result.status.to_string();
    expect_equal(two, want_forked, 0, "n = 2, choice 0");
    expect_equal(two, want_forked, 1, "n = 2, choice 1");
  }
  const ServingMetrics::Snapshot m = sched.metrics();
  if (dc.n_blocks < 40) {
    EXPECT_GT(m.preemptions, 0u);
  }
  EXPECT_GT(m.prefix_hit_tokens, 0u);  // the shared prefix
  ASSERT_NE(cache.block_manager(), nullptr);
  EXPECT_EQ(cache.block_manager()->pool().n_used(), 0);
  const Status inv = cache.block_manager()->check_invariants();
  EXPECT_TRUE(inv.ok()) << inv.to_string();
}

// Dense (tiny llama) and hybrid (tiny qwen35: DeltaNet state and prefix
// checkpoints on the device); a roomy pool with whole prompts, and a pool of
// 19 blocks of 8 with chunked prefill, which preempts; Gemma 3 (sliding-window
// layers in pages of their own) against solo runs on a contiguous cache.
INSTANTIATE_TEST_SUITE_P(Vulkan, SchedulerDeviceTest,
                         ::testing::Values(DeviceCase{"tiny-llama-f32.gguf", 4 * 32 + 1, 256},
                                           DeviceCase{"tiny-llama-f32.gguf", 19, 16},
                                           DeviceCase{"tiny-qwen35-f32.gguf", 4 * 32 + 1, 256},
                                           DeviceCase{"tiny-qwen35-f32.gguf", 19, 16},
                                           DeviceCase{"tiny-gemma3-f32.gguf", 19, 16, true}),
                         case_name);

// Speculation on hybrid models with the recurrent-state pool on the device:
// the draft snapshots are strided copies there, and verify() restores one
// with a device transfer; greedy output equals the solo runs (no drafts),
// in the scheduler and the Generator, with drafts accepted and rejected.
class SchedulerDeviceSpecTest : public SchedulerDeviceTest {};

TEST_P(SchedulerDeviceSpecTest, HybridSpeculationEqualsSoloRuns) {
  FOLIO_VULKAN_OR_SKIP(vk);
  load_on(vk);
  if (HasFatalFailure()) return;
  const DeviceCase dc = GetParam();
  constexpr int kSeqs = 4;
  const auto all = prompts();
  const std::vector<std::vector<int32_t>> ps(all.begin(), all.begin() + 5);
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  std::vector<SoloRun> want;
  for (const auto& p : ps) want.push_back(solo_on_device(p, params));
  const auto n_vocab = static_cast<int32_t>(model_->config().n_vocab);

  auto c = device_cache(dc.n_blocks, kSeqs, 0, false, kSeqs * 4);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  cache::KvCache& cache = **c;
  SchedulerOptions so;
  so.max_seqs = kSeqs;
  so.max_batch_tokens = 256;
  so.ubatch = 256;
  so.chunk_cap = dc.chunk_cap;
  so.spec = testing_sched::spec_oracle(ps, want, n_vocab);
  {
    Scheduler sched(*model_, *tok_, *ctx_, cache, so);
    ASSERT_TRUE(sched.start().ok());
    std::vector<std::unique_ptr<Collected>> got;
    for (size_t i = 0; i < ps.size(); ++i) {
      got.push_back(std::make_unique<Collected>());
      GenerationRequest req;
      req.prompt = ps[i];
      req.params = params;
      ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
    }
    sched.wait_idle();
    for (size_t i = 0; i < ps.size(); ++i) {
      std::lock_guard<std::mutex> lock(got[i]->mu);
      EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
      expect_equal(*got[i], want[i], 0, "prompt " + std::to_string(i));
    }
    const ServingMetrics::Snapshot m = sched.metrics();
    EXPECT_GT(m.spec.accepted_tokens, 0u);
    EXPECT_LT(m.spec.accepted_tokens, m.spec.draft_tokens);
  }
  ASSERT_NE(cache.block_manager(), nullptr);
  EXPECT_EQ(cache.block_manager()->pool().n_used(), 0);

  // The Generator on a contiguous device cache.
  uint64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto solo = device_cache(0, 1, 1, true, 4);
    ASSERT_TRUE(solo.ok()) << solo.status().to_string();
    Generator gen(*model_, *tok_, *solo_ctx_, **solo);
    GenerateOptions go;
    go.n_predict = -1;
    go.spec = testing_sched::spec_oracle(ps, want, n_vocab);
    auto r = gen.generate(ps[i], params, go, [](std::string_view) { return true; });
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->tokens, want[i].tokens) << "prompt " << i;
    drafted += r->spec.draft_tokens;
    accepted += r->spec.accepted_tokens;
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, drafted);
}

// Gated DeltaNet (qwen35), Mamba-2 (granitehybrid) and short conv (lfm2).
INSTANTIATE_TEST_SUITE_P(Vulkan, SchedulerDeviceSpecTest,
                         ::testing::Values(DeviceCase{"tiny-qwen35-f32.gguf", 4 * 32 + 1, 256},
                                           DeviceCase{"tiny-granitehybrid-f32.gguf", 4 * 32 + 1, 16},
                                           DeviceCase{"tiny-lfm2-f32.gguf", 4 * 32 + 1, 16}),
                         case_name);

}  // namespace
}  // namespace folio
