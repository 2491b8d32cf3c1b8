// Replayed decode steps on the Vulkan device (backend/vulkan/vk_replay.h):
// a decode step whose commands repeat replays the recording of an earlier
// one, with only its parameters and uploads written anew, and its logits are
// the live recording's bit for bit. The same steps run twice on the device,
// once with replay disabled (every step recorded live) and once enabled:
// several decode steps at different positions, the paged cache growing
// across a block boundary (the block table upload grows: a new recording),
// a step of two sequences in between (a new shape: recorded live, then
// replayed when it comes again) and back, for the dense llama, the hybrid
// qwen35 (DeltaNet state pools on the device too) and a MoE llama.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/vulkan/vulkan_backend.h"
#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace vulkan_replay_test {

struct Token {
  int32_t id, seq;
};

struct Run {
  std::vector<std::vector<float>> rows;  // every step's logits rows, in order
  std::vector<StreamCounters> per_step;  // each step's counters
  StreamCounters total;
};

StreamCounters diff(const StreamCounters& a, const StreamCounters& b) {
  return {b.dispatches - a.dispatches, b.barriers - a.barriers, b.submits - a.submits,
          b.recorded_steps - a.recorded_steps, b.replayed_steps - a.replayed_steps};
}

// Runs `steps` (token ids modulo the vocabulary, positions counted per
// sequence) on a fresh paged F16 cache
// of two sequences with 16-position blocks.
Run run_steps(const Model& m, Backend* device, const std::vector<std::vector<Token>>& steps) {
  Run run;
  cache::KvCacheOptions o;
  o.storage = cache::KvStorage::kPaged;
  o.type = DType::F16;
  o.n_ctx = 64;
  o.n_seq = 2;
  o.max_checkpoints = 0;
  const BufferType* type = &device->default_buffer_type();
  o.alloc = [type](size_t bytes) { return type->alloc(bytes); };
  Result<std::unique_ptr<cache::KvCache>> cache = m.make_cache(o);
  EXPECT_TRUE(cache.ok()) << cache.status().to_string();
  if (!cache.ok()) return run;
  EXPECT_EQ((*cache)->block_size(), 16);
  auto ctx = ForwardContext::with_device(device, 2);
  int32_t pos[2] = {0, 0};
  cache::Batch batch;
  const StreamCounters start = *device->stream_counters();
  for (const std::vector<Token>& step : steps) {
    const StreamCounters before = *device->stream_counters();
    batch.clear();
    for (const Token& t : step) {
      batch.add(t.id % static_cast<int32_t>(m.config().n_vocab), pos[t.seq]++, t.seq, true);
    }
    Result<TensorView> logits = m.forward(batch, **cache, *ctx);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    if (!logits.ok()) return run;
    for (size_t i = 0; i < step.size(); ++i) {
      const float* r = logits->row<const float>(static_cast<int64_t>(i));
      run.rows.emplace_back(r, r + logits->ne[0]);
    }
    run.per_step.push_back(diff(before, *device->stream_counters()));
  }
  run.total = diff(start, *device->stream_counters());
  return run;
}

// A prompt of three tokens, then one-sequence decode steps across the
// 16-position block boundary, with steps of both sequences at two places.
std::vector<std::vector<Token>> decode_steps() {
  std::vector<std::vector<Token>> steps;
  steps.push_back({{1, 0}, {17, 0}, {5, 0}});
  for (int i = 0; i < 20; ++i) {
    if (i == 6 || i == 7 || i == 15) {
      steps.push_back({{static_cast<int32_t>(30 + i), 0}, {static_cast<int32_t>(60 + i), 1}});
    } else {
      steps.push_back({{static_cast<int32_t>(3 + 7 * i), 0}});
    }
  }
  return steps;
}

