// The Vulkan backend's runtime on the test device (lavapipe on CI machines):
// device memory as views, transfers, kernel-reported data errors, and the
// forward context's explicit transfers when an op falls back to the CPU.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "backend/buffer_type.h"
#include "backend/device_memory.h"
#include "backend/op.h"
#include "backend/vulkan/vulkan_backend.h"
#include "model/forward_context.h"
#include "vulkan_test_device.h"

namespace folio {
namespace vulkan_backend_test {

std::unique_ptr<Buffer> alloc(Backend& dev, size_t bytes) {
  Result<std::unique_ptr<Buffer>> b = dev.default_buffer_type().alloc(bytes);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? std::move(b).value() : nullptr;
}

TEST(VulkanBackend, DeviceMemoryIsViewsTheHostDoesNotOwn) {
  FOLIO_VULKAN_OR_SKIP(dev);
  auto buf = alloc(*dev, 4096);
  ASSERT_NE(buf, nullptr);
  EXPECT_FALSE(buf->is_host());
  const char* p = static_cast<const char*>(buf->data());
  EXPECT_EQ(lookup_device_address(p + 100).owner, dev);
  EXPECT_FALSE(is_host_address(p + 4095));
  EXPECT_TRUE(dev->can_access(p + 17));
  std::vector<int> host(8);
  EXPECT_TRUE(is_host_address(host.data()));
  EXPECT_FALSE(dev->can_access(host.data()));
}

TEST(VulkanBackend, WriteCopyFillReadRoundTrip) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr size_t n = 3 << 20;  // several staging pieces' worth is not needed; odd sizes are
  auto buf = alloc(*dev, n);
  ASSERT_NE(buf, nullptr);
  std::vector<uint8_t> src(n);
  std::iota(src.begin(), src.end(), 0);
  ASSERT_TRUE(buf->write(0, src.data(), n).ok());
  ASSERT_TRUE(buf->copy(1 << 20, 0, 1001).ok());  // bytes 0..1000 again at 1 MiB
  ASSERT_TRUE(buf->fill_zero(2 << 20, 7).ok());   // unaligned size: through a write
  std::vector<uint8_t> got(n);
  ASSERT_TRUE(buf->read(0, got.data(), n).ok());
  std::vector<uint8_t> want = src;
  std::memcpy(want.data() + (1 << 20), src.data(), 1001);
  std::memset(want.data() + (2 << 20), 0, 7);
  EXPECT_EQ(got, want);
  EXPECT_FALSE(buf->copy(10, 0, 100).ok());  // overlapping ranges are refused
  EXPECT_FALSE(buf->read(n - 4, got.data(), 8).ok());
}

TEST(VulkanBackend, KernelDataErrorsSurfaceAtSynchronizeAndLeaveTheDeviceUsable) {
  FOLIO_VULKAN_OR_SKIP(dev);
  // get_rows of a 4 x 3 F32 table with ids {1, 7}: 7 is out of range.
  auto table = alloc(*dev, 4 * 3 * 4), ids = alloc(*dev, 8), out = alloc(*dev, 4 * 2 * 4);
  const std::vector<float> rows{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  ASSERT_TRUE(table->write(0, rows.data(), rows.size() * 4).ok());
  Op op;
  op.kind = OpKind::kGetRows;
  op.src[0] = TensorView::contiguous(table->data(), DType::F32, {4, 3});
  op.src[1] = TensorView::contiguous(ids->data(), DType::I32, {2});
  op.dst = TensorView::contiguous(out->data(), DType::F32, {4, 2});
  const std::vector<int32_t> bad{1, 7}, good{2, 0};
  ASSERT_TRUE(ids->write(0, bad.data(), 8).ok());
  ASSERT_TRUE(dev->run(op).ok());  // recorded; the kernel runs at the wait
  Status s = dev->synchronize();
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
  ASSERT_TRUE(ids->write(0, good.data(), 8).ok());
  ASSERT_TRUE(dev->run(op).ok());
  ASSERT_TRUE(dev->synchronize().ok());
  std::vector<float> got(8);
  ASSERT_TRUE(out->read(0, got.data(), 32).ok());
  EXPECT_EQ(got, (std::vector<float>{20, 21, 22, 23, 0, 1, 2, 3}));
}

// The fused state ops check their slots in a dispatch before the main one:
// an id outside the pool (OutOfRange) or a destination slot used twice
// (InvalidArgument) leaves the pool's bytes as they were.
TEST(VulkanBackend, FusedStateOpsCheckSlotsBeforeWritingAnything) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t kWidth = 4, kChannels = 8, kSlots = 3, kSeq = 2;
  auto x = alloc(*dev, kChannels * kSeq * 4), w = alloc(*dev, kWidth * kChannels * 4);
  auto pool = alloc(*dev, (kWidth - 1) * kChannels * kSlots * 4);
  auto ids = alloc(*dev, kSeq * 4), dsts = alloc(*dev, kSeq * 4);
  auto out = alloc(*dev, kChannels * kSeq * 4);
  std::vector<float> pool_bytes((kWidth - 1) * kChannels * kSlots);
  std::iota(pool_bytes.begin(), pool_bytes.end(), 1.0f);
  const std::vector<float> ones(kWidth * kChannels, 1.0f);
  ASSERT_TRUE(pool->write(0, pool_bytes.data(), pool_bytes.size() * 4).ok());
  ASSERT_TRUE(x->write(0, ones.data(), kChannels * kSeq * 4).ok());
  ASSERT_TRUE(w->write(0, ones.data(), ones.size() * 4).ok());
  Op op;
  op.kind = OpKind::kSsmConvUpdate;
  op.params = SsmConvParams{true};
  op.src[0] = TensorView::contiguous(x->data(), DType::F32, {kChannels, kSeq});
  op.src[1] = TensorView::contiguous(w->data(), DType::F32, {kWidth, kChannels});
  op.src[3] = TensorView::contiguous(pool->data(), DType::F32, {kWidth - 1, kChannels, kSlots});
  op.src[4] = TensorView::contiguous(ids->data(), DType::I32, {kSeq});
  op.src[5] = TensorView::contiguous(dsts->data(), DType::I32, {kSeq});
  op.dst = TensorView::contiguous(out->data(), DType::F32, {kChannels, kSeq});
  op.dst2 = op.src[3];
  ASSERT_TRUE(dev->supports_op(op));
  struct Slots {
    std::vector<int32_t> ids, dsts;
    StatusCode want;
  };
  const Slots bad[] = {{{0, 3}, {1, 2}, StatusCode::kOutOfRange},
                       {{0, 1}, {2, -1}, StatusCode::kOutOfRange},
                       {{0, 1}, {2, 2}, StatusCode::kInvalidArgument}};
  for (const Slots& b : bad) {
    ASSERT_TRUE(ids->write(0, b.ids.data(), kSeq * 4).ok());
    ASSERT_TRUE(dsts->write(0, b.dsts.data(), kSeq * 4).ok());
    ASSERT_TRUE(dev->run(op).ok());
    const Status st = dev->synchronize();
    EXPECT_EQ(st.code(), b.want) << st.to_string();
    std::vector<float> got(pool_bytes.size());
    ASSERT_TRUE(pool->read(0, got.data(), got.size() * 4).ok());
    EXPECT_EQ(got, pool_bytes);
  }
  // Destinations = ids: a repeated id is a destination used twice.
  Op ids_only = op;
  ids_only.src[5] = TensorView{};
  const std::vector<int32_t> twice{1, 1};
  ASSERT_TRUE(ids->write(0, twice.data(), kSeq * 4).ok());
  ASSERT_TRUE(dev->run(ids_only).ok());
  EXPECT_EQ(dev->synchronize().code(), StatusCode::kInvalidArgument);
  // A good op after the errors: slot 2 receives slot 0's newest taps and x.
  const std::vector<int32_t> good_ids{0, 1}, good_dsts{2, 0};
  ASSERT_TRUE(ids->write(0, good_ids.data(), kSeq * 4).ok());
  ASSERT_TRUE(dsts->write(0, good_dsts.data(), kSeq * 4).ok());
  ASSERT_TRUE(dev->run(op).ok());
  ASSERT_TRUE(dev->synchronize().ok());
  std::vector<float> got(pool_bytes.size());
  ASSERT_TRUE(pool->read(0, got.data(), got.size() * 4).ok());
  const int64_t slot = (kWidth - 1) * kChannels;
  for (int64_t c = 0; c < kChannels; ++c) {
    const float* old0 = &pool_bytes[c * (kWidth - 1)];
    const float* new2 = &got[2 * slot + c * (kWidth - 1)];
    EXPECT_EQ(new2[0], old0[1]);
    EXPECT_EQ(new2[1], old0[2]);
    EXPECT_EQ(new2[2], 1.0f);
  }
}

// x + y -> a, x * y -> m (independent: one barrier stage), then a + m -> r
// (reads both: a barrier). Returns r, and checks what the stream recorded.
std::vector<float> add_mul_add(Backend& dev, const std::vector<float>& x,
                               const std::vector<float>& y) {
  const int64_t n = static_cast<int64_t>(x.size());
  const size_t bytes = x.size() * 4;
  auto bx = alloc(dev, bytes), by = alloc(dev, bytes), ba = alloc(dev, bytes),
       bm = alloc(dev, bytes), br = alloc(dev, bytes);
  EXPECT_TRUE(bx->write(0, x.data(), bytes).ok());
  EXPECT_TRUE(by->write(0, y.data(), bytes).ok());
  EXPECT_TRUE(dev.synchronize().ok());
  auto view = [&](Buffer& b) { return TensorView::contiguous(b.data(), DType::F32, {n}); };
  Op op;
  op.kind = OpKind::kAdd;
  op.src[0] = view(*bx);
  op.src[1] = view(*by);
  op.dst = view(*ba);
  const StreamCounters before = *dev.stream_counters();
  EXPECT_TRUE(dev.run(op).ok());
  op.kind = OpKind::kMul;
  op.dst = view(*bm);
  EXPECT_TRUE(dev.run(op).ok());
  op.kind = OpKind::kAdd;
  op.src[0] = view(*ba);
  op.src[1] = view(*bm);
  op.dst = view(*br);
  EXPECT_TRUE(dev.run(op).ok());
  const StreamCounters after = *dev.stream_counters();
  EXPECT_EQ(after.dispatches - before.dispatches, 3u);
  // The first command after the wait waits for everything before it; the
  // multiply shares its stage; the last add waits for both.
  EXPECT_EQ(after.barriers - before.barriers, 2u);
  std::vector<float> r(x.size());
  EXPECT_TRUE(br->read(0, r.data(), bytes).ok());
  return r;
}

TEST(VulkanBackend, BarriersOnlyWhereCommandsOverlapWithPushedOrAllocatedDescriptors) {
  FOLIO_VULKAN_OR_SKIP(dev);
  std::vector<float> x(1000), y(1000), want(1000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.25f * static_cast<float>(i) - 7.0f;
    y[i] = 1.5f - 0.125f * static_cast<float>(i % 17);
    want[i] = (x[i] + y[i]) + (x[i] * y[i]);
  }
  EXPECT_EQ(add_mul_add(*dev, x, y), want);
#if defined(FOLIO_HAVE_VULKAN)  // VulkanBackend itself: where the runtime is built
  // The same on a second backend that writes a descriptor set per dispatch
  // instead of pushing descriptors (the path of devices without
  // VK_KHR_push_descriptor).
  Result<std::unique_ptr<vulkan::VulkanBackend>> sets =
      vulkan::VulkanBackend::create(-1, /*allow_push_descriptors=*/false);
  ASSERT_TRUE(sets.ok()) << sets.status().to_string();
  EXPECT_FALSE((*sets)->push_descriptors());
  EXPECT_EQ(add_mul_add(**sets, x, y), want);
  if (auto* vk = dynamic_cast<vulkan::VulkanBackend*>(dev)) {
    EXPECT_EQ(vk->push_descriptors(), vk->info().caps.push_descriptor);
  }
#endif
}

#if defined(FOLIO_HAVE_VULKAN)
// Device timing charges every command of the stream to its pipeline (or to
// "(transfer)"), runs steps live instead of replaying them, and changes no
// result.
TEST(VulkanBackend, DeviceTimingChargesEveryCommandToItsKernel) {
  FOLIO_VULKAN_OR_SKIP(dev);
  (void)dev;
  Result<std::unique_ptr<vulkan::VulkanBackend>> made = vulkan::VulkanBackend::create(-1);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  vulkan::VulkanBackend& vk = **made;
  const Status on = vk.set_device_timing(true);
  if (on.code() == StatusCode::kUnsupported) GTEST_SKIP() << "hardware: " << on.message();
  ASSERT_TRUE(on.ok()) << on.to_string();
  EXPECT_FALSE(vk.replay_enabled());
  std::vector<float> x(4096), y(4096), want(4096);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = 0.5f * static_cast<float>(i % 301) - 3.0f;
    y[i] = 2.0f - 0.25f * static_cast<float>(i % 13);
    want[i] = (x[i] + y[i]) + (x[i] * y[i]);
  }
  EXPECT_EQ(add_mul_add(vk, x, y), want);
  const std::vector<vulkan::DeviceTimeRow> rows = vk.device_times();
  uint64_t dispatches = 0, transfers = 0;
  for (const vulkan::DeviceTimeRow& r : rows) {
    EXPECT_GE(r.ns, 0.0) << r.name;
    EXPECT_GT(r.count, 0u) << r.name;
    if (r.name == "(transfer)")
      transfers += r.count;
    else
      dispatches += r.count;
  }
  EXPECT_EQ(dispatches, 3u);  // the two adds and the multiply
  EXPECT_GE(transfers, 3u);   // two uploads, at least one read-back
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].ns, rows[i].ns);
  ASSERT_TRUE(vk.set_device_timing(false).ok());
  EXPECT_TRUE(vk.device_times().empty());
  EXPECT_EQ(vk.replay_enabled(), vk.push_descriptors());
}
#endif

