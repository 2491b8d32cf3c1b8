// SpecBench: one-sequence decode speed with and without speculative
// decoding, for `folio bench --spec ngram|draft|mtp`. Unlike the tg tests of
// BenchRunner the tokens are not random: a proposer needs text that repeats
// (n-gram lookup) or that a smaller model predicts (a draft model), so each
// measurement generates a real continuation of a real prompt through the
// Generator, the loop `folio run` uses.
//
// A measurement of one prompt: `repetitions` pairs of greedy generations of
// n_gen tokens (or until the end of generation), one without speculation
// ("base") and one with the given options ("spec"), the order alternating
// pair by pair (base, spec, spec, base, ...) so that a slow stretch of a
// loaded machine falls on both; each run starts from an empty sequence
// (the prompt is prefilled again, untimed). tokens/s is generated tokens /
// decode time as `folio run` reports it (GenerateStats::gen_seconds: from
// the first sampled token to the last, the proposer's work included).
// Greedy speculation must give the same tokens as plain decoding; every
// run's tokens are compared with the first base run's (`identical`).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_runner.h"
#include "cache/kv_cache.h"
#include "core/status.h"
#include "engine/speculative_options.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace folio::tools {

struct SpecBenchOptions {
  int repetitions = 5;    // timed pairs (base + spec)
  bool warmup = true;     // one untimed pair of at most 16 tokens first
  int64_t n_gen = 128;    // tokens to generate per run (fewer at end of generation)
  int64_t n_batch = 512;  // prefill chunk
  uint64_t seed = 1234;   // the sampler's seed (greedy: no draw uses it)
  SpeculativeOptions spec;  // must be enabled
  std::FILE* log = nullptr;  // progress lines; nullptr: silent
};

struct SpecBenchResult {
  std::string prompt;         // label of the prompt (the caller's)
  int64_t n_prompt = 0;       // prompt tokens
  int64_t n_gen = 0;          // tokens asked for
  int64_t n_generated = 0;    // tokens the first base run generated
  std::vector<double> base_ts;  // [repetitions] tokens/s without speculation
  std::vector<double> spec_ts;  // [repetitions] tokens/s with it
  MeanStddev base;
  MeanStddev spec;
  double speedup = 0;  // spec.mean / base.mean
  // Summed over the timed spec runs.
  SpeculationCounts counts;
  // Every run (warmup included) generated the first base run's tokens.
  bool identical = true;
};

// Measures `prompt` (tokens, BOS included as the caller wants) on `cache`'s
// sequence `seq` (which must exist; it is emptied before each run and left
// empty). Model, tokenizer, context and cache are borrowed; for a draft
// model, options.spec.draft names its own.
Result<SpecBenchResult> run_spec_bench(const model::Model& model,
                                       const tokenizer::Tokenizer& tok,
                                       model::ForwardContext& ctx, cache::KvCache& cache,
                                       int seq, std::span<const int32_t> prompt,
                                       const std::string& label, const SpecBenchOptions& options);

}  // namespace folio::tools
