// The replay log's rules (backend/vulkan/vk_replay.h), without a device:
// which commands count as the same (everything the device sees but where
// their bytes lie), and where a recording places parameter and upload
// bytes. Replay on a device: tests/model/vulkan_replay_test.cc.
#include <gtest/gtest.h>

#include <vector>

#include "backend/vulkan/vk_replay.h"

namespace folio::vulkan {
namespace vulkan_replay_log_test {

// A handle value no device made (a pointer type on 64-bit targets, an
// integer on 32-bit ones: the cast works for both).
VkBuffer fake_buffer(uintptr_t v) { return (VkBuffer)v; }

StreamCommand a_dispatch(const Pipeline* p) {
  StreamCommand c;
  c.kind = CommandKind::kDispatch;
  c.pipeline = p;
  c.n_tensors = 2;
  c.tensors[0] = fake_buffer(0x100);
  c.tensors[1] = fake_buffer(0x200);
  c.groups[0] = 4;
  c.data_bytes = 40;
  c.data_buffer = fake_buffer(0x900);
  c.data_off = 256;
  return c;
}

TEST(VulkanReplayLog, SameDispatchIgnoresWhereItsParametersLie) {
  Pipeline p;
  const std::vector<AccessRange> r = {{0x1000, 0x1040, false}, {0x2000, 0x2010, true}};
  StreamCommand a = a_dispatch(&p);
  StreamCommand b = a_dispatch(&p);
  b.data_buffer = fake_buffer(0x901);
  b.data_off = 512;
  b.barrier_before = true;  // logged facts are not compared
  b.ends_piece = true;
  EXPECT_TRUE(same_command(a, r, b, r));
}

TEST(VulkanReplayLog, AnyDifferenceTheDeviceSeesIsAnotherCommand) {
  Pipeline p, q;
  const std::vector<AccessRange> r = {{0x1000, 0x1040, false}, {0x2000, 0x2010, true}};
  const StreamCommand a = a_dispatch(&p);
  auto differs = [&](StreamCommand b, std::vector<AccessRange> rb) {
    return !same_command(a, r, b, rb);
  };
  StreamCommand b = a_dispatch(&q);
  EXPECT_TRUE(differs(b, r)) << "pipeline";
  b = a_dispatch(&p);
  b.groups[1] = 2;
  EXPECT_TRUE(differs(b, r)) << "workgroups";
  b = a_dispatch(&p);
  b.tensors[1] = fake_buffer(0x300);
  EXPECT_TRUE(differs(b, r)) << "bound buffer";
  b = a_dispatch(&p);
  b.data_bytes = 44;
  EXPECT_TRUE(differs(b, r)) << "parameter size";
  b = a_dispatch(&p);
  b.reads_errors = true;
  EXPECT_TRUE(differs(b, r)) << "error word read";
  EXPECT_TRUE(differs(a_dispatch(&p), {{0x1000, 0x1050, false}, {0x2000, 0x2010, true}}))
      << "a range grew (a longer cache)";
  EXPECT_TRUE(differs(a_dispatch(&p), {{0x1000, 0x1040, false}, {0x2000, 0x2010, false}}))
      << "read instead of written";
  EXPECT_TRUE(differs(a_dispatch(&p), {{0x1000, 0x1040, false}})) << "a range fewer";
  StreamCommand up;
  up.kind = CommandKind::kUpload;
  EXPECT_TRUE(differs(up, r)) << "kind";
}

TEST(VulkanReplayLog, TransfersCompareTheirEnds) {
  StreamCommand a;
  a.kind = CommandKind::kCopy;
  a.src = fake_buffer(0x10);
  a.dst = fake_buffer(0x20);
  a.src_off = 64;
  a.dst_off = 128;
  a.size = 32;
  const std::vector<AccessRange> r = {{0x40, 0x60, false}, {0x80, 0xa0, true}};
  StreamCommand b = a;
  EXPECT_TRUE(same_command(a, r, b, r));
  b.dst_off = 160;
  EXPECT_FALSE(same_command(a, r, b, r));
  // An upload's staging offset is where its bytes lie: not compared.
  StreamCommand u;
  u.kind = CommandKind::kUpload;
  u.dst = fake_buffer(0x20);
  u.size = 16;
  u.data_bytes = 16;
  StreamCommand v = u;
  v.data_off = 4096;
  EXPECT_TRUE(same_command(u, {}, v, {}));
  v.size = v.data_bytes = 20;
  EXPECT_FALSE(same_command(u, {}, v, {}));
}

TEST(VulkanReplayLog, RecordingPlacesBytesAlignedUntilFull) {
  Recording rec;
  rec.params.size = 1024;
  rec.staging.size = 64;
  uint64_t off = 1;
  ASSERT_TRUE(rec.place_params(40, &off));
  EXPECT_EQ(off, 0u);
  ASSERT_TRUE(rec.place_params(4, &off));
  EXPECT_EQ(off, 256u);  // a storage-buffer offset every device accepts
  ASSERT_TRUE(rec.place_params(512, &off));
  EXPECT_EQ(off, 512u);
  EXPECT_FALSE(rec.place_params(4, &off));  // 1024 reached: the capture fails
  ASSERT_TRUE(rec.place_staging(10, &off));
  EXPECT_EQ(off, 0u);
  ASSERT_TRUE(rec.place_staging(20, &off));
  EXPECT_EQ(off, 16u);
  EXPECT_FALSE(rec.place_staging(40, &off));
  const std::vector<AccessRange> r = {{0x10, 0x20, true}};
  rec.log(StreamCommand{}, r);
  rec.log(StreamCommand{}, r);
  ASSERT_EQ(rec.commands.size(), 2u);
  EXPECT_EQ(rec.commands[1].range_first, 1u);
  EXPECT_EQ(rec.ranges_of(rec.commands[1]).size(), 1u);
}

}  // namespace vulkan_replay_log_test
}  // namespace folio::vulkan
