// Device memory in host address space. A device buffer has no host address,
// but tensors are views (pointer + strides) everywhere in folio: so each
// device allocation reserves an inaccessible range of host address space
// (mmap PROT_NONE) of its size, and a view's pointer into that range names a
// byte of device memory. Pointer arithmetic on views works unchanged; a host
// dereference faults instead of reading garbage. The registry says which
// backend owns an address, so routing and transfers know where a tensor
// lives without any backend's name.
#pragma once

#include <cstddef>

#include "core/status.h"

namespace folio {

class Backend;

// A reserved, inaccessible range of host address space standing for a device
// allocation of `size` bytes owned by `owner`; registered while it lives.
class DeviceAddressRange {
 public:
  static Result<DeviceAddressRange> reserve(size_t size, Backend* owner, void* cookie);
  DeviceAddressRange() = default;
  DeviceAddressRange(DeviceAddressRange&& o) noexcept;
  DeviceAddressRange& operator=(DeviceAddressRange&& o) noexcept;
  ~DeviceAddressRange();

  char* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
};

// Where an address lives: the owning backend (nullptr for host memory), the
// cookie given at reserve() (the backend's own allocation record) and the
// range's base.
struct DeviceAddress {
  Backend* owner = nullptr;
  void* cookie = nullptr;
  const char* base = nullptr;
  size_t size = 0;
};
DeviceAddress lookup_device_address(const void* p);

// True if `p` is host memory (no device owns it).
inline bool is_host_address(const void* p) { return lookup_device_address(p).owner == nullptr; }

}  // namespace folio
