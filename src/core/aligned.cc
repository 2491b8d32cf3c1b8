#include "core/aligned.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace folio {

void AlignedFree::operator()(void* p) const noexcept { std::free(p); }

AlignedPtr aligned_alloc_bytes(size_t size, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (size > SIZE_MAX - alignment) return AlignedPtr();
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? alignment : align_up(size, alignment)) != 0) {
    return AlignedPtr();
  }
  return AlignedPtr(p);
}

bool huge_pages_requested() {
  const char* env = std::getenv("FOLIO_HUGEPAGES");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

#if defined(__linux__) && defined(MADV_HUGEPAGE)
namespace {

// The kernel gives huge pages on request ("[always]" or "[madvise]" in
// sysfs; madvise itself succeeds under "[never]" too, and without the file
// there is no THP at all).
bool kernel_gives_huge_pages() {
  static const bool gives = [] {
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) return false;
    char buf[128] = {};
    const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    return std::strstr(buf, "[always]") != nullptr || std::strstr(buf, "[madvise]") != nullptr;
  }();
  return gives;
}

}  // namespace
#endif

bool huge_pages_available() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  return huge_pages_requested() && kernel_gives_huge_pages();
#else
  return false;
#endif
}

bool advise_huge_pages(void* p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p == nullptr || size == 0 || !huge_pages_available()) return false;
  // madvise takes a page-aligned start: advise the whole pages inside
  // (base pages: 4 KiB on x86-64, 4 to 64 KiB on arm64).
  const auto begin = reinterpret_cast<uintptr_t>(p);
  static const auto kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (begin + size) & ~(kPage - 1);
  if (end <= first) return false;
  return ::madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE) == 0;
#else
  (void)p;
  (void)size;
  return false;
#endif
}

AlignedPtr large_alloc_bytes(size_t size, size_t alignment) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (size >= kHugePageBytes && alignment <= kHugePageBytes && huge_pages_available()) {
    const size_t padded = align_up(size, kHugePageBytes);
    if (padded < size) return AlignedPtr();
    AlignedPtr p = aligned_alloc_bytes(padded, kHugePageBytes);
    // Declined advice (THP off, an old kernel) leaves ordinary pages.
    if (p) advise_huge_pages(p.get(), padded);
    return p;
  }
#endif
  return aligned_alloc_bytes(size, alignment);
}

}  // namespace folio