void expect_replay_exact(const std::string& path, const char* arch) {
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  auto* vk = dynamic_cast<vulkan::VulkanBackend*>(device);
  ASSERT_NE(vk, nullptr);
  if (!vk->push_descriptors()) {
    GTEST_SKIP() << "hardware: the device lacks VK_KHR_push_descriptor (replay needs it)";
  }
  LoadOptions lo;
  lo.offload_type = &device->default_buffer_type();
  lo.offload_layers = -1;  // every layer and the output head
  Result<std::unique_ptr<Model>> model = Model::load(path, lo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  ASSERT_EQ(m.config().arch, arch);
  const std::vector<std::vector<Token>> steps = decode_steps();

  vk->set_replay_enabled(false);
  const Run live = run_steps(m, device, steps);
  vk->set_replay_enabled(true);
  const Run replayed = run_steps(m, device, steps);
  const bool env_off = !vk->replay_enabled();  // FOLIO_VULKAN_REPLAY=0
  vk->set_replay_enabled(true);

  ASSERT_EQ(live.rows.size(), replayed.rows.size());
  for (size_t i = 0; i < live.rows.size(); ++i) {
    ASSERT_EQ(live.rows[i].size(), replayed.rows[i].size());
    EXPECT_EQ(std::memcmp(live.rows[i].data(), replayed.rows[i].data(),
                          live.rows[i].size() * sizeof(float)),
              0)
        << "logits row " << i << " differ between live recording and replay";
  }
  // The device runs the same stream either way.
  ASSERT_EQ(live.per_step.size(), replayed.per_step.size());
  for (size_t i = 0; i < live.per_step.size(); ++i) {
    EXPECT_EQ(live.per_step[i].dispatches, replayed.per_step[i].dispatches) << "step " << i;
    EXPECT_EQ(live.per_step[i].barriers, replayed.per_step[i].barriers) << "step " << i;
    EXPECT_EQ(live.per_step[i].submits, replayed.per_step[i].submits) << "step " << i;
  }
  EXPECT_EQ(live.total.recorded_steps, 0u);
  EXPECT_EQ(live.total.replayed_steps, 0u);
  std::printf("%s: %llu of %zu steps' segments recorded, %llu replayed\n", arch,
              static_cast<unsigned long long>(replayed.total.recorded_steps), steps.size(),
              static_cast<unsigned long long>(replayed.total.replayed_steps));
  if (env_off) return;
  // The prompt is no decode step; the first one-sequence step records, and
  // so do the first step past the block boundary and the first two-sequence
  // step; the second two-sequence step right after the first replays it.
  const auto& st = replayed.per_step;
  EXPECT_EQ(st[0].recorded_steps + st[0].replayed_steps, 0u);
  EXPECT_GE(st[1].recorded_steps, 1u);
  EXPECT_EQ(st[1].replayed_steps, 0u);
  EXPECT_EQ(st[2].recorded_steps, 0u);
  EXPECT_EQ(st[2].replayed_steps, st[1].recorded_steps);
  EXPECT_GE(st[7].recorded_steps, 1u);  // two sequences: a new shape
  EXPECT_EQ(st[8].recorded_steps, 0u);  // ... the same again
  EXPECT_GE(st[8].replayed_steps, 1u);
  EXPECT_EQ(st[9].recorded_steps, 0u);  // one sequence again
  EXPECT_GE(st[9].replayed_steps, 1u);
  EXPECT_GE(replayed.total.replayed_steps, 12u);
  EXPECT_LE(replayed.total.recorded_steps, 8u);
}

TEST(VulkanReplay, DenseLlamaReplayedStepsAreLiveStepsBitForBit) {
  expect_replay_exact(shared_models_dir() + "/tiny-llama-f32.gguf", "llama");
}

TEST(VulkanReplay, HybridReplayedStepsAreLiveStepsBitForBit) {
  expect_replay_exact(shared_models_dir() + "/tiny-qwen35-f32.gguf", "qwen35");
}

// A MoE layer routes on the device (kMoeRoute: no read-back), so its step
// is one segment as a dense one and replays alike, whatever experts the
// routing picks (mul_mat_id reads their ids on the device).
TEST(VulkanReplay, MoeReplayedStepsAreLiveStepsBitForBit) {
  expect_replay_exact(local_refdata_dir() + "/llama-archs/llama-moe.gguf", "llama");
}

}  // namespace vulkan_replay_test
}  // namespace folio::model::testing
