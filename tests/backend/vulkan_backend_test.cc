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
#include "model/forward_context.h"
#include "vulkan_test_device.h"

namespace folio {
namespace {

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
