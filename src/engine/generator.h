// Generator: one sequence's generate loop over a Model, for the `run` and
// `chat` commands (the server's scheduler batches many sequences instead).
// It keeps the tokens held in its KV cache sequence, so a chat turn only
// prefills what the cache does not already hold (the longest common prefix
// with the new prompt is kept, the rest truncated).
//
//   prompt tokens --prefill (chunks of n_batch, logits only for the last)-->
//   sample -> stream-detokenize -> stop strings -> decode one token -> ...
//
// With speculation (GenerateOptions::spec) each decode feeds the sampled
// token plus up to draft_max proposed ones, all with logits; the next rows
// are sampled in turn while each sampled token equals the draft whose
// logits come next, and the cache keeps the accepted positions
// (KvCache::verify). Every token is the one a plain decode would sample
// (same logits, sampler state and stop checks), so output does not change.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/speculative_options.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace folio {

enum class StopReason { kLength, kEndOfGeneration, kStopString, kCancelled, kContextFull };
const char* stop_reason_name(StopReason r);

struct GenerateStats {
  int64_t n_prompt = 0;        // tokens prefilled by this call (after cache reuse)
  int64_t n_prompt_cached = 0; // prompt tokens already in the cache
  int64_t n_generated = 0;
  double prompt_seconds = 0;   // prefill wall time
  double gen_seconds = 0;      // first sampled token to the end
  StopReason stop = StopReason::kLength;
  uint64_t seed = 0;           // the sampler's seed (drawn when params.seed was unset)
  std::vector<int32_t> tokens; // generated ids (an end-of-generation id is not included)
  SpeculationCounts spec;      // verifications (options.spec)
};

struct GenerateOptions {
  int64_t n_predict = 256;     // < 0: until end of generation or context full
  int64_t n_batch = 512;       // prefill chunk size
  bool ignore_eos = false;     // keep going past end-of-generation tokens
  bool render_special = false; // print control tokens' text
  // Speculative decoding (validated by generate()). A step the cache cannot
  // hold with its drafts (kResourceExhausted: a hybrid cache short of free
  // state slots for its snapshots) runs without them.
  SpeculativeOptions spec;
};

class Generator {
 public:
  // All borrowed; `cache` must have a sequence `seq`.
  Generator(const model::Model& model, const tokenizer::Tokenizer& tok, model::ForwardContext& ctx,
            cache::KvCache& cache, int seq = 0);

  // Generates a continuation of `prompt` (the whole sequence so far: tokens
  // the cache already holds are reused). on_text receives text as it becomes
  // final (whole UTF-8 characters, stop strings held back and cut); returning
  // false cancels. Sampling state (seed, penalty window) starts afresh.
  Result<GenerateStats> generate(std::span<const int32_t> prompt, const SamplingParams& params,
                                 const GenerateOptions& options,
                                 const std::function<bool(std::string_view)>& on_text);

  // Tokens currently held in the cache for this sequence.
  const std::vector<int32_t>& history() const { return history_; }
  // Forgets the cached sequence.
  void reset();

 private:
  // Runs tokens [begin, end) of `tokens` at positions begin.. ; logits of the
  // last one when want_logits. Extends history_ on success.
  Result<TensorView> feed(std::span<const int32_t> tokens, bool want_logits);
  // Feeds `id` and `draft` (unverified), logits for each.
  Result<TensorView> feed_draft(int32_t id, std::span<const int32_t> draft);
  // Ends a verification: the cache and history_ keep the fed token and the
  // first `accepted` drafts of the last feed_draft (n_draft drafts).
  Status settle(int64_t n_draft, int64_t accepted);

  const model::Model& model_;
  const tokenizer::Tokenizer& tok_;
  model::ForwardContext& ctx_;
  cache::KvCache& cache_;
  int seq_;
  cache::Batch batch_;
  std::vector<int32_t> history_;
  std::vector<int32_t> draft_;  // the drafts of the last feed_draft
  SamplerWorkspace workspace_;
};

}  // namespace folio
