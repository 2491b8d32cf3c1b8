// Aligned host memory: kernels assume 64-byte alignment of every buffer.
#pragma once

#include <cstddef>
#include <memory>

namespace folio {

inline constexpr size_t kDefaultAlignment = 64;

struct AlignedFree {
  void operator()(void* p) const noexcept;
};
using AlignedPtr = std::unique_ptr<void, AlignedFree>;

// Returns nullptr on failure (never throws): callers turn that into a
// kResourceExhausted Status. size 0 gives a valid, unique pointer.
AlignedPtr aligned_alloc_bytes(size_t size, size_t alignment = kDefaultAlignment);

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace folio