// Transfers are ordered like dispatches: an upload into a tensor a recorded
// dispatch reads waits for it (write after read), the next reader waits for
// the upload (read after write), and uploads to disjoint tensors share a
// stage. The barrier counts say so where lavapipe's serial execution would
// hide a missing one.
TEST(VulkanBackend, UploadsWaitOnlyForTheDispatchesTheyOverlap) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t n = 256;
  const size_t bytes = n * 4;
  auto bx = alloc(*dev, bytes), by = alloc(*dev, bytes), ba = alloc(*dev, bytes),
       bb = alloc(*dev, bytes), bz = alloc(*dev, bytes);
  std::vector<float> x(n), y(n), x2(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 0.5f;
    x2[i] = -static_cast<float>(2 * i);
  }
  ASSERT_TRUE(bx->write(0, x.data(), bytes).ok());
  ASSERT_TRUE(by->write(0, y.data(), bytes).ok());
  ASSERT_TRUE(dev->synchronize().ok());
  auto view = [&](Buffer& b) { return TensorView::contiguous(b.data(), DType::F32, {n}); };
  Op op;
  op.kind = OpKind::kAdd;
  op.src[0] = view(*bx);
  op.src[1] = view(*by);
  op.dst = view(*ba);
  const StreamCounters c0 = *dev->stream_counters();
  ASSERT_TRUE(dev->run(op).ok());                    // first after the wait: 1 barrier
  ASSERT_TRUE(bz->write(0, y.data(), bytes).ok());   // disjoint from the add: none
  const StreamCounters c1 = *dev->stream_counters();
  ASSERT_TRUE(bx->write(0, x2.data(), bytes).ok());  // the add reads x: a barrier
  const StreamCounters c2 = *dev->stream_counters();
  op.dst = view(*bb);
  ASSERT_TRUE(dev->run(op).ok());                    // reads the new x: a barrier
  const StreamCounters c3 = *dev->stream_counters();
  EXPECT_EQ(c1.barriers - c0.barriers, 1u);
  EXPECT_EQ(c2.barriers - c1.barriers, 1u);
  EXPECT_EQ(c3.barriers - c2.barriers, 1u);
  EXPECT_EQ(c3.dispatches - c0.dispatches, 2u);
  std::vector<float> a(n), b(n);
  ASSERT_TRUE(ba->read(0, a.data(), bytes).ok());
  ASSERT_TRUE(bb->read(0, b.data(), bytes).ok());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(a[i], x[i] + 0.5f) << i;
    EXPECT_EQ(b[i], x2[i] + 0.5f) << i;
  }
}

