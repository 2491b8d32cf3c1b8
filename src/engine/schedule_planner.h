// SchedulePlanner: the scheduler's planning room (vLLM v1's schedule()). Each
// step it takes the queue (running and waiting sequences as plain values:
// token counts, what the cache holds, priorities, admission order) and a
// narrow view of the KV cache (ScheduleCache: free blocks, new sequences,
// prefix hits) and returns a SchedulePlan: which waiting sequences are
// admitted (with their cache sequence and cached prefix), which requests are
// refused, and the step itself: which sequences decode and which prefill
// chunks run with how many tokens (compose_step, engine/step_plan.h). When a
// forward finds the pool short, plan_preemption names the sequence to
// preempt (recompute) or, for a sequence alone, how it ends.
//
// No model, no forward, no sampling and no request state live here: the
// executor (engine/scheduler.cc) builds the queue from its requests, applies
// the plan to them, runs the forward, samples and reports failures. So every
// policy below is unit-tested with a fake cache (tests/engine/
// schedule_planner_test.cc).
//
// Admission, in queue order (priority, then arrival, then choice), stops at
// the first waiting sequence that
//   - would take more running slots than max_seqs leaves (a request of n
//     choices not yet forked reserves min(n, max_seqs) slots);
//   - shares at least a block of prefix with a running sequence still
//     filling (prefix caching on): that fill registers the blocks as its
//     chunks apply, so the newcomer waits rather than compute them twice;
//   - finds no room for a new cache sequence while others run;
//   - with a block pool, needs more blocks for its first chunk (after its
//     prefix hit) than the pool has free besides what the running sequences
//     take next step, while others run: admitting it would only preempt.
//     Its cache sequence is removed again (the cached blocks it took stay
//     cached). A sequence alone is always admitted.
// The cache is touched through ScheduleCache only, as admission goes: a
// prefix hit is measured on a live cache sequence, and taking it changes
// the free blocks the next candidate is judged against. A cache error on
// the way refuses the candidate's request (SchedulePlan::refused) and the
// round goes on without that request's sequences.
// After a preemption the next plan admits nothing (the freed blocks go to
// the sequences already running first).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/step_plan.h"

