// NgramProposer: prompt-lookup speculation (no draft model). The sequence's
// last n tokens (the n-gram) are looked up in its own earlier tokens (prompt
// and output); the tokens that followed the most recent earlier occurrence
// are proposed. n goes from n_max down to n_min and the first n with a match
// wins, so the longest matching context decides. Pays off where the output
// repeats its input: code editing, quoting, rewriting JSON.
//
// Cost: O(len * n) token comparisons per call for each n tried (a scan from
// the end; no index is kept, so nothing grows with the sequence).
#pragma once

#include "engine/draft_proposer.h"

namespace folio {

class NgramProposer final : public StatelessProposer {
 public:
  // 1 <= n_min <= n_max (checked by SpeculativeOptions::validate).
  NgramProposer(int n_min, int n_max) : n_min_(n_min), n_max_(n_max) {}
  void propose_one(std::span<const int32_t> tokens, int max_draft,
                   std::vector<int32_t>& out) const override;

 private:
  int n_min_;
  int n_max_;
};

}  // namespace folio
