// Device memory of the Vulkan backend: buffers with memory of their own
// (the staging and parameter rings, the error word) and the heap tensors
// live in: device-local chunks (256 MiB, or one per larger tensor; at most
// FOLIO_VULKAN_MEMORY_MIB in all where set), sub-allocated first fit in
// 256-byte units. Each chunk reserves a host address range of its size
// (backend/device_memory.h), so a tensor's pointer names its chunk and
// offset, and addresses of different chunks never overlap (the command
// stream's hazard tracking relies on that). Not thread-safe: the backend
// calls it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "backend/device_memory.h"
#include "backend/vulkan/vk_device.h"
#include "core/status.h"

namespace folio {
class Backend;
}

namespace folio::vulkan {

// A buffer with its own memory (staging rings, the error word, chunks).
struct VkMem {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* map = nullptr;  // host-visible memory only
  size_t size = 0;
};

// A storage buffer of `size` bytes in `memory_type`, mapped when `map`;
// `what` names it in errors.
Result<VkMem> make_buffer(const VulkanDevice& d, size_t size, uint32_t memory_type, bool map,
                          const char* what);
void destroy_buffer(const VulkanDevice& d, VkMem& m);

// A device-local chunk, sub-allocated first fit.
struct Chunk {
  VkMem mem;
  DeviceAddressRange range;
  std::map<size_t, size_t> free;  // offset -> bytes
  size_t used = 0;
};

class DeviceHeap {
 public:
  // `owner`: the backend whose addresses the chunks are; memory_limit: bytes
  // of chunks at most (0: the device's own limit).
  DeviceHeap(const VulkanDevice& device, Backend* owner, uint64_t memory_limit)
      : device_(device), owner_(owner), memory_limit_(memory_limit) {}
  ~DeviceHeap();
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  // `size` bytes (rounded up to 256); kResourceExhausted past the device's
  // or the configured limit, or beyond what one buffer binding reaches.
  Result<void*> alloc(size_t size);
  // Returns alloc()'s memory; neighbouring free ranges merge.
  void free(void* p, size_t size);
  // (chunk, offset) of a device address of the owner, with `n` bytes in range.
  Result<std::pair<Chunk*, size_t>> locate(const void* p, size_t n) const;
  uint64_t allocated() const { return allocated_; }  // bytes handed out

 private:
  const VulkanDevice& device_;
  Backend* owner_;
  uint64_t memory_limit_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  uint64_t allocated_ = 0;    // bytes handed out
  uint64_t chunk_bytes_ = 0;  // bytes of device memory held
};

}  // namespace folio::vulkan
