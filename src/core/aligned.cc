#include "core/aligned.h"

#include <cstdlib>

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

}  // namespace folio
