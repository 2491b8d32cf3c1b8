// Batch: the tokens of one forward call, from one or more sequences. Token i
// belongs to sequence seq_idx[i] at absolute position pos[i]; output[i] says
// whether its logits are wanted. The vectors keep their capacity across
// clear(), so a caller that reuses one Batch allocates nothing per step.
//
// Speculative decoding feeds draft tokens that the forward verifies: they
// are `unverified` (the last tokens of their sequence in the batch). A paged
// cache holds them without publishing their blocks in the prefix cache until
// KvCache::verify() keeps the accepted ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace folio::cache {

struct Batch {
  std::vector<int32_t> tokens;   // [n] token ids
  std::vector<int32_t> pos;      // [n] absolute positions
  std::vector<int32_t> seq_idx;  // [n] sequence of each token (0..n_seq-1 of the cache)
  std::vector<uint8_t> output;   // [n] 1: compute this token's logits
  // Empty when the batch holds no draft token, else [n] 1: a draft token
  // (unverified; the last ones of its sequence in the batch).
  std::vector<uint8_t> unverified;

  void clear() {
    tokens.clear();
    pos.clear();
    seq_idx.clear();
    output.clear();
    unverified.clear();
  }
  void add(int32_t token, int32_t position, int32_t seq, bool want_logits,
           bool draft = false) {
    tokens.push_back(token);
    pos.push_back(position);
    seq_idx.push_back(seq);
    output.push_back(want_logits ? 1 : 0);
    if (draft || !unverified.empty()) {
      unverified.resize(tokens.size() - 1, 0);
      unverified.push_back(draft ? 1 : 0);
    }
  }
  bool is_unverified(size_t i) const { return i < unverified.size() && unverified[i] != 0; }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const {
    int64_t n = 0;
    for (uint8_t o : output) n += o != 0;
    return n;
  }
};

}  // namespace folio::cache