TEST(VulkanBackend, ForwardContextMovesOperandsOfOpsTheDeviceDeclines) {
  FOLIO_VULKAN_OR_SKIP(dev);
  auto ctx = model::ForwardContext::with_device(dev, 1);
  ctx->begin();
  // A device-resident weight and a host activation: rms_norm runs where the
  // weight is; l2-normalised... then kSdpa (no device kernel) must run on the
  // CPU with its device inputs copied over.
  auto w = alloc(*dev, 8 * 4);
  const std::vector<float> ones(8, 1.0f);
  ASSERT_TRUE(w->write(0, ones.data(), 32).ok());
  const TensorView weight = TensorView::contiguous(w->data(), DType::F32, {8});
  TensorView x = ctx->f32(8, 2);
  for (int i = 0; i < 16; ++i) static_cast<float*>(x.data)[i] = static_cast<float>(i % 5) - 2.0f;
  const TensorView y = ctx->rms_norm(x, weight, 1e-6f);  // on the device (its weight's home)
  ASSERT_TRUE(ctx->ok()) << ctx->status().to_string();
  EXPECT_TRUE(dev->can_access(y.data));
  const TensorView s = ctx->scale(y, 2.0f);
  Result<TensorView> host = ctx->to_host(s);
  ASSERT_TRUE(host.ok()) << host.status().to_string();
  for (int r = 0; r < 2; ++r) {
    double ss = 0;
    for (int i = 0; i < 8; ++i) ss += std::pow(static_cast<float*>(x.data)[r * 8 + i], 2);
    const double inv = 1.0 / std::sqrt(ss / 8 + 1e-6);
    for (int i = 0; i < 8; ++i) {
      EXPECT_NEAR(static_cast<float*>(host->data)[r * 8 + i],
                  2.0 * static_cast<float*>(x.data)[r * 8 + i] * inv, 1e-5);
    }
  }
}

}  // namespace
}  // namespace folio
