#include "cache/block_hash.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <fmt/format.h>

namespace folio::cache {
namespace {

// Root input prefix: versions the hashing scheme (16 bytes with the NUL).
constexpr char kRootTag[] = "folio-kv-prefix";
static_assert(sizeof(kRootTag) == 16);

BlockHash from_xxh(const XXH128_hash_t& h) {
  return BlockHash{h.low64, h.high64};
}

// XXH3-128 of parent || tag || bytes.
BlockHash hash_link(uint64_t seed, const BlockHash& parent, char tag, const void* bytes,
                    size_t n_bytes) {
  XXH3_state_t state;
  XXH3_128bits_reset_withSeed(&state, seed);
  const uint64_t words[2] = {parent.lo, parent.hi};
  XXH3_128bits_update(&state, words, sizeof(words));
  XXH3_128bits_update(&state, &tag, 1);
  if (n_bytes > 0) XXH3_128bits_update(&state, bytes, n_bytes);
  return from_xxh(XXH3_128bits_digest(&state));
}

}  // namespace

std::string to_string(const BlockHash& h) {
  return fmt::format("{:016x}{:016x}", h.hi, h.lo);
}

BlockHasher::BlockHasher(std::string_view extra_key, uint64_t seed) : seed_(seed) {
  XXH3_state_t state;
  XXH3_128bits_reset_withSeed(&state, seed);
  XXH3_128bits_update(&state, kRootTag, sizeof(kRootTag));
  if (!extra_key.empty()) XXH3_128bits_update(&state, extra_key.data(), extra_key.size());
  root_ = from_xxh(XXH3_128bits_digest(&state));
}

BlockHash BlockHasher::salted_root(std::string_view salt) const {
  if (salt.empty()) return root_;
  return hash_link(seed_, root_, 'S', salt.data(), salt.size());
}

BlockHash BlockHasher::chain(const BlockHash& parent, std::span<const int32_t> tokens) const {
  return hash_link(seed_, parent, 'B', tokens.data(), tokens.size_bytes());
}

}  // namespace folio::cache
