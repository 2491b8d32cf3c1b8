// A Vulkan device folio computes on: the instance (one per process), the
// physical device's properties and the features the kernels may use, the
// logical device with one compute queue, and the memory types chosen for
// tensors (device-local) and for staging (host-visible).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/vk_api.h"
#include "core/status.h"

namespace folio::vulkan {

// What `folio info` prints about a device.
struct DeviceInfo {
  int index = 0;
  std::string name;         // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;         // "discrete GPU", "integrated GPU", "CPU", ...
  std::string api_version;  // "1.3.230"
  std::string driver;       // "NVIDIA 550.54", "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
  uint64_t device_local_bytes = 0;
  // The largest heap of device-local memory the host can map (a BAR; 0:
  // none, so kernel parameters live in host memory, read across the bus).
  uint64_t mappable_device_bytes = 0;
  DeviceCaps caps;
  // "subgroup 32, fp16, int8, integer dot (32 lanes a decode row), 16-bit storage, ...,
  // mappable device memory 256 MiB"
  std::string features() const;
};

// Every device the Vulkan loader reports, or the reason there are none
// (no loader, no driver).
Result<std::vector<DeviceInfo>> list_devices();

class VulkanDevice {
 public:
  // Opens device `index` of list_devices(); -1: the best one (discrete GPU,
  // then integrated, then virtual, then CPU).
  static Result<std::unique_ptr<VulkanDevice>> open(int index);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const DeviceInfo& info() const { return info_; }
  const DeviceCaps& caps() const { return info_.caps; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }

  // Memory types: device-local for tensors; host-visible + coherent for
  // uploads (and cached, where offered, for readback).
  uint32_t device_memory_type() const { return device_type_; }
  uint32_t upload_memory_type() const { return upload_type_; }
  uint32_t readback_memory_type() const { return readback_type_; }
  // Per-dispatch parameters: host-visible, device-local where offered (a
  // discrete GPU's BAR), so kernels do not read them across the bus.
  uint32_t params_memory_type() const { return params_type_; }
  uint64_t max_allocation() const { return max_allocation_; }
  // Timestamps on the compute queue: nanoseconds per tick, and the valid
  // low bits of a timestamp (0: the queue writes none).
  float timestamp_period_ns() const { return timestamp_period_ns_; }
  uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }

 private:
  VulkanDevice() = default;

  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t device_type_ = 0, upload_type_ = 0, readback_type_ = 0, params_type_ = 0;
  uint64_t max_allocation_ = 0;
  float timestamp_period_ns_ = 0;
  uint32_t timestamp_valid_bits_ = 0;
};

// Checks a VkResult: OK, or an error naming `what` and the result.
Status vk_check(VkResult r, const char* what);

}  // namespace folio::vulkan
