// BatchRunner: many prompts through one Model and one paged KV cache at once
// (a PagedKvCache, or a HybridKvCache over one: KvCache::block_manager()),
// for the `batch` command (an offline, run-to-completion scheduler; the
// server's scheduler adds arrivals and streaming on top of the same ideas).
//
// Each step builds one Batch:
//   - one decode token for every running sequence that has sampled;
//   - prefill chunks of the running sequences still (re)filling, at most
//     n_batch prefill tokens per step in all;
// after admitting waiting prompts (FIFO, up to `parallel` running). Admission
// takes the cache's K/V of the longest cached prompt prefix
// (take_cached_prefix), so a prefix shared by many prompts is computed once.
// A prompt that shares at least a block of prefix with a sequence still
// filling waits for that fill to finish (blocks are registered only after
// their forward), so the shared part is not computed twice.
//
// If a batch does not fit the pool (kResourceExhausted), the most recently
// admitted running sequence is preempted: its cache sequence is removed and
// it goes back to the front of the queue with its tokens so far (prompt +
// generated); when admitted again it recomputes what the cache no longer
// holds. Its sampler and detokenizer state carry over, so its output is the
// same as without preemption.
//
// Per sequence, sampling, detokenization, stop strings and end of generation
// work exactly as in Generator, so greedy outputs equal Generator's solo
// runs (paged, batched and chunked forwards are bit-identical to solo ones).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cache/paged_kv_cache.h"
#include "core/status.h"
#include "engine/generator.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace folio {

struct BatchOptions {
  int parallel = 4;             // sequences running at once
  int64_t n_predict = 256;      // per prompt; < 0: until end of generation or context full
  int64_t n_batch = 512;        // prefill tokens per step (all sequences together)
  bool ignore_eos = false;      // keep going past end-of-generation tokens
  bool render_special = false;  // print control tokens' text
};

struct BatchSequenceResult {
  std::string text;                  // generated text (stop strings cut)
  std::vector<int32_t> tokens;       // generated ids (an end-of-generation id is not included)
  int64_t prompt_tokens = 0;         // tokens of the prompt
  int64_t cached_prompt_tokens = 0;  // prompt tokens taken from the cache at first admission
  int64_t generated_tokens = 0;
  StopReason stop = StopReason::kLength;
};

struct BatchSummary {
  int64_t prefill_tokens_computed = 0;  // (re)fill tokens the forwards computed, all sequences
  int64_t decode_tokens_computed = 0;   // one per decode step per sequence
  int32_t blocks_total = 0;             // usable blocks of the pool
  int32_t blocks_peak = 0;              // most blocks in use at once during the run
  int32_t blocks_leaked = 0;            // blocks still in use after every sequence ended
  int64_t steps = 0;                    // forwards that succeeded
  int64_t preemptions = 0;
  double seconds = 0;  // wall time of run()
};

struct BatchOutput {
  std::vector<BatchSequenceResult> results;  // in prompt order
  BatchSummary summary;
};

class BatchRunner {
 public:
  // All borrowed. `cache` should hold no sequences (run() adds and removes its
  // own; blocks_leaked counts blocks in use after it).
  BatchRunner(const model::Model& model, const tokenizer::Tokenizer& tok,
              model::ForwardContext& ctx, cache::KvCache& cache);

  // Generates a continuation of every prompt (token ids, non-empty, shorter
  // than the cache's n_ctx). Each sequence gets its own Sampler from
  // `params` (the same seed for all when params.seed is set).
  Result<BatchOutput> run(std::span<const std::vector<int32_t>> prompts,
                          const SamplingParams& params, const BatchOptions& options);

 private:
  const model::Model& model_;
  const tokenizer::Tokenizer& tok_;
  model::ForwardContext& ctx_;
  cache::KvCache& cache_;  // a paged cache (block_manager() != nullptr)
  SamplerWorkspace workspace_;
};

}  // namespace folio
