// DraftProposer: what speculative decoding asks of a proposer. Given a
// sequence's tokens (prompt + output, the last one sampled but not yet in
// the cache), it guesses up to max_draft tokens that follow; the target
// model then verifies them in one forward (engine/scheduler.h, Generator).
// A proposer may propose nothing. Proposals only save time: a wrong one
// costs the positions it adds to the verifying forward, never the output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio {

class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // Replaces `out` with at most max_draft (>= 0) tokens to follow `tokens`.
  virtual void propose(std::span<const int32_t> tokens, int max_draft,
                       std::vector<int32_t>& out) const = 0;
};

}  // namespace folio
