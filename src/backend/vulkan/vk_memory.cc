#include "backend/vulkan/vk_memory.h"

#include <algorithm>

#include "backend/backend.h"
#include "core/aligned.h"

namespace folio::vulkan {

namespace {
constexpr size_t kHeapChunkBytes = size_t{256} << 20;
}  // namespace

Result<VkMem> make_buffer(const VulkanDevice& d, size_t size, uint32_t memory_type, bool map,
                          const char* what) {
  VkMem m;
  m.size = size;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  FOLIO_RETURN_IF_ERROR(vk_check(vk().vkCreateBuffer(d.device(), &bci, nullptr, &m.buffer), what));
  VkMemoryRequirements req;
  vk().vkGetBufferMemoryRequirements(d.device(), m.buffer, &req);
  if (!(req.memoryTypeBits & (1u << memory_type))) {
    vk().vkDestroyBuffer(d.device(), m.buffer, nullptr);
    return unsupported("vulkan: {}: the chosen memory type cannot hold storage buffers", what);
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = memory_type;
  const VkResult r = vk().vkAllocateMemory(d.device(), &ai, nullptr, &m.memory);
  if (r != VK_SUCCESS) {
    vk().vkDestroyBuffer(d.device(), m.buffer, nullptr);
    return vk_check(r, what);
  }
  vk().vkBindBufferMemory(d.device(), m.buffer, m.memory, 0);
  if (map) {
    const VkResult mr = vk().vkMapMemory(d.device(), m.memory, 0, VK_WHOLE_SIZE, 0, &m.map);
    if (mr != VK_SUCCESS) {
      vk().vkFreeMemory(d.device(), m.memory, nullptr);
      vk().vkDestroyBuffer(d.device(), m.buffer, nullptr);
      return vk_check(mr, what);
    }
  }
  return m;
}

void destroy_buffer(const VulkanDevice& d, VkMem& m) {
  if (m.map != nullptr) vk().vkUnmapMemory(d.device(), m.memory);
  if (m.buffer != VK_NULL_HANDLE) vk().vkDestroyBuffer(d.device(), m.buffer, nullptr);
  if (m.memory != VK_NULL_HANDLE) vk().vkFreeMemory(d.device(), m.memory, nullptr);
  m = VkMem{};
}

DeviceHeap::~DeviceHeap() {
  for (auto& c : chunks_) destroy_buffer(device_, c->mem);
}

Result<void*> DeviceHeap::alloc(size_t size) {
  size = align_up(std::max<size_t>(size, 1), 256);
  const uint64_t limit = std::min<uint64_t>(device_.caps().max_storage_buffer_range,
                                            device_.max_allocation() ? device_.max_allocation()
                                                                     : UINT64_MAX);
  if (size > limit) {
    return resource_exhausted(
        "vulkan: a tensor of {:.1f} MiB exceeds the largest buffer {} binds ({:.1f} MiB)",
        size / 1048576.0, device_.info().name, limit / 1048576.0);
  }
  for (auto& c : chunks_) {
    for (auto it = c->free.begin(); it != c->free.end(); ++it) {
      if (it->second < size) continue;
      const size_t off = it->first, left = it->second - size;
      c->free.erase(it);
      if (left > 0) c->free[off + size] = left;
      c->used += size;
      allocated_ += size;
      return static_cast<void*>(c->range.base() + off);
    }
  }
  size_t chunk_size = std::min<uint64_t>(std::max(size, kHeapChunkBytes), limit);
  if (memory_limit_ > 0) {  // FOLIO_VULKAN_MEMORY_MIB: a cap below the device's own
    if (chunk_bytes_ + size > memory_limit_) {
      return resource_exhausted(
          "vulkan: out of device memory on {}: {:.1f} MiB more would pass the "
          "FOLIO_VULKAN_MEMORY_MIB limit of {:.0f} MiB ({:.1f} MiB in use)",
          device_.info().name, size / 1048576.0, memory_limit_ / 1048576.0,
          allocated_ / 1048576.0);
    }
    chunk_size = std::min<uint64_t>(chunk_size, memory_limit_ - chunk_bytes_);
  }
  auto c = std::make_unique<Chunk>();
  Result<VkMem> mem = make_buffer(device_, chunk_size, device_.device_memory_type(), false,
                                  "device memory");
  if (!mem.ok()) {
    return resource_exhausted(
        "vulkan: out of device memory on {}: cannot allocate {:.1f} MiB with {:.1f} MiB in use ({})",
        device_.info().name, chunk_size / 1048576.0, allocated_ / 1048576.0,
        mem.status().message());
  }
  c->mem = *mem;
  Result<DeviceAddressRange> range = DeviceAddressRange::reserve(chunk_size, owner_, c.get());
  if (!range.ok()) {
    destroy_buffer(device_, c->mem);
    return range.status();
  }
  c->range = std::move(range).value();
  chunk_bytes_ += chunk_size;
  if (chunk_size > size) c->free[size] = chunk_size - size;
  c->used = size;
  allocated_ += size;
  void* p = c->range.base();
  chunks_.push_back(std::move(c));
  return p;
}

void DeviceHeap::free(void* p, size_t size) {
  size = align_up(std::max<size_t>(size, 1), 256);
  const DeviceAddress a = lookup_device_address(p);
  auto* c = static_cast<Chunk*>(a.cookie);
  if (c == nullptr) return;
  size_t off = static_cast<size_t>(static_cast<const char*>(p) - a.base);
  // Merge with the free neighbours.
  auto next = c->free.lower_bound(off);
  if (next != c->free.end() && next->first == off + size) {
    size += next->second;
    next = c->free.erase(next);
  }
  if (next != c->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      size += prev->second;
      c->free.erase(prev);
    }
  }
  c->free[off] = size;
  c->used -= std::min(c->used, size);
  allocated_ -= std::min<uint64_t>(allocated_, size);
}

Result<std::pair<Chunk*, size_t>> DeviceHeap::locate(const void* p, size_t n) const {
  // The heap's own chunks first (a few; no lock, no map: every dispatch
  // locates each of its tensors), then the process's registry for the error.
  const char* c = static_cast<const char*>(p);
  for (const auto& chunk : chunks_) {
    const char* base = chunk->range.base();
    if (c < base || c >= base + chunk->range.size()) continue;
    const auto off = static_cast<size_t>(c - base);
    if (n > chunk->range.size() - off) break;  // the error below names it
    return std::pair<Chunk*, size_t>{chunk.get(), off};
  }
  const DeviceAddress a = lookup_device_address(p);
  if (a.owner != owner_) {
    return invalid_argument("vulkan: address {} is not memory of {}", p, owner_->name());
  }
  const size_t off = static_cast<size_t>(static_cast<const char*>(p) - a.base);
  if (n > a.size - off) {
    return out_of_range("vulkan: {} bytes at offset {} overrun a buffer of {}", n, off, a.size);
  }
  return std::pair<Chunk*, size_t>{static_cast<Chunk*>(a.cookie), off};
}

}  // namespace folio::vulkan
