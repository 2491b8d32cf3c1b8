#include "cache/kv_cache.h"

#include "cache/contiguous_kv_cache.h"
#include "cache/hybrid_kv_cache.h"
#include "cache/paged_kv_cache.h"

namespace folio::cache {

Result<std::unique_ptr<KvCache>> create_kv_cache(const KvGeometry& geometry,
                                                 const KvCacheOptions& options) {
  if (geometry.layers.empty()) {
    return invalid_argument("kv cache: {} has no layers", geometry.name);
  }
  std::unique_ptr<KvCache> cache;
  if (geometry.hybrid()) {
    FOLIO_ASSIGN_OR_RETURN(cache, HybridKvCache::create(geometry, options));
  } else if (options.storage == KvStorage::kPaged) {
    FOLIO_ASSIGN_OR_RETURN(cache, PagedKvCache::create(geometry, options));
  } else {
    FOLIO_ASSIGN_OR_RETURN(cache, ContiguousKvCache::create(geometry, options));
  }
  return cache;
}

Result<DType> parse_kv_type(std::string_view name) {
  const std::optional<DType> t = parse_dtype(name);
  if (!t || !is_kv_dtype(*t)) {
    return invalid_argument("KV cache type must be f32, f16, bf16 or q8_0, got '{}'", name);
  }
  return *t;
}

}  // namespace folio::cache
