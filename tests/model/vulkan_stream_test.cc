// The Vulkan command stream of a one-sequence decode step of the bundled
// dense llama (SmolLM2 135M Q4_1, every layer, the head and a paged KV
// cache on the device): dispatches and barriers per layer, counted by the
// backend (Backend::stream_counters). A barrier is recorded only where a
// dispatch overlaps unsynchronised work (backend/vulkan/vk_hazards.h), so a
// layer's barriers are its dependency chain: attention norm -> Q/K/V ->
// rope -> K/V cache write -> attention -> output projection -> residual +
// norm -> gate/up -> activation -> down, ten stages for fifteen dispatches.
// The ceilings here are what this stream reaches; fusions (rope + cache
// write, activation into the down projection) are what would lower them to
// the 9 dispatches and 7 barriers per layer.
#include <gtest/gtest.h>

#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "default_model.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace vulkan_stream_test {

StreamCounters difference(const StreamCounters& a, const StreamCounters& b) {
  return {b.dispatches - a.dispatches, b.barriers - a.barriers, b.submits - a.submits};
}

TEST(VulkanStream, DenseLlamaDecodeStepStaysUnderItsCeilings) {
  const std::string path = folio::testing::chat_model_path();
  if (!file_exists(path)) FAIL() << folio::testing::kChatModelHint << ": " << path;
  FOLIO_VULKAN_OR_SKIP(device);
  LoadOptions lo;
  lo.offload_type = &device->default_buffer_type();
  lo.offload_layers = -1;  // every layer and the output head
  Result<std::unique_ptr<Model>> model = Model::load(path, lo);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  ASSERT_EQ(m.config().arch, "llama");
  const int n_layer = m.config().n_layer;

  cache::KvCacheOptions o;
  o.storage = cache::KvStorage::kPaged;
  o.type = DType::F16;
  o.n_ctx = 64;
  o.n_seq = 1;
  const BufferType* type = &device->default_buffer_type();
  o.alloc = [type](size_t bytes) { return type->alloc(bytes); };
  Result<std::unique_ptr<cache::KvCache>> cache = m.make_cache(o);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  auto ctx = ForwardContext::with_device(device, 2);

  cache::Batch batch;
  auto step = [&](int32_t token, int32_t pos) -> StreamCounters {
    const StreamCounters before = *device->stream_counters();
    batch.clear();
    batch.add(token, pos, 0, true);
    Result<TensorView> logits = m.forward(batch, **cache, *ctx);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    return difference(before, *device->stream_counters());
  };
  step(1, 0);  // the prompt; pipelines compile here
  const StreamCounters a = step(42, 1);
  const StreamCounters b = step(7, 2);
  // The same shape records the same stream.
  EXPECT_EQ(a.dispatches, b.dispatches);
  EXPECT_EQ(a.barriers, b.barriers);

  const double dispatches = static_cast<double>(a.dispatches) / n_layer;
  const double barriers = static_cast<double>(a.barriers) / n_layer;
  std::printf("SmolLM2 decode step: %llu dispatches, %llu barriers, %llu submits over %d layers "
              "(%.2f / %.2f per layer)\n",
              static_cast<unsigned long long>(a.dispatches),
              static_cast<unsigned long long>(a.barriers),
              static_cast<unsigned long long>(a.submits), n_layer, dispatches, barriers);
  // Whole step over the layers: the step's own work (uploads of ids and
  // positions, the output norm and head, the logits read-back) included.
  EXPECT_LE(dispatches, 15.2);
  EXPECT_LE(barriers, 10.3);
  // A barrier before every dispatch (the stream before hazard tracking)
  // would be more than one per dispatch.
  EXPECT_LT(a.barriers, a.dispatches);
}

}  // namespace vulkan_stream_test
}  // namespace folio::model::testing
