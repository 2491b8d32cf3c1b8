// Aligned host memory: kernels assume 64-byte alignment of every buffer.
#pragma once

#include <cstddef>
#include <memory>

namespace folio {

inline constexpr size_t kDefaultAlignment = 64;

// A transparent huge page (x86-64, and arm64 with 4 KiB base pages).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

struct AlignedFree {
  void operator()(void* p) const noexcept;
};
using AlignedPtr = std::unique_ptr<void, AlignedFree>;

// Returns nullptr on failure (never throws): callers turn that into a
// kResourceExhausted Status. size 0 gives a valid, unique pointer.
AlignedPtr aligned_alloc_bytes(size_t size, size_t alignment = kDefaultAlignment);

// Large, long-lived memory (weights, the KV cache, a forward's buffers):
// from kHugePageBytes up it is aligned to kHugePageBytes and advised as
// transparent huge pages (madvise(MADV_HUGEPAGE) on Linux, where the
// kernel's THP mode is "madvise" or "always"), so that streaming through it,
// as decode does through every weight each step, needs one TLB entry per
// 2 MiB instead of one per 4 KiB. Smaller sizes, other systems, or
// FOLIO_HUGEPAGES=0: aligned_alloc_bytes. Failure: nullptr, as there.
AlignedPtr large_alloc_bytes(size_t size, size_t alignment = kDefaultAlignment);

// FOLIO_HUGEPAGES: unset or anything but "0" asks for huge pages.
bool huge_pages_requested();
// Requested, and the kernel gives huge pages on request (its THP mode,
// /sys/kernel/mm/transparent_hugepage/enabled, is "always" or "madvise").
bool huge_pages_available();

// Advises [p, p + size) (a file mapping of weights) as huge pages, which
// makes the page cache read it in PMD-sized folios the mapping can map
// whole. Only where huge_pages_available(); true when the kernel took the
// advice.
bool advise_huge_pages(void* p, size_t size);

inline size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace folio
