#include "cache/kv_sizing.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "cache/block_pool.h"

namespace folio::cache {

bool is_kv_dtype(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::Q8_0;
}

Result<size_t> kv_block_bytes(std::span<const KvLayerShape> layers, DType type,
                              int32_t block_size) {
  FOLIO_RETURN_IF_ERROR(validate_block_size(block_size));
  if (!is_kv_dtype(type)) {
    return unsupported("KV type {} is not one of f32, f16, bf16, q8_0", dtype_name(type));
  }
  if (layers.empty()) return invalid_argument("KV sizing: no attention layers");
  constexpr int32_t kMaxDim = 1 << 16;  // far above any real model; keeps the sums exact
  const int64_t qblock = folio::block_size(type);
  size_t per_position = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const KvLayerShape& l = layers[i];
    for (const auto& [name, v] :
         {std::pair{"n_kv_head", l.n_kv_head}, std::pair{"head_dim_k", l.head_dim_k},
          std::pair{"head_dim_v", l.head_dim_v}}) {
      if (v <= 0 || v > kMaxDim) {
        return invalid_argument("KV sizing: layer {} has {} = {} (expected 1..{})", i, name, v,
                                kMaxDim);
      }
    }
    if (l.head_dim_k % qblock != 0 || l.head_dim_v % qblock != 0) {
      return invalid_argument(
          "KV sizing: layer {} head dims {}/{} are not multiples of {} (the "
          "block of KV type {})",
          i, l.head_dim_k, l.head_dim_v, qblock, dtype_name(type));
    }
    if (l.v_in_k && l.head_dim_v > l.head_dim_k) {
      return invalid_argument("KV sizing: layer {} reads V ({} values) from K rows of {}", i,
                              l.head_dim_v, l.head_dim_k);
    }
    per_position += row_size(type, int64_t{l.n_kv_head} * l.head_dim_k);
    if (!l.v_in_k) per_position += row_size(type, int64_t{l.n_kv_head} * l.head_dim_v);
  }
  return per_position * static_cast<size_t>(block_size);
}

Result<int32_t> kv_blocks_for_budget(int64_t budget_mib, std::span<const KvLayerShape> layers,
                                     DType type, int32_t block_size) {
  FOLIO_ASSIGN_OR_RETURN(const size_t per_block, kv_block_bytes(layers, type, block_size));
  constexpr int64_t kMaxMib = int64_t{1} << 40;  // 1 EiB: keeps the byte count in range
  if (budget_mib <= 0 || budget_mib > kMaxMib) {
    return invalid_argument("KV memory budget {} MiB must be in 1..{}", budget_mib, kMaxMib);
  }
  const uint64_t budget = static_cast<uint64_t>(budget_mib) << 20;
  const uint64_t n = budget / per_block;
  if (n < 2) {
    return resource_exhausted(
        "KV memory budget of {} MiB holds {} blocks of {} bytes; at least 2 "
        "are needed (the null block and one more)",
        budget_mib, n, per_block);
  }
  const auto cap = static_cast<uint64_t>(std::numeric_limits<int32_t>::max() / block_size);
  return static_cast<int32_t>(std::min(n, cap));
}

}  // namespace folio::cache
