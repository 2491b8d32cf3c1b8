#include "cache/block_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace folio::cache {

Status validate_block_size(int32_t block_size) {
  const bool pow2 = block_size > 0 && (block_size & (block_size - 1)) == 0;
  if (!pow2 || block_size < kMinBlockSize || block_size > kMaxBlockSize) {
    return invalid_argument("KV block size {} must be a power of two from {} to {}", block_size,
                            kMinBlockSize, kMaxBlockSize);
  }
  return Status();
}

Result<BlockPool> BlockPool::create(int32_t n_blocks, int32_t block_size) {
  FOLIO_RETURN_IF_ERROR(validate_block_size(block_size));
  if (n_blocks < 2) {
    return invalid_argument(
        "KV block pool needs at least 2 blocks (the null block and one more), "
        "got {}",
        n_blocks);
  }
  if (n_blocks > std::numeric_limits<int32_t>::max() / block_size) {
    return invalid_argument("KV block pool of {} blocks of {} tokens exceeds the int32 slot range",
                            n_blocks, block_size);
  }
  return BlockPool(n_blocks, block_size);
}

BlockPool::BlockPool(int32_t n_blocks, int32_t block_size)
    : n_blocks_(n_blocks),
      block_size_(block_size),
      ref_(static_cast<size_t>(n_blocks), 0),
      hashed_(static_cast<size_t>(n_blocks), 0),
      hash_(static_cast<size_t>(n_blocks)),
      prev_(static_cast<size_t>(n_blocks) + 1, -1),
      next_(static_cast<size_t>(n_blocks) + 1, -1) {
  map_.reserve(static_cast<size_t>(n_blocks));
  prev_[index(sentinel())] = sentinel();
  next_[index(sentinel())] = sentinel();
  first_hashed_ = sentinel();
  // Ascending ids: the first allocations get 1, 2, 3, ...
  for (BlockId id = 1; id < n_blocks_; ++id) queue_insert_before(sentinel(), id);
  n_free_ = n_blocks_ - 1;
}

const BlockHash& BlockPool::hash(BlockId id) const {
  FOLIO_CHECK_MSG(is_hashed(id), "block {} has no hash", id);
  return hash_[index(id)];
}

BlockId BlockPool::find(const BlockHash& h) const {
  const auto it = map_.find(h);
  return it == map_.end() ? kNullBlock : it->second;
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n_free_));
  for (BlockId id = front(); id != kNullBlock; id = next(id)) out.push_back(id);
  return out;
}

void BlockPool::queue_insert_before(int32_t at, BlockId id) {
  const int32_t before = prev_[index(at)];
  prev_[index(id)] = before;
  next_[index(id)] = at;
  next_[index(before)] = id;
  prev_[index(at)] = id;
}

void BlockPool::queue_remove(BlockId id) {
  if (id == first_hashed_) first_hashed_ = next_[index(id)];
  const int32_t p = prev_[index(id)];
  const int32_t n = next_[index(id)];
  next_[index(p)] = n;
  prev_[index(n)] = p;
  prev_[index(id)] = -1;
  next_[index(id)] = -1;
}

void BlockPool::queue_push(BlockId id) {
  if (hashed_[index(id)]) {
    queue_insert_before(sentinel(), id);
    if (first_hashed_ == sentinel()) first_hashed_ = id;
  } else {
    queue_insert_before(next_[index(sentinel())], id);
  }
}

void BlockPool::evict(BlockId id) {
  events_.removed(hash_[index(id)]);
  map_.erase(hash_[index(id)]);
  hashed_[index(id)] = 0;
  hash_[index(id)] = BlockHash{};
}

BlockId BlockPool::allocate() {
  FOLIO_CHECK_MSG(n_free_ > 0, "KV block pool exhausted ({} blocks)", n_blocks_);
  const BlockId id = next_[index(sentinel())];
  queue_remove(id);
  --n_free_;
  if (hashed_[index(id)]) evict(id);
  ref_[index(id)] = 1;
  return id;
}

void BlockPool::touch(BlockId id) {
  FOLIO_CHECK_MSG(id > kNullBlock && id < n_blocks_, "touch of block {}", id);
  if (ref_[index(id)] == 0) {
    queue_remove(id);
    --n_free_;
  }
  ++ref_[index(id)];
}

void BlockPool::release(BlockId id) {
  FOLIO_CHECK_MSG(id > kNullBlock && id < n_blocks_, "release of block {}", id);
  FOLIO_CHECK_MSG(ref_[index(id)] > 0, "release of free block {}", id);
  if (--ref_[index(id)] == 0) {
    queue_push(id);
    ++n_free_;
  }
}

void BlockPool::release_reverse(std::span<const BlockId> ids) {
  for (size_t i = ids.size(); i-- > 0;) release(ids[i]);
}

bool BlockPool::register_hash(BlockId id, const BlockHash& h) {
  FOLIO_CHECK_MSG(id > kNullBlock && id < n_blocks_, "register of block {}", id);
  FOLIO_CHECK_MSG(ref_[index(id)] > 0 && !hashed_[index(id)],
                  "register of block {} (ref {}, hashed {})", id, ref_[index(id)],
                  hashed_[index(id)]);
  if (!map_.try_emplace(h, id).second) return false;
  hashed_[index(id)] = 1;
  hash_[index(id)] = h;
  return true;
}

