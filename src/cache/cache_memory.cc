#include "cache/cache_memory.h"

namespace folio::cache {

namespace {

size_t offset_in(const Buffer& buf, const void* p) {
  const char* base = static_cast<const char*>(buf.data());
  const char* c = static_cast<const char*>(p);
  FOLIO_CHECK(c >= base && c <= base + buf.size());
  return static_cast<size_t>(c - base);
}

}  // namespace

Result<std::unique_ptr<Buffer>> alloc_cache_buffer(const CacheAllocator& alloc, size_t bytes,
                                                   const char* what) {
  if (!alloc) {
    Result<std::unique_ptr<HostBuffer>> b = HostBuffer::create(bytes);  // zeroed
    if (!b.ok()) {
      return resource_exhausted("{}: cannot allocate {} MiB: {}", what, bytes >> 20,
                                b.status().message());
    }
    return std::unique_ptr<Buffer>(std::move(b).value());
  }
  Result<std::unique_ptr<Buffer>> b = alloc(bytes);
  if (!b.ok()) {
    return resource_exhausted("{}: cannot allocate {} MiB: {}", what, bytes >> 20,
                              b.status().message());
  }
  FOLIO_RETURN_IF_ERROR((*b)->fill_zero(0, bytes));
  return b;
}

void copy_in_buffer(Buffer& buf, const void* dst, const void* src, size_t n) {
  const Status s = buf.copy(offset_in(buf, dst), offset_in(buf, src), n);
  FOLIO_CHECK_MSG(s.ok(), "cache copy failed: {}", s.to_string());
}

void zero_in_buffer(Buffer& buf, const void* dst, size_t n) {
  const Status s = buf.fill_zero(offset_in(buf, dst), n);
  FOLIO_CHECK_MSG(s.ok(), "cache fill failed: {}", s.to_string());
}

}  // namespace folio::cache
