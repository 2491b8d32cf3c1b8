// How `folio bench` reports a result: one markdown table row (llama-bench's
// columns plus the KV type and, when the memory bandwidth is known, the
// decode weight bytes per token and tg speed as a fraction of the bandwidth
// limit), or one JSON object per line. External checks parse the JSON, so
// its keys are a stable interface:
//   test ("pp512", "tg128", "tg128x8"), n_prompt, n_gen, n_seqs, threads,
//   tokens_per_s (mean), stddev, samples_ts, samples_ns, model, model_type,
//   model_size, n_params, backend, isa, repack, kv_type, n_ubatch, tg_prompt,
//   repetitions, decode_bytes (weight bytes one decode step reads),
//   state_bytes (recurrent state bytes one decode step reads and writes per
//   sequence; 0 without recurrent layers)
// and, for tg tests when the bandwidth was measured or given: bw_gbps,
// bw_limit_tokens_per_s (n_seqs * bandwidth / decode_bytes) and bw_fraction
// (tokens_per_s / that limit); with recurrent layers also
// bw_fraction_with_state (the bytes moved, decode_bytes + n_seqs *
// state_bytes per step, as a fraction of the bandwidth). With a device that counts its command
// stream (Backend::stream_counters): dispatches_per_token, barriers_per_token and
// submits_per_token, per timed forward: a decode step of a tg test (one token
// of each sequence), an n_ubatch chunk of a pp test; recorded_steps and
// replayed_steps, the timed forwards' segments (work between two waits) the
// device captured and replayed (all repetitions). With --profile:
// profile_wall_ns (the timed parts' wall time, all repetitions),
// profile_forwards and profile (one object per op kind: op, calls, ns).
//
// `folio bench --spec` reports one row (or JSON object) per prompt
// (bench/spec_bench.h) with the keys:
//   test ("spec"), spec_type ("ngram", "draft"), prompt, n_prompt, n_gen,
//   n_generated, threads, model, model_type, draft_model ("" for ngram),
//   draft_max, backend, isa, kv_type, repetitions, base_tokens_per_s,
//   base_stddev, base_samples_ts, spec_tokens_per_s, spec_stddev,
//   spec_samples_ts, speedup (spec / base means), verifications,
//   draft_tokens, accepted_tokens, acceptance (accepted / draft tokens),
//   accepted_per_pos, identical (greedy output equal with and without).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/mem_bandwidth.h"
#include "bench/spec_bench.h"

namespace folio::tools {

struct BenchRecord {
  BenchModelInfo model;
  std::string backend;  // "cpu-avx512"
  std::string isa;      // "avx512"
  bool repack = true;   // weights in packed buffer types where a kernel reads them
  int threads = 0;
  std::string kv_type;  // "f16"
  int64_t n_ubatch = 0;
  int64_t tg_prompt = 0;
  BenchResult result;
  double bw_gbps = 0;  // memory bandwidth (triad); 0: unknown

  // Upper bound on tokens/s of a tg test from bandwidth and weight bytes
  // (0 for pp tests or an unknown bandwidth).
  double bw_limit_tokens_per_s() const;
};

// One JSON object (no newline) with the keys above.
std::string bench_json_line(const BenchRecord& r);
// The membench result as one JSON object: test "membench", threads,
// triad_gbps, read_gbps, array_bytes, runs, pages ("4k", or "2m" where
// the arrays were on huge pages).
std::string membench_json_line(const MemBandwidthResult& m);

// Markdown table: header (two lines), then one row per record. with_bw adds
// the columns "B/tok" and "% BW" (filled for tg tests); with_stream the
// command-stream counts per forward "disp", "barr", "subm" (see above).
std::string bench_table_header(bool with_bw, bool with_stream = false);
std::string bench_table_row(const BenchRecord& r, bool with_bw, bool with_stream = false);

// A record's op profile (empty without one) as a titled markdown table: one
// row per op kind (calls per timed forward, calls, total ms, us per call,
// share of the timed wall time), then "(outside ops)", the wall time no op
// accounts for (the forward's own work between ops: routing, arena,
// batch and cache bookkeeping), and the total.
std::string bench_profile_table(const BenchRecord& r);

struct SpecBenchRecord {
  BenchModelInfo model;
  std::string draft_model;  // file name of the draft model; "" for n-gram lookup
  std::string spec_type;    // "ngram", "draft"
  int draft_max = 0;
  std::string backend;
  std::string isa;
  int threads = 0;
  std::string kv_type;
  SpecBenchResult result;
};

std::string spec_bench_json_line(const SpecBenchRecord& r);
std::string spec_bench_table_header();
std::string spec_bench_table_row(const SpecBenchRecord& r);

}  // namespace folio::tools
