// ProposerSequences: the sequences a proposer keeps in a cache of its own
// (the draft model's, the MTP head's), one per speculating target sequence
// or more, each holding tokens the target verified. Both proposers add,
// remove and re-align their sequences with the target's tokens the same
// way; this is that code, with the proposer's name in its messages.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/kv_cache.h"
#include "core/status.h"

namespace folio {

class ProposerSequences {
 public:
  // `cache` borrowed, non-null; `what` names the proposer in messages
  // ("draft model", "MTP").
  ProposerSequences(cache::KvCache* cache, const char* what) : cache_(cache), what_(what) {}

  // A new empty sequence; kResourceExhausted when the cache has no room.
  Result<int> add();
  // Removes `seq` (nothing when < 0; a failure is logged) and sets it to -1.
  void remove(int& seq);
  // Re-aligns `seq`, which holds `held`, with the target's `tokens`
  // (non-empty): truncated to the longest shared prefix the cache can cut
  // at (KvCache::truncation_point), always leaving at least the last token
  // to feed; a sequence that cannot be cut, or none (-1), is replaced by a
  // new empty one. false when no sequence could be made (seq is then -1).
  bool sync(int& seq, std::vector<int32_t>& held, std::span<const int32_t> tokens);

 private:
  cache::KvCache* cache_;
  const char* what_;
};

// A greedy draft: the argmax of a logits row of n_vocab entries (the first
// of equal logits); *prob its softmax probability when p_min > 0, else 1
// (the proposers compare it with --draft-p-min only then).
int32_t greedy_draft(const float* row, int32_t n_vocab, float p_min, float* prob);

}  // namespace folio
