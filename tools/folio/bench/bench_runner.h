// BenchRunner: llama-bench-style throughput measurements of one loaded model
// on one ForwardContext, for `folio bench`. Token ids are random (fixed
// seed), so no tokenizer is involved; every forward goes through
// Model::forward and a paged KV cache the runner owns (sized for its tests,
// prefix caching off, so repetitions never reuse each other's K/V; hybrid
// models get recurrent state for their sequences beside it).
//
// Tests (BenchTest::name()):
//   ppP     prefill of P tokens of one fresh sequence in chunks of n_ubatch
//           tokens per forward; logits for the last token only;
//           tokens/s = P / time.
//   tgN     one sequence: a tg_prompt-token prompt (untimed), then N
//           sequential single-token forwards, each with logits (llama-bench's
//           text generation); tokens/s = N / time.
//   tgNxS   S sequences, each after its own tg_prompt-token prompt (untimed,
//           one forward for all), decode together: N forwards of S tokens
//           (one per sequence, each with logits); tokens/s = S * N / time
//           (llama.cpp batched-bench's S_TG).
// Each repetition starts from an empty cache; a warmup run (untimed) of the
// same shape precedes the repetitions. With `profile` the runner times every
// op of the timed forwards (model/op_profile.h) and reports the totals per
// op kind with the timed wall time they sit in. With a device backend the runner also
// counts what the timed forwards recorded into its command stream
// (Backend::stream_counters): per forward, i.e. per decode step of a tg test
// (one token of each sequence) and per n_ubatch chunk of a pp test.
#pragma once

#include "cache/cache_memory.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "model/op_profile.h"

namespace folio::tools {

struct BenchTest {
  int64_t n_prompt = 0;  // pp: tokens prefilled (then n_gen == 0)
  int64_t n_gen = 0;     // tg: decode steps per sequence (then n_prompt == 0)
  int n_seqs = 1;        // tg: sequences decoding together

  bool is_prefill() const { return n_gen == 0; }
  // "pp512", "tg128", "tg128x8" (x only for n_seqs > 1).
  std::string name() const;
};

// The tests of one configuration in llama-bench order: each prompt size of
// `n_prompt` (> 0), then each generation length of `n_gen` (> 0) for each
// sequence count of `n_seqs` (>= 1). Zeros are skipped (like -p 0 / -n 0).
std::vector<BenchTest> make_bench_tests(std::span<const int64_t> n_prompt,
                                        std::span<const int64_t> n_gen,
                                        std::span<const int> n_seqs);

struct BenchOptions {
  int repetitions = 5;
  int64_t n_ubatch = 512;  // prefill tokens per forward
  int64_t tg_prompt = 1;   // tokens each tg sequence is prefilled with, untimed
  bool warmup = true;
  uint64_t seed = 1234;  // random token ids
  DType kv_type = DType::F16;
  int32_t kv_block_size = 16;
  std::FILE* log = nullptr;  // progress lines (stderr in the CLI); nullptr: silent
  cache::CacheAllocator kv_alloc;  // KV storage (a device's memory); empty: host
  bool profile = false;            // time every op of the timed forwards
};

// Command-stream counts per timed forward (a decode step, a prefill chunk).
struct StreamPerForward {
  double dispatches = 0;
  double barriers = 0;
  double submits = 0;
  // Segments of the timed forwards (the work between two waits: one per
  // decode step, more with MoE layers) a device captured while recording
  // and replayed instead of recording (Backend::set_replayable), in all.
  int64_t recorded_steps = 0;
  int64_t replayed_steps = 0;
};

// The ops of a test's timed forwards, over all repetitions.
struct BenchProfile {
  std::vector<model::OpProfileRow> ops;  // per op kind, largest time first
  double wall_ns = 0;                    // the timed parts' wall time (sum of samples_ns)
  int64_t forwards = 0;                  // timed forwards (decode steps, prefill chunks)
  int repetitions = 0;

