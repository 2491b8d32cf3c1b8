// Scheduler: the serving engine's continuous-batching loop (DESIGN.md,
// "Scheduler"). Requests arrive from any thread (submit); one step thread
// owns the model's forward context and KV cache and, every step, builds one
// Batch:
//   1. decode-first: one token for every running sequence that has sampled
//      (D tokens);
//   2. prefill chunks of sequences still (re)filling within a budget of
//      max(ubatch, T - D) tokens (T = max_batch_tokens), each sequence's
//      chunk capped (chunk_cap) and aligned so it ends on a KV block boundary
//      where the prompt continues past it;
//   3. admission of waiting requests (priority, then FCFS) while max_seqs
//      allows: the prompt is looked up in the prefix cache
//      (take_cached_prefix) and only the rest is prefilled. With a block
//      pool, a request is admitted only while the free blocks cover its
//      first chunk besides what the running sequences take next (or when
//      nothing else runs), so admission does not cause preemption. A request
//      sharing at least a block of prefix with a sequence still filling
//      waits for that fill (its blocks are registered as its chunks apply).
// With decode_first off, prefill chunks take the whole budget first and
// decode tokens fill what is left.
//
// When the pool is short (plan -> kResourceExhausted), the most recently
// admitted running sequence with the lowest priority is preempted by
// recompute: its cache sequence is removed, it returns to the front of the
// waiting queue with prompt + generated tokens, and resumes later; sampler,
// detokenizer and stop-string state carry over, so greedy output equals an
// uninterrupted run.
//
// n > 1: the prompt is prefilled once, then forked (fork_sequence shares its
// blocks); each choice samples on its own (seed + choice index when a seed
// is given). Choices beyond max_seqs wait and start later from the prefix
// cache (only the prompt's last partial block is recomputed).
//
// Callbacks run on the step thread, in token order, and must not block (the
// server queues events per connection); they may call submit() / cancel().
// cancel() from any thread: the request's sequences are removed and their
// blocks freed before the next step; on_done then reports status OK with
// StopReason::kCancelled for every choice that had not ended.
//
// Failures: when a forward fails for another reason than a short pool, each
// request of the batch is run alone once more, and those that fail again
// end with the status (on_done; their unfinished choices read kCancelled);
// the others continue. A sampling error fails its request.
// submit() refuses a request whose sequences could not fit the KV cache even
// alone (KvCache::token_capacity). Should one still not fit while running
// alone (a safety net: the check is exact for the caches here), it ends
// kContextFull while generating, or fails with kResourceExhausted while
// filling its prompt. The scheduler keeps serving the others.
//
// Speculative decoding (options.spec): before planning, each decoding
// sequence of a request that allows it gets up to draft_max proposed tokens
// (none when more than spec.max_batch sequences decode, or while its
// acceptance pauses it: SpeculationTracker; no more than its reasoning
// budget leaves before a forced token) from the proposer start() makes
// (n-gram lookup, or a draft model asked for every such sequence at once;
// each choice is its own proposer sequence, released when it ends or is
// preempted). The planner counts them as decode
// tokens (compose_step); the forward computes logits for the sequence's
// last token and every draft. The executor then samples row 0, and row i+1
// only while the token sampled from row i equals draft i: each sample is the
// one a plain decode step would draw (same logits, sampler state, grammar,
// penalties, stop strings and limits, in order), so greedy output equals a
// run without speculation token for token, and a seeded sampled run too.
// For sampled requests this is rejection sampling with a one-hot proposal:
// the draft is accepted with probability p(draft), and otherwise the token
// comes from p without the draft, renormalised. The cache then keeps the
// accepted positions (KvCache::verify: the rejected ones' blocks are freed,
// and only verified blocks are hashed and published as KV events). A step
// the pool cannot hold with its drafts runs again without them before
// anything is preempted.
//
// Two rooms: the policy above (admission, step composition, preemption
// choice, the submit-time fit check) is SchedulePlanner
// (engine/schedule_planner.h), which sees the queue as plain values and the
// cache through a narrow view, and never the model; this class is the
// executor: it applies each plan to the requests, builds the Batch, runs the
// forward, samples, isolates failures, keeps the gauges and publishes KV
// events. Per-sequence sampling / text / stop state is SequenceState
// (engine/sequence_state.h). The scheduler serves `folio serve` and, through
// run_batch (engine/offline_batch.h), `folio batch`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "engine/generator.h"
#include "engine/reasoning_budget.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_trigger.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/serving_metrics.h"
#include "engine/speculative_options.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace folio {

