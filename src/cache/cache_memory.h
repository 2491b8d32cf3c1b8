// Where a cache's storage lives and how it is moved: the caches never touch
// their bytes on the host, so the same code runs on host and device memory.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "core/check.h"
#include "core/status.h"
#include "tensor/buffer.h"

namespace folio::cache {

// Allocates `bytes` of cache storage (a device's memory, say); the contents
// need not be zeroed (the cache zeroes it). Empty: zeroed host memory.
using CacheAllocator = std::function<Result<std::unique_ptr<Buffer>>(size_t bytes)>;

// `bytes` of zeroed storage from `alloc` (or the host), the error naming `what`.
Result<std::unique_ptr<Buffer>> alloc_cache_buffer(const CacheAllocator& alloc, size_t bytes,
                                                   const char* what);

// Copies n bytes between two places in `buf` (given as pointers into it).
// A failure here is a broken invariant (ranges come from the cache's own
// views), so it CHECKs.
void copy_in_buffer(Buffer& buf, const void* dst, const void* src, size_t n);
void zero_in_buffer(Buffer& buf, const void* dst, size_t n);

}  // namespace folio::cache
