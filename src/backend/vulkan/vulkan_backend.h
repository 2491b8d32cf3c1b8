// The Vulkan backend: runs ops as compute dispatches on one Vulkan device.
//
// Memory (vk_memory.h): device-local chunks (256 MiB, or one per larger
// tensor) are sub-allocated; each chunk has a reserved host address range
// (backend/device_memory.h), so device tensors are ordinary views whose
// pointers the host never dereferences.
//
// Execution: run_kernel() records; nothing waits. Dispatches, uploads and
// device-side copies join one command buffer, each behind a barrier only
// where it overlaps work recorded since the last one (vk_hazards.h), and
// run when the backend synchronizes: a read() (the logits of a step, say),
// synchronize(), or a full parameter / staging ring or descriptor pool
// (then the work so far is submitted and recording goes on). Kernels that
// find invalid data (an id out of range) set an error word that the next
// synchronize turns into a Status. The work of a replayable step (a decode
// step) is captured once and replayed while the host issues the same
// commands again (vk_replay.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/buffer_type.h"
#include "backend/vulkan/kernels.h"
#include "backend/vulkan/vk_device.h"
#include "backend/vulkan/vk_timestamps.h"

namespace folio::vulkan {

class VulkanBackend;

// Device memory of one VulkanBackend. Accepts a weight when the backend has
// a kernel for the op that consumes it (and the tensor fits one storage
// buffer binding); weights are uploaded through the staging ring.
class VulkanBufferType final : public BufferType {
 public:
  explicit VulkanBufferType(VulkanBackend& backend) : backend_(backend) {}
  std::string name() const override;
  size_t alignment() const override { return 256; }
  bool is_host() const override { return false; }
  Result<std::unique_ptr<Buffer>> alloc(size_t size) const override;
  bool supports_weight(const WeightUse& w) const override;
  Status store_weight(const WeightUse& w, const void* src, size_t src_bytes,
                      void* dst) const override;

 private:
  VulkanBackend& backend_;
};

class VulkanBackend final : public Backend {
 public:
  // Opens device `index` (-1: the best; see VulkanDevice::open). Descriptors
  // are pushed into the command buffer where the device has
  // VK_KHR_push_descriptor, unless allow_push_descriptors is false (tests of
  // the allocated-set path), else written into sets from a pool.
  static Result<std::unique_ptr<VulkanBackend>> create(int index = -1,
                                                       bool allow_push_descriptors = true);
  ~VulkanBackend() override;

  std::string name() const override { return name_; }
  // Handles are `const KernelDef*` into vulkan_kernels().
  KernelHandle select_kernel(const Op& op) const override;
  Status run_kernel(KernelHandle kernel, const Op& op) override;
  std::string kernel_name_of(KernelHandle kernel) const override;
  const BufferType& default_buffer_type() const override { return buffer_type_; }

  bool can_access(const void* p) const override;
  Status write(void* dst, const void* host_src, size_t n) override;
  Status read(void* host_dst, const void* src, size_t n) override;
  Status copy(void* dst, const void* src, size_t n) override;
  Status fill_zero(void* dst, size_t n);
  Status synchronize() override;
  bool is_host() const override { return false; }
  std::optional<StreamCounters> stream_counters() const override;
  // Replayable steps are captured and replayed (vk_replay.h) where the
  // device pushes descriptors and replay is enabled (the default, unless
  // FOLIO_VULKAN_REPLAY=0). Disabling forgets the recordings.
  void set_replayable(bool replayable) override;
  void set_replay_enabled(bool enabled);
  bool replay_enabled() const;
  // Device time per kernel (vk_timestamps.h): on (FOLIO_VULKAN_TIMESTAMPS=1
  // at creation does this too, and logs the totals when the backend goes),
  // every step runs live with a timestamp after each command. Fails
  // (unsupported) where the queue writes no timestamps.
  Status set_device_timing(bool on);
  std::vector<DeviceTimeRow> device_times() const;

  const DeviceInfo& info() const;
  // Whether dispatches push their descriptors (see create()).
  bool push_descriptors() const;
  // Device memory in use (tensor chunks), bytes.
  uint64_t allocated_bytes() const;

  class Impl;

 private:
  VulkanBackend() = default;
  std::string name_;
  std::unique_ptr<Impl> impl_;
  VulkanBufferType buffer_type_{*this};
  friend class VulkanBufferType;
};

}  // namespace folio::vulkan