  double ops_ns() const;  // sum of ops[].ns
};

struct BenchResult {
  BenchTest test;
  std::optional<BenchProfile> profile;  // set with BenchOptions::profile
  // Set when a backend of the context counts its command stream.
  std::optional<StreamPerForward> stream;
  std::vector<double> samples_ns;  // [repetitions] wall time of the timed part
  std::vector<double> samples_ts;  // [repetitions] tokens/s
  double mean_ts = 0;
  double stddev_ts = 0;  // sample standard deviation (0 for one repetition)
};

// Mean and sample standard deviation (n - 1), as llama-bench reports them.
struct MeanStddev {
  double mean = 0;
  double stddev = 0;
};
MeanStddev mean_stddev(std::span<const double> samples);

// What the report says about a model.
struct BenchModelInfo {
  std::string file;         // file name without directories
  std::string type;         // "llama 1.1B Q4_K_M"
  uint64_t size_bytes = 0;  // all tensor data in the file
  uint64_t n_params = 0;    // all tensor elements in the file
  // Weight bytes one decode step reads, whatever the batch: every placed
  // weight, except that of token_embd only one row per token is read
  // (get_rows) and of MoE expert tensors only n_expert_used / n_expert.
  // A tied output matrix counts in full (the output mul_mat reads it).
  uint64_t decode_bytes = 0;
  // Recurrent state bytes one decode step moves per sequence: every
  // recurrent layer's conv taps and state, read and written back (2x their
  // size); 0 for a model without recurrent layers.
  uint64_t state_bytes = 0;
};
BenchModelInfo bench_model_info(const model::Model& model);

// llama.cpp's name for general.file_type ("Q4_K_M", "F16", ...), or "" when
// the id is unknown.
const char* file_type_name(uint32_t file_type);

// Physical cores this process may run on (hyper-threads counted once), the
// default thread count of `folio bench`; default_thread_count() when the
// topology is unknown.
int physical_core_count();

class BenchRunner {
 public:
  // A runner with its own paged KV cache, large enough for every test of
  // `tests` under `options` (one sequence of n_prompt for pp tests, n_seqs
  // sequences of tg_prompt + n_gen for tg tests). Model and ctx are borrowed.
  static Result<std::unique_ptr<BenchRunner>> create(const model::Model& model,
                                                     model::ForwardContext& ctx,
                                                     std::span<const BenchTest> tests,
                                                     const BenchOptions& options);

  // Warmup (if enabled), then options.repetitions timed runs of `test`.
  Result<BenchResult> run(const BenchTest& test);

  const cache::KvCache& cache() const { return *cache_; }

 private:
  BenchRunner(const model::Model& model, model::ForwardContext& ctx, BenchOptions options)
      : model_(model), ctx_(ctx), options_(options) {}
  // One run; returns the seconds of its timed part.
  Result<double> run_prefill(int64_t n_prompt);
  Result<double> run_decode(int64_t n_gen, int n_seqs);
  void random_tokens(int64_t n, std::vector<int32_t>* out);
  Status forward(const cache::Batch& batch);
  // The context's device counters summed over its backends (nullopt: none
  // counts), and the running totals over timed forwards.
  std::optional<StreamCounters> stream_totals() const;
  void add_timed(const std::optional<StreamCounters>& before, int64_t forwards);

  const model::Model& model_;
  model::ForwardContext& ctx_;
  BenchOptions options_;
  std::unique_ptr<cache::KvCache> cache_;  // paged
  uint64_t rng_state_ = 0;
  cache::Batch batch_;
  std::vector<int32_t> tokens_;
  StreamCounters timed_stream_;  // summed over the timed forwards of run()
  int64_t timed_forwards_ = 0;   // ... of those, where a backend counts its stream
  int64_t forwards_ = 0;         // timed forwards of run()
  model::OpProfile profile_;     // the timed forwards' ops of run() (options_.profile)
};

}  // namespace folio::tools
