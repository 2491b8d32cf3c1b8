// A buffer that only grows: the per-thread scratch of the mul_mat drivers
// (drivers/mul_mat_tiled.cc, packed/packed_mul_mat.cc), so the small ops of a
// decode step (run back to back on one thread) reuse their buffers instead
// of allocating on every call.
#pragma once

#include <cstddef>
#include <utility>

#include "core/aligned.h"

namespace folio::cpu {

class GrowBuffer {
 public:
  // At least `bytes` bytes (the contents are not kept across growth);
  // nullptr when allocation fails.
  void* get(size_t bytes) {
    if (capacity_ < bytes) {
      buffer_.reset();
      capacity_ = 0;
      AlignedPtr p = aligned_alloc_bytes(bytes);
      if (p == nullptr) return nullptr;
      buffer_ = std::move(p);
      capacity_ = bytes;
    }
    return buffer_.get();
  }

 private:
  AlignedPtr buffer_;
  size_t capacity_ = 0;
};

}  // namespace folio::cpu
