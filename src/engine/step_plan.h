// Step composition: how one scheduler step spends its token budget. A pure
// function of the running sequences' lengths, so the policy is unit-tested
// without a model (SchedulePlanner calls it every step).
//
// Given T = max_batch_tokens and D decoding sequences (each has sampled and
// feeds exactly one token):
//   decode_first (default): every decoding sequence gets its token; then
//     filling sequences, in the order given, get prefill chunks within a
//     budget of max(ubatch, T - D) tokens. The step may thus hold up to
//     D + max(ubatch, T - D) tokens: decode latency never waits on prefill.
//   !decode_first: filling sequences take chunks within T first; decoding
//     sequences, in the order given, take what is left (one token each).
// Speculative decoding: a decoding sequence may carry n_draft proposed tokens
// to verify after its one token. They are decode tokens too: once every
// decoding sequence has its token, drafts are granted in the order given
// while the decode tokens stay within T (decode_first: before prefill, whose
// budget becomes max(ubatch, T - D) with D counting them; !decode_first:
// from what prefill left). A sequence gets all its drafts or the part that
// fits.
// A chunk is at most chunk_cap tokens (raised to one block when smaller).
// A chunk that does not finish its sequence's known tokens ends on a KV block
// boundary (so every block it writes but the last is full and registers in
// the prefix cache as soon as the step is applied); a sequence whose aligned
// chunk would be empty gets nothing this step. Progress is guaranteed: if no
// token would be fed at all, the first filling sequence gets an unaligned
// chunk of up to max(1, budget) tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace folio {

struct StepSequence {
  int64_t held = 0;       // positions the cache holds
  int64_t total = 0;      // tokens known (prompt + generated); total > held
  bool decoding = false;  // sampled since admission: feeds one token (+ drafts)
  int64_t n_draft = 0;    // decoding: draft tokens it would verify after its token
};

struct StepLimits {
  int64_t max_batch_tokens = 2048;  // T
  int64_t ubatch = 512;
  int64_t chunk_cap = 512;  // per-sequence prefill chunk (> 0)
  bool decode_first = true;
  int64_t block_size = 16;  // KV positions per block (1: no alignment)
};

struct StepPlan {
  std::vector<int64_t> n_tokens;  // [n_seqs] tokens each sequence feeds, from `held`
  int64_t n_decode = 0;           // decode tokens in the step (draft tokens included)
  int64_t n_draft = 0;            // of them, draft tokens
  int64_t n_prefill = 0;          // prefill (fill / refill) tokens in the step
  int64_t size() const { return n_decode + n_prefill; }
};

// Fills `plan` (vectors reused) for `seqs` in priority order.
void compose_step(std::span<const StepSequence> seqs, const StepLimits& limits, StepPlan& plan);

// Preemption: of the running sequences, the one to preempt when the pool is
// short: the lowest priority, then the most recently admitted (the least
// work lost, FCFS kept). `running` is non-empty.
struct PreemptionCandidate {
  int priority = 0;
  uint64_t admitted = 0;  // admission order
};
size_t choose_victim(std::span<const PreemptionCandidate> running);

// The default per-sequence chunk cap: min(T, max(ubatch, ceil(0.04 * n_ctx))).
int64_t default_chunk_cap(int64_t max_batch_tokens, int64_t ubatch, int64_t n_ctx);

}  // namespace folio