struct SchedulerOptions {
  int max_seqs = 8;                 // sequences running at once (--max-seqs / --parallel)
  int64_t max_batch_tokens = 2048;  // T: tokens per step, decode + prefill (--max-batch-tokens)
  int64_t ubatch = 512;             // n_ubatch (--ubatch)
  // Per-sequence prefill chunk cap; 0 = min(T, max(ubatch, ceil(0.04 * n_ctx))).
  int64_t chunk_cap = 0;
  bool decode_first = true;  // false: prefill chunks take the budget first
  // Requests waiting beyond this make submit() fail with kResourceExhausted
  // (the server answers 503).
  int64_t max_waiting = 1024;
  // Non-null (with a paged cache): the prefix cache's changes (KV events for
  // routers, cache/kv_events.h), called on the scheduler thread with every
  // step's events in order, after the step; the first call's first event is
  // an all-cleared (the cache starts empty), so a subscriber that sees it
  // knows the engine (re)started. Must not block: hand the events to another
  // thread.
  std::function<void(std::vector<cache::KvEvent>)> on_kv_events;
  // Speculative decoding (engine/speculative_options.h): each step a
  // decoding sequence may carry proposed tokens that the forward verifies.
  // start() refuses it for caches that cannot hold drafts (hybrid models).
  SpeculativeOptions spec;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, non-empty
  SamplingParams params;        // validated by submit()
  int n = 1;                    // choices sharing the prompt's blocks (1..16)
  int priority = 0;             // higher is admitted first and preempted last
  bool ignore_eos = false;
  bool render_special = false;
  bool speculative = true;  // false: this request never carries drafts (SchedulerOptions::spec)
  // Non-null: every choice's output follows this grammar (structured
  // outputs); end-of-generation tokens only where it is complete.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Non-empty: the grammar is lazy, holding from a trigger on
  // (grammar/grammar_trigger.h); it then reads control tokens as their text
  // when render_special.
  grammar::GrammarTriggers grammar_triggers;
  // Non-null: each choice's reasoning blocks get this token budget, after
  // which the block's closing tokens are forced (engine/reasoning_budget.h).
  std::shared_ptr<const ReasoningBudgetSpec> reasoning_budget;
};

// One generated token of one choice.
struct TokenEvent {
  int choice = 0;
  SampledToken token;  // id, and logprobs when params.logprobs
  std::string text;    // text that became final with this token (may be empty)
  // This choice's tokens so far (this one included) known to be part of the
  // output: the first kept_tokens of them have their text start in text
  // already delivered, so no stop string can cut them any more
  // (TextStream::kept_tokens). The others may still be dropped; the final
  // count is ChoiceResult::kept_tokens. Non-decreasing over a choice's events.
  int64_t kept_tokens = 0;
};

struct ChoiceResult {
  StopReason stop = StopReason::kLength;
  // Tokens sampled and delivered by on_token (end-of-generation tokens not
  // included). Usage counts all of them.
  int64_t n_generated = 0;
  // The first kept_tokens of them make the output: those whose text starts
  // before the stop string's cut (a token straddling it is kept; tokens
  // wholly at or after it are not). n_generated when the choice ended for
  // any other reason than a stop string (end of generation, length, full
  // context); for a cancelled choice, the tokens whose text was delivered.
  // Logprobs of the output list these tokens only.
  int64_t kept_tokens = 0;
  std::string tail;  // final text not yet delivered by on_token (held-back bytes)
};

struct RequestResult {
  Status status;                      // non-OK: the request failed (no other choice output follows)
  std::vector<ChoiceResult> choices;  // [n]
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // prompt tokens taken from the prefix cache at first admission
  int64_t completion_tokens = 0;     // all choices
};

struct RequestCallbacks {
  std::function<void(const TokenEvent&)> on_token;  // step thread
  std::function<void(const RequestResult&)>
      on_done;  // step thread, exactly once per accepted request
};

class Scheduler {
 public:
  // All borrowed; `cache` holds no sequences. Paged caches (and hybrid ones)
  // report blocks via KvCache::block_manager().
  Scheduler(const model::Model& model, const tokenizer::Tokenizer& tok, model::ForwardContext& ctx,
            cache::KvCache& cache, SchedulerOptions options);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts / stops the step thread (stop: queued and running requests end
  // kCancelled; later submits fail). start() checks the options
  // (kInvalidArgument) and may be called once. Requests submitted before
  // start() wait for it.
  Status start();
  void stop();

  // Queues a request. Errors (nothing queued, no callback runs):
  // kInvalidArgument for bad parameters (SamplingParams::validate, n outside
  // [1, 16], empty prompt, token ids outside the vocabulary), kOutOfRange when the prompt leaves no
  // room in n_ctx or prompt + max_tokens exceeds it (the server's 413 names both numbers),
  // kInvalidArgument (the server's 400) when one of its sequences could never fit the KV
  // cache even alone: prompt + max_tokens - 1 positions (max_tokens unset: up to n_ctx - 1)
  // beyond KvCache::token_capacity(); the message says the most max_tokens that fits.
  // kResourceExhausted when the waiting queue is full or the scheduler is
  // stopping. Returns the request id. max_tokens == 0: on_done comes at once
  // (kLength, nothing generated).
  Result<uint64_t> submit(GenerationRequest request, RequestCallbacks callbacks);
  // Cancels a queued or running request (unknown / finished ids: no-op).
  void cancel(uint64_t id);

  // Snapshot of counters, gauges and histograms (thread-safe).
  ServingMetrics::Snapshot metrics() const;
  const SchedulerOptions& options() const { return options_; }
  int64_t effective_chunk_cap() const;

  // Blocks until no request is queued or running (tests, benchmarks); needs
  // start() when requests are queued.
  void wait_idle();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  SchedulerOptions options_;
};

}  // namespace folio
