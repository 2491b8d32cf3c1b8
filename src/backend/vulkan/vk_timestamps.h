// DeviceTimer: where the device's time goes, per kernel. After each command
// of the live stream a timestamp is written at the bottom of the pipe; once
// the host has waited for the submission, each command is charged the ticks
// from the previous command's timestamp (or the submission's first one) to
// its own: its own run, the barrier before it and any gap. Commands that
// overlap (no barrier between them) share their time as their ends fall.
// Totals are kept per pipeline name (shader and specialisation constants)
// and transfers as "(transfer)".
//
// It is for developers measuring a device (FOLIO_VULKAN_TIMESTAMPS=1, or
// VulkanBackend::set_device_timing()): replayed steps carry no timestamps,
// so timing runs every step live.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/vulkan/vk_api.h"
#include "core/status.h"

namespace folio::vulkan {

class VulkanDevice;

struct DeviceTimeRow {
  std::string name;    // pipeline name, or "(transfer)"
  uint64_t count = 0;  // commands timed
  double ns = 0;       // their total device time
};

class DeviceTimer {
 public:
  // Timestamps after the first `capacity` commands of a submission are not
  // written (those commands count in `untimed()`).
  static constexpr uint32_t kDefaultCapacity = 8192;

  // Fails (unsupported) where the compute queue writes no timestamps.
  static Result<std::unique_ptr<DeviceTimer>> create(const VulkanDevice& device,
                                                     uint32_t capacity = kDefaultCapacity);
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  // Records the submission's starting timestamp into `cmd` unless one is
  // recorded since the last collect().
  void start(VkCommandBuffer cmd);
  // Records the timestamp after a command named `name` (a string that
  // outlives the next collect()).
  void mark(VkCommandBuffer cmd, const std::string* name);
  // After the host waited for everything recorded since start() (`ran`;
  // false: the submission failed and its timestamps are dropped): charges
  // each command its ticks and makes ready for the next start().
  Status collect(bool ran);

  // Totals so far, largest time first (ties: by name).
  std::vector<DeviceTimeRow> rows() const;
  uint64_t untimed() const { return untimed_; }
  void clear();

 private:
  DeviceTimer(const VulkanDevice& device, uint32_t capacity);

  const VulkanDevice& device_;
  const uint32_t capacity_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  bool started_ = false;
  std::vector<const std::string*> names_;  // names_[q - 1]: the command before query q
  std::vector<uint64_t> ticks_;            // collect()'s read-back
  std::map<std::string, DeviceTimeRow> totals_;
  uint64_t untimed_ = 0;
};

}  // namespace folio::vulkan
