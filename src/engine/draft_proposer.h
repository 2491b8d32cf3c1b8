// DraftProposer: what speculative decoding asks of a proposer. Each decode
// step an engine hands it the sequences that may speculate, each with its
// tokens (prompt + output, the last one sampled but not yet in the target's
// cache), and it guesses up to max_draft tokens that follow each; the
// target model then verifies them in one forward (engine/scheduler.h,
// Generator). A proposer may propose nothing. Proposals only save time: a
// wrong one costs the positions it adds to the verifying forward, never the
// output (the acceptance rule does not depend on where drafts come from).
//
// Per sequence, under an id the engine chooses (unique among live ones):
//   begin(id)    before its first proposal;
//   propose(...) once per step, for every speculating sequence together
//                (a draft model runs them as one batch);
//   accept(id,n) after the target verified the sequence's last proposal and
//                kept its first n tokens (not called when the step ran
//                without them);
//   release(id)  when it ends, is cancelled or preempted (its state freed).
// A proposer with state per sequence (the draft model's KV cache,
// engine/draft_model_proposer.h) keeps it in step with the target through
// these calls; StatelessProposer is the base of those that need none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace folio {

// One sequence's share of a step's proposal.
struct DraftRequest {
  uint64_t id = 0;                  // begun, not released
  std::span<const int32_t> tokens;  // prompt + output; the last one not in the target's cache
  int max_draft = 0;                // >= 0
  // The target cache sequence holding the tokens (an MTP head reads the
  // target's hidden states by it); -1: not given.
  int seq = -1;
};

class DraftProposer {
 public:
  virtual ~DraftProposer() = default;
  // `id` starts speculating. kResourceExhausted: no room for it now (the
  // engine runs it without drafts and tries again at a later step).
  virtual Status begin(uint64_t id) = 0;
  // Replaces out[i] with at most requests[i].max_draft tokens to follow
  // requests[i].tokens (out.size() == requests.size()). An error leaves
  // every out[i] empty and each sequence usable at the next step.
  virtual Status propose(std::span<const DraftRequest> requests,
                         std::span<std::vector<int32_t>> out) = 0;
  // The target kept the first `accepted` tokens of `id`'s last proposal.
  virtual void accept(uint64_t id, int accepted) = 0;
  // Forgets `id` (unknown ids: nothing happens).
  virtual void release(uint64_t id) = 0;
};

// A proposer whose proposal is a function of the sequence's tokens alone
// (n-gram lookup): nothing to begin, accept or release.
class StatelessProposer : public DraftProposer {
 public:
  // Replaces `out` with at most max_draft (>= 0) tokens to follow `tokens`.
  virtual void propose_one(std::span<const int32_t> tokens, int max_draft,
                           std::vector<int32_t>& out) const = 0;

  Status begin(uint64_t) final { return Status(); }
  Status propose(std::span<const DraftRequest> requests,
                 std::span<std::vector<int32_t>> out) final {
    for (size_t i = 0; i < requests.size(); ++i)
      propose_one(requests[i].tokens, requests[i].max_draft, out[i]);
    return Status();
  }
  void accept(uint64_t, int) final {}
  void release(uint64_t) final {}
};

}  // namespace folio
