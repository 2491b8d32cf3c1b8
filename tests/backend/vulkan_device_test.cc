// What the Vulkan runtime reads off each device (backend/vulkan/vk_device.h):
// the capabilities the kernels' selection and shapes follow, and their
// environment overrides.
#include "backend/vulkan/vk_device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "vulkan_test_device.h"

namespace folio::vulkan {
namespace vulkan_device_test {

// Restores environment variable `name` as it was when made.
class EnvRestorer {
 public:
  explicit EnvRestorer(const char* name) : name_(name) {
    const char* v = std::getenv(name);
    had_ = v != nullptr;
    if (had_) value_ = v;
  }
  ~EnvRestorer() {
    if (had_) {
      setenv(name_, value_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string value_;
};

// What list_devices() reports with environment variable `name` set to
// `value` (nullptr: unset).
std::vector<DeviceInfo> devices_with(const char* name, const char* value) {
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
  Result<std::vector<DeviceInfo>> list = list_devices();
  EXPECT_TRUE(list.ok()) << list.status().to_string();
  return list.ok() ? *list : std::vector<DeviceInfo>{};
}

struct Q8Lanes {
  std::string type;  // "CPU", "discrete GPU", ...
  uint32_t lanes, cpu_threads;
  bool fixed;
  bool operator==(const Q8Lanes&) const = default;
};

// Every device's q8_matvec_lanes, cpu_threads and q8_lanes_fixed, with
// FOLIO_VULKAN_Q8_LANES set to `env` (nullptr: unset).
std::vector<Q8Lanes> q8_lanes_with(const char* env) {
  std::vector<Q8Lanes> out;
  for (const DeviceInfo& d : devices_with("FOLIO_VULKAN_Q8_LANES", env)) {
    out.push_back({d.type, d.caps.q8_matvec_lanes, d.caps.cpu_threads, d.caps.q8_lanes_fixed});
  }
  return out;
}

// The int8 decode matvec's lanes a row: at most 8 on a CPU device (whose
// worker threads are counted: decode rows take fewer lanes while they stay
// busy), 32 on a GPU (no CPU threads); FOLIO_VULKAN_Q8_LANES fixes the
// count on any device when it is a power of two from 1 to
// kMaxQ8MatvecLanes; any other value leaves the device's own choice.
TEST(VulkanDevice, Q8MatvecLanesFollowTheDeviceTypeOrAValidOverride) {
  FOLIO_VULKAN_OR_SKIP(dev);
  const EnvRestorer restore("FOLIO_VULKAN_Q8_LANES");
  const std::vector<Q8Lanes> chosen = q8_lanes_with(nullptr);
  ASSERT_FALSE(chosen.empty());
  for (const Q8Lanes& d : chosen) {
    const bool cpu = d.type == "CPU";
    EXPECT_EQ(d.lanes, cpu ? 8u : 32u) << d.type;
    EXPECT_FALSE(d.fixed) << d.type;
    if (cpu) {
      EXPECT_GE(d.cpu_threads, 1u);
      EXPECT_LE(d.cpu_threads, 32u);
    } else {
      EXPECT_EQ(d.cpu_threads, 0u) << d.type;
    }
  }
  for (const char* ok : {"1", "8", "16", "32", "64"}) {
    const std::vector<Q8Lanes> got = q8_lanes_with(ok);
    ASSERT_EQ(got.size(), chosen.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].lanes, std::stoul(ok)) << got[i].type << " " << ok;
      EXPECT_TRUE(got[i].fixed) << got[i].type << " " << ok;
      EXPECT_EQ(got[i].cpu_threads, chosen[i].cpu_threads) << got[i].type << " " << ok;
    }
  }
  static_assert(kMaxQ8MatvecLanes == 64);
  for (const char* bad : {"12", "128", "0", "", "8x", "-8"}) {
    EXPECT_EQ(q8_lanes_with(bad), chosen) << "FOLIO_VULKAN_Q8_LANES=" << bad;
  }
}

// Flash attention's most query heads a workgroup: kMaxFaHeads on every
// device, FOLIO_VULKAN_FA_HEADS when it is a power of two up to it.
TEST(VulkanDevice, FlashAttentionHeadsFollowAValidOverride) {
  FOLIO_VULKAN_OR_SKIP(dev);
  const EnvRestorer restore("FOLIO_VULKAN_FA_HEADS");
  auto heads_with = [](const char* env) {
    std::vector<uint32_t> out;
    for (const DeviceInfo& d : devices_with("FOLIO_VULKAN_FA_HEADS", env)) {
      out.push_back(d.caps.fa_max_heads);
    }
    return out;
  };
  const std::vector<uint32_t> chosen = heads_with(nullptr);
  ASSERT_FALSE(chosen.empty());
  for (uint32_t n : chosen) EXPECT_EQ(n, kMaxFaHeads);
  for (const char* ok : {"1", "2", "8"}) {
    for (uint32_t n : heads_with(ok)) EXPECT_EQ(n, std::stoul(ok)) << ok;
  }
  for (const char* bad : {"3", "16", "0", "", "two"}) {
    EXPECT_EQ(heads_with(bad), chosen) << "FOLIO_VULKAN_FA_HEADS=" << bad;
  }
}

// The prefill tiles take 4 rows a thread on a GPU and 8 on a CPU device;
// FOLIO_VULKAN_TILE_ROWS=4 or 8 makes every device take that many; any
// other value leaves the device's choice.
TEST(VulkanDevice, TileRowsFollowTheDeviceTypeOrAValidOverride) {
  FOLIO_VULKAN_OR_SKIP(dev);
  const EnvRestorer restore("FOLIO_VULKAN_TILE_ROWS");
  auto rows_with = [](const char* env) {
    std::vector<std::pair<std::string, uint32_t>> out;
    for (const DeviceInfo& d : devices_with("FOLIO_VULKAN_TILE_ROWS", env)) {
      out.emplace_back(d.type, d.caps.tile_rows);
    }
    return out;
  };
  const auto chosen = rows_with(nullptr);
  ASSERT_FALSE(chosen.empty());
  for (const auto& [type, rows] : chosen) EXPECT_EQ(rows, type == "CPU" ? 8u : 4u) << type;
  for (const char* ok : {"4", "8"}) {
    for (const auto& [type, rows] : rows_with(ok)) EXPECT_EQ(rows, ok[0] == '4' ? 4u : 8u) << type;
  }
  for (const char* bad : {"", "2", "16", "eight", "08"}) {
    EXPECT_EQ(rows_with(bad), chosen) << "FOLIO_VULKAN_TILE_ROWS=" << bad;
  }
}

// The output tails are on unless FOLIO_VULKAN_TAILS=0; another value
// leaves them on (with a warning).
TEST(VulkanDevice, OutputTailsAreOnUnlessTurnedOff) {
  FOLIO_VULKAN_OR_SKIP(dev);
  const EnvRestorer restore("FOLIO_VULKAN_TAILS");
  auto tails_with = [](const char* env) {
    std::vector<bool> out;
    for (const DeviceInfo& d : devices_with("FOLIO_VULKAN_TAILS", env)) {
      out.push_back(d.caps.output_tails);
    }
    return out;
  };
  const std::vector<bool> on = tails_with(nullptr);
  ASSERT_FALSE(on.empty());
  for (bool t : on) EXPECT_TRUE(t);
  EXPECT_EQ(tails_with("1"), on);
  for (bool t : tails_with("0")) EXPECT_FALSE(t);
  for (const char* bad : {"", "2", "off"}) {
    EXPECT_EQ(tails_with(bad), on) << "FOLIO_VULKAN_TAILS=" << bad;
  }
}

}  // namespace vulkan_device_test
}  // namespace folio::vulkan