namespace folio {

// The planner's narrow view of the KV cache. The executor implements it over
// its KvCache; tests fake it.
class ScheduleCache {
 public:
  virtual ~ScheduleCache() = default;
  // Admission counts blocks: the cache allocates from a block pool.
  virtual bool has_block_pool() const = 0;
  virtual bool prefix_caching() const = 0;  // prompt prefixes are shared across sequences
  virtual int64_t block_size() const = 0;   // positions per block
  virtual int64_t free_blocks() const = 0;  // blocks of the pool free now
  // A new empty cache sequence; kResourceExhausted when there is no room.
  virtual Result<int> add_sequence() = 0;
  // Gives the empty sequence `seq` the longest cached prefix of `tokens`;
  // returns the positions it now holds.
  virtual Result<int64_t> take_cached_prefix(int seq, std::span<const int32_t> tokens) = 0;
  virtual void remove_sequence(int seq) = 0;
};

// One sequence as the planner sees it.
struct PlanSequence {
  uint64_t request = 0;             // its request: refusal drops all of a request's sequences
  int priority = 0;                 // higher is admitted first and preempted last
  uint64_t admitted = 0;            // running: admission order
  int64_t held = 0;                 // running: positions its cache sequence holds
  std::span<const int32_t> tokens;  // prompt + generated tokens (all known)
  bool decoding = false;            // sampled since admission: feeds one token (+ drafts)
  int64_t n_draft = 0;              // running and decoding: draft tokens to verify after it
  int slots = 1;                    // running slots it takes (an unforked request: its choices')
};

struct ScheduleQueue {
  std::span<const PlanSequence> running;  // admission order
  std::span<const PlanSequence> waiting;  // priority desc, then arrival, then choice
  uint64_t next_admission = 0;            // admission order the first sequence admitted now gets
};

struct SchedulePlan {
  // A waiting sequence admitted this step, in admission order.
  struct Admission {
    size_t waiting = 0;  // index in ScheduleQueue::waiting
    int seq = -1;        // its cache sequence
    int64_t cached = 0;  // positions taken from the prefix cache
    uint64_t order = 0;  // its admission order
  };
  // A request whose admission failed in the cache; it ends with `status`.
  struct Refusal {
    size_t waiting = 0;  // the waiting sequence it failed at
    Status status;
  };
  // One sequence's share of the step, in step order (priority, then
  // admission order).
  struct Piece {
    bool admitted = false;  // index is in `admissions`, else in ScheduleQueue::running
    size_t index = 0;
    int64_t held = 0;  // positions its cache sequence holds; it feeds tokens[held, held + n)
    int64_t n = 0;
  };
  std::vector<Admission> admissions;
  std::vector<Refusal> refused;
  std::vector<Piece> pieces;  // empty when nothing runs
  StepPlan step;              // token counts of the step (n_decode, n_prefill)
  uint64_t next_admission = 0;
};

// What to do when a forward finds the pool short.
struct Preemption {
  enum class Kind {
    kPreempt,         // release `index` and requeue it (recompute later)
    kEndContextFull,  // alone and decoding: its generation ends (context full)
    kFailRequest,     // alone and still filling: its request fails
  };
  Kind kind = Kind::kPreempt;
  size_t index = 0;  // in the running sequences given
};

struct PlannerOptions {
  int max_seqs = 8;
  int64_t max_batch_tokens = 2048;  // T
  int64_t ubatch = 512;
  int64_t chunk_cap = 512;  // effective per-sequence prefill chunk (> 0)
  bool decode_first = true;
};

class SchedulePlanner {
 public:
  explicit SchedulePlanner(PlannerOptions options) : options_(options) {}

  // Plans one step into `plan` (vectors reused). Admission goes through
  // `cache` as described above; nothing else is changed.
  void plan(const ScheduleQueue& queue, ScheduleCache& cache, SchedulePlan& plan);

  // The pool is short for `running` (non-empty): the lowest priority, most
  // recently admitted sequence is preempted, unless it runs alone. After a
  // preemption the next plan() admits nothing.
  Preemption plan_preemption(std::span<const PlanSequence> running);

  const PlannerOptions& options() const { return options_; }

 private:
  // New blocks a sequence holding `held` positions takes at its next step,
  // at most (a decode token, or a prefill chunk of up to the chunk cap).
  int64_t next_step_blocks(const PlanSequence& s, int64_t held, int64_t block_size) const;
  bool refused(uint64_t request) const;  // this plan refused the request
  void admit(const ScheduleQueue& queue, ScheduleCache& cache, SchedulePlan& plan);
  void compose(const ScheduleQueue& queue, const ScheduleCache& cache, SchedulePlan& plan);

  PlannerOptions options_;
  bool admit_next_ = true;  // false right after a preemption
  // Scratch, reused across steps.
  std::vector<uint64_t> refused_requests_;
  std::vector<const PlanSequence*> live_;  // running + admitted, refused requests left out
  std::vector<StepSequence> step_in_;
  std::vector<SchedulePlan::Piece> order_;
  std::vector<PreemptionCandidate> victims_;
};

// Whether a request fits at all: kOutOfRange when the prompt leaves no room
// in n_ctx or prompt + max_tokens exceeds it; kInvalidArgument when one of
// its sequences could never fit the KV cache even alone (prompt + max_tokens
// - 1 positions, up to n_ctx - 1 when max_tokens < 0, beyond kv_capacity =
// KvCache::token_capacity()); the message says the most max_tokens that fits.
Status check_request_fits(int64_t n_prompt, int64_t max_tokens, int64_t n_ctx, int64_t kv_capacity);

}  // namespace folio
