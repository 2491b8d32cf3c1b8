// Prefix hashing for the paged KV cache: the hash of full block i chains the
// hash of block i-1 with the block's token ids, so a block's hash names its
// whole prefix (tokens 0 .. (i+1) * block_size - 1), never just its own
// tokens. The chain starts from a root that covers everything else that
// changes K/V contents: the owner's "extra key" (model identity, KV dtype,
// rope settings, ...) and, per sequence, an optional cache salt (a LoRA
// adapter, a tenant that must not share cache entries with others).
//
// Hashes are XXH3 128-bit (libxxhash). 128 bits, not 64: a collision would
// silently hand one sequence the K/V of another prefix, so the odds must stay
// negligible over the lifetime of a server (vLLM moved off a 64-bit hash for
// this reason). An optional seed makes hash values unpredictable across runs.
// Token ids are hashed in host byte order; hashes are never persisted.
//
// Inputs are domain-separated: a block is hashed as parent || 'B' || tokens,
// a salted root as parent || 'S' || salt, so no salt can impersonate a block.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace folio::cache {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const BlockHash&, const BlockHash&) = default;
};

// For unordered containers: XXH3 output is already well mixed.
struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ h.hi); }
};

// 32 lowercase hex digits (hi then lo), for dumps and logs.
std::string to_string(const BlockHash& h);

class BlockHasher {
 public:
  // extra_key: bytes naming everything besides the tokens that changes K/V
  // contents. seed: 0 for reproducible hashes, or a random value per process.
  explicit BlockHasher(std::string_view extra_key = {}, uint64_t seed = 0);

  // Parent of block 0 for sequences without a salt.
  const BlockHash& root() const { return root_; }
  // Parent of block 0 for a sequence with `salt` (empty salt = root()).
  BlockHash salted_root(std::string_view salt) const;
  // Hash of a block whose predecessor has hash `parent`.
  BlockHash chain(const BlockHash& parent, std::span<const int32_t> tokens) const;

 private:
  uint64_t seed_;
  BlockHash root_;
};

}  // namespace folio::cache