void BlockPool::unregister(BlockId id) {
  FOLIO_CHECK_MSG(id >= kNullBlock && id < n_blocks_, "unregister of block {}", id);
  if (!hashed_[index(id)]) return;
  const bool in_queue = queued(id);
  if (in_queue) queue_remove(id);
  evict(id);
  if (in_queue) queue_push(id);
}

void BlockPool::clear_cache() {
  const bool logging = events_.enabled();
  events_.set_enabled(false);
  for (BlockId id = 1; id < n_blocks_; ++id) unregister(id);
  events_.set_enabled(logging);
  events_.all_cleared();
}

bool BlockPool::defrag() {
  if (!idle()) return false;
  prev_[index(sentinel())] = sentinel();
  next_[index(sentinel())] = sentinel();
  first_hashed_ = sentinel();
  for (BlockId id = 1; id < n_blocks_; ++id) {
    if (!hashed_[index(id)]) queue_insert_before(sentinel(), id);
  }
  for (BlockId id = 1; id < n_blocks_; ++id) {
    if (hashed_[index(id)]) {
      queue_insert_before(sentinel(), id);
      if (first_hashed_ == sentinel()) first_hashed_ = id;
    }
  }
  return true;
}

Status BlockPool::check_invariants() const {
  if (ref_[0] != 0 || hashed_[0] || queued(kNullBlock)) {
    return internal_error("null block: ref {}, hashed {}, queued {}", ref_[0], hashed_[0],
                          queued(kNullBlock));
  }
  int32_t n_hashed = 0;
  for (BlockId id = 1; id < n_blocks_; ++id) {
    if (ref_[index(id)] < 0) return internal_error("block {}: ref {}", id, ref_[index(id)]);
    if ((ref_[index(id)] == 0) != queued(id)) {
      return internal_error("block {}: ref {} but queued {}", id, ref_[index(id)], queued(id));
    }
    if (hashed_[index(id)]) {
      ++n_hashed;
      const auto it = map_.find(hash_[index(id)]);
      if (it == map_.end() || it->second != id) {
        return internal_error("block {}: hash {} not mapped to it", id,
                              to_string(hash_[index(id)]));
      }
    }
  }
  if (n_hashed != static_cast<int32_t>(map_.size())) {
    return internal_error("{} hashed blocks but {} map entries", n_hashed, map_.size());
  }
  for (const auto& [h, id] : map_) {
    if (id <= kNullBlock || id >= n_blocks_ || !hashed_[index(id)] || !(hash_[index(id)] == h)) {
      return internal_error("map entry {} -> block {} does not match the block", to_string(h), id);
    }
  }
  // Walk the queue: links, length, segment order, boundary.
  int32_t count = 0;
  bool in_hashed = false;
  int32_t first_hashed = sentinel();
  for (int32_t at = sentinel(), nx = next_[index(at)]; nx != sentinel();
       at = nx, nx = next_[index(nx)]) {
    if (nx <= kNullBlock || nx >= n_blocks_ || prev_[index(nx)] != at) {
      return internal_error("free queue link broken after {}", at);
    }
    if (++count > n_blocks_) return internal_error("free queue has a cycle");
    if (hashed_[index(nx)]) {
      if (!in_hashed) first_hashed = nx;
      in_hashed = true;
    } else if (in_hashed) {
      return internal_error("unhashed block {} behind a hashed one in the free queue", nx);
    }
  }
  if (prev_[index(sentinel())] < 0 || next_[index(prev_[index(sentinel())])] != sentinel()) {
    return internal_error("free queue tail link broken");
  }
  if (count != n_free_)
    return internal_error("free queue holds {} blocks, n_free {}", count, n_free_);
  if (first_hashed != first_hashed_) {
    return internal_error("first hashed block is {}, boundary says {}", first_hashed,
                          first_hashed_);
  }
  return Status();
}

std::string BlockPool::debug_dump() const {
  std::string out = fmt::format("BlockPool n_blocks={} block_size={} n_free={} n_cached={}\n",
                                n_blocks_, block_size_, n_free_, map_.size());
  for (BlockId id = 0; id < n_blocks_; ++id) {
    out += fmt::format("  block {}: ref={} prev={} next={} hash={}\n", id, ref_[index(id)],
                       prev_[index(id)], next_[index(id)],
                       hashed_[index(id)] ? to_string(hash_[index(id)]) : std::string("-"));
  }
  out += fmt::format("  sentinel: prev={} next={} first_hashed={}\n", prev_[index(sentinel())],
                     next_[index(sentinel())], first_hashed_);
  out += "  free queue:";
  for (BlockId id = front(); id != kNullBlock; id = next(id)) out += fmt::format(" {}", id);
  std::vector<std::pair<std::string, BlockId>> entries;
  entries.reserve(map_.size());
  for (const auto& [h, id] : map_) entries.emplace_back(to_string(h), id);
  std::sort(entries.begin(), entries.end());
  out += "\n  map:";
  for (const auto& [h, id] : entries) out += fmt::format(" {}->{}", h, id);
  out += "\n";
  return out;
}

}  // namespace folio::cache
