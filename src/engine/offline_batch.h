// Offline batch: many prompts run to completion on the serving Scheduler
// (the `folio batch` command). Every prompt is submitted up front; the
// scheduler's decode-first steps, prefix sharing, preemption and admission
// decide the rest, exactly as under a server's load. Results come back in
// prompt order, with a summary read from the scheduler's metrics and the
// cache's block pool.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/generator.h"
#include "engine/sampling_params.h"
#include "engine/scheduler.h"
#include "cache/kv_cache.h"

namespace folio {

struct BatchSequenceResult {
  std::string text;                  // generated text (stop strings cut)
  std::vector<int32_t> tokens;       // generated ids (an end-of-generation id is not included)
  int64_t prompt_tokens = 0;         // tokens of the prompt
  int64_t cached_prompt_tokens = 0;  // prompt tokens taken from the cache at first admission
  StopReason stop = StopReason::kLength;
};

struct BatchSummary {
  int64_t prefill_tokens_computed = 0;  // prompt tokens the forwards computed (after cache hits)
  int64_t generated_tokens = 0;         // all prompts
  int32_t blocks_total = 0;             // usable blocks of the pool (0: no block pool)
  int32_t blocks_peak = 0;              // most blocks in use at once
  int32_t blocks_leaked = 0;            // blocks still in use after every sequence ended
  int64_t steps = 0;                    // scheduler steps (forwards)
  int64_t preemptions = 0;
  int64_t draft_tokens = 0;           // speculative decoding: draft tokens verified
  int64_t accepted_draft_tokens = 0;  // of them, accepted
  double seconds = 0;  // wall time from start to the last result
};

struct BatchOutput {
  std::vector<BatchSequenceResult> results;  // in prompt order
  BatchSummary summary;
};

// Runs every prompt (token ids) on a Scheduler over `cache` (which must hold
// no sequences) with `params` (params.max_tokens per prompt; each prompt
// gets its own sampler, the same seed for all when one is set). A prompt the
// scheduler refuses (empty, no room in the context, ...) fails the whole
// run before anything is computed. Errors name the prompt by labels[i]
// ("prompt I" without labels).
Result<BatchOutput> run_batch(const model::Model& model, const tokenizer::Tokenizer& tok,
                              model::ForwardContext& ctx, cache::KvCache& cache,
                              std::span<const std::vector<int32_t>> prompts,
                              const SamplingParams& params, SchedulerOptions options,
                              bool ignore_eos = false, std::span<const std::string> labels = {});

}  // namespace folio
