#include "backend/device_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace folio {
namespace {

struct Entry {
  size_t size;
  Backend* owner;
  void* cookie;
};

struct Registry {
  std::shared_mutex mu;
  std::map<const char*, Entry> ranges;  // by base
};

Registry& registry() {
  static Registry* r = new Registry();  // outlives every static backend
  return *r;
}

}  // namespace

Result<DeviceAddressRange> DeviceAddressRange::reserve(size_t size, Backend* owner, void* cookie) {
  if (size == 0) size = 1;
  void* p = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return resource_exhausted("cannot reserve {} bytes of address space for device memory: {}",
                              size, std::strerror(errno));
  }
  DeviceAddressRange r;
  r.base_ = static_cast<char*>(p);
  r.size_ = size;
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  reg.ranges[r.base_] = Entry{size, owner, cookie};
  return r;
}

DeviceAddressRange::DeviceAddressRange(DeviceAddressRange&& o) noexcept
    : base_(o.base_), size_(o.size_) {
  o.base_ = nullptr;
  o.size_ = 0;
}

DeviceAddressRange& DeviceAddressRange::operator=(DeviceAddressRange&& o) noexcept {
  if (this != &o) {
    this->~DeviceAddressRange();
    base_ = o.base_;
    size_ = o.size_;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

DeviceAddressRange::~DeviceAddressRange() {
  if (base_ == nullptr) return;
  {
    Registry& reg = registry();
    std::unique_lock lock(reg.mu);
    reg.ranges.erase(base_);
  }
  ::munmap(base_, size_);
}

DeviceAddress lookup_device_address(const void* p) {
  if (p == nullptr) return {};
  Registry& reg = registry();
  std::shared_lock lock(reg.mu);
  if (reg.ranges.empty()) return {};
  const char* c = static_cast<const char*>(p);
  auto it = reg.ranges.upper_bound(c);
  if (it == reg.ranges.begin()) return {};
  --it;
  if (c >= it->first + it->second.size) return {};
  return DeviceAddress{it->second.owner, it->second.cookie, it->first, it->second.size};
}

}  // namespace folio
