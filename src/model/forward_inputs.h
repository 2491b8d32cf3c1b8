// ForwardInputs: one batch as I32 tensors in the activation arena, built by
// Model::forward from a Batch and the KV cache's plan, and read by the
// architecture forwards and the shared blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor_view.h"

namespace folio::cache {
struct KvPlan;
}  // namespace folio::cache

namespace folio::model {

// The pages of one further layer group of the cache (KvPlan::windowed).
struct KvPageInputs {
  TensorView slots;        // I32 [T] K/V table row of each token in the group's pages
  TensorView block_table;  // I32 [max_blocks, n_seq]
};

struct ForwardInputs {
  int64_t n_tokens = 0;      // T
  int64_t n_outputs = 0;     // tokens whose logits are wanted
  bool all_outputs = false;  // out_ids == 0..T-1 (no gather needed)
  TensorView tokens;         // I32 [T]
  TensorView pos;            // I32 [T]
  // I32 [4 T] the positions of a multi-section rope (RopeMode kMrope /
  // kImrope): sections t, h and w hold pos, e holds 0 (text tokens, as
  // llama.cpp feeds them); empty for other rope modes.
  TensorView pos_sections;
  TensorView seq_idx;        // I32 [T] attention sequence of each token (KvPlan::seq_idx)
  TensorView slots;          // I32 [T] K/V table row of each token (slot mapping)
  TensorView kv_len;         // I32 [n_seq] K/V positions per attention sequence after this batch
  TensorView block_table;    // I32 [max_blocks, n_seq] (paged caches) or empty
  // Sliding-window layers with pages of their own: KvCache::kv_group(layer)
  // g > 0 reads windowed[g - 1] instead of slots / block_table.
  std::vector<KvPageInputs> windowed;
  TensorView out_ids;        // I32 [n_outputs] batch rows whose logits are wanted, in order
  // The cache's plan of this batch (host data; hybrid models read its
  // recurrent part: per-sequence token runs, state slots, checkpoints).
  const cache::KvPlan* plan = nullptr;
};

}  // namespace folio::model
