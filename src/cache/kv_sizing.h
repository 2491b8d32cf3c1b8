// KV memory sizing: how many blocks of the paged KV cache fit a memory budget
// (the --kv-memory flag). One block holds block_size positions of K and V for
// every attention layer:
//   bytes(block) = block_size * sum over layers of
//                  row_size(type, n_kv_head * head_dim_k) + row_size(type, n_kv_head * head_dim_v)
// A layer whose V is part of its K rows (v_in_k: multi-head latent attention,
// deepseek2, where V is the first head_dim_v values of each latent K row)
// counts its K rows only.
// Quantized KV types are blocked along each head's dimension, so head
// dimensions must be multiples of the type's block (32 for q8_0). Recurrent
// (GDN) layers hold no KV and are left out of `layers`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"
#include "tensor/dtype.h"

namespace folio::cache {

// K/V shape of one attention layer.
struct KvLayerShape {
  int32_t n_kv_head = 0;
  int32_t head_dim_k = 0;
  int32_t head_dim_v = 0;
  // Sliding-window attention: a token sees the last `window` positions
  // (itself included); 0: every earlier position (full attention).
  int32_t window = 0;
  // V is the first head_dim_v values of each K row (head_dim_v <= head_dim_k):
  // the layer stores K rows only and reads V as a view of them (deepseek2's
  // latent rows: kv_lora_rank compressed values + the shared rope part).
  bool v_in_k = false;
};

// KV types the paged cache stores: F32, F16, BF16, Q8_0.
bool is_kv_dtype(DType type);

// Bytes of one block (all layers, K and V); errors name the bad layer/value.
Result<size_t> kv_block_bytes(std::span<const KvLayerShape> layers, DType type, int32_t block_size);

// Physical blocks (the null block included) that fit `budget_mib` MiB, capped
// at the int32 slot range; kResourceExhausted when fewer than 2 fit.
Result<int32_t> kv_blocks_for_budget(int64_t budget_mib, std::span<const KvLayerShape> layers,
                                     DType type, int32_t block_size);

}  // namespace folio::cache
