// BlockTable: one sequence's map from logical block (position / block_size)
// to physical block id in the BlockPool. Position p of the sequence lives in
// slot  table[p / block_size] * block_size + p % block_size  of the K/V
// storage (a row index shared by every layer). The table holds references:
// each entry accounts for one ref count of its block, taken and released by
// the KvCacheManager.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/block_pool.h"
#include "core/check.h"

namespace folio::cache {

// Slot of offset `offset` in block `block` (slot = block * block_size + offset).
inline int32_t slot_of(BlockId block, int32_t offset, int32_t block_size) {
  return block * block_size + offset;
}

class BlockTable {
 public:
  int32_t size() const { return static_cast<int32_t>(ids_.size()); }
  bool empty() const { return ids_.empty(); }
  BlockId operator[](int32_t i) const {
    FOLIO_CHECK_MSG(i >= 0 && i < size(), "logical block {} of a table of {}", i, size());
    return ids_[static_cast<size_t>(i)];
  }
  BlockId back() const { return (*this)[size() - 1]; }
  std::span<const BlockId> ids() const { return ids_; }

  // Slot of position `pos` (its block must be in the table).
  int32_t slot(int64_t pos, int32_t block_size) const {
    return slot_of((*this)[static_cast<int32_t>(pos / block_size)],
                   static_cast<int32_t>(pos % block_size), block_size);
  }

  void push_back(BlockId id) { ids_.push_back(id); }
  void set(int32_t i, BlockId id) {
    FOLIO_CHECK(i >= 0 && i < size());
    ids_[static_cast<size_t>(i)] = id;
  }
  void resize(int32_t n) {
    FOLIO_CHECK(n >= 0 && n <= size());
    ids_.resize(static_cast<size_t>(n));
  }

 private:
  std::vector<BlockId> ids_;  // [n_logical_blocks] physical ids (kNullBlock: dropped out of a window)
};

// Blocks needed to hold `n_tokens` positions.
inline int32_t blocks_for(int64_t n_tokens, int32_t block_size) {
  return static_cast<int32_t>((n_tokens + block_size - 1) / block_size);
}

}  // namespace folio::cache
