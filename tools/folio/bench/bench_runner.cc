#include "bench/bench_runner.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <utility>

#include "core/thread_pool.h"

namespace folio::tools {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t blocks_for(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

// "1.1B", "268M".
std::string params_label(uint64_t n) {
  const auto d = static_cast<double>(n);
  if (d >= 1e9) return fmt::format("{:.1f}B", d / 1e9);
  if (d >= 1e8) return fmt::format("{:.0f}M", d / 1e6);
  return fmt::format("{:.1f}M", d / 1e6);
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads a small integer file of sysfs; -1 if absent.
int read_sysfs_int(const std::string& path) {
  std::ifstream in(path);
  int v = -1;
  if (!(in >> v)) return -1;
  return v;
}

}  // namespace

std::string BenchTest::name() const {
  if (is_prefill()) return fmt::format("pp{}", n_prompt);
  if (n_seqs > 1) return fmt::format("tg{}x{}", n_gen, n_seqs);
  return fmt::format("tg{}", n_gen);
}

std::vector<BenchTest> make_bench_tests(std::span<const int64_t> n_prompt,
                                        std::span<const int64_t> n_gen,
                                        std::span<const int> n_seqs) {
  std::vector<BenchTest> tests;
  for (int64_t p : n_prompt) {
    if (p > 0) tests.push_back(BenchTest{p, 0, 1});
  }
  for (int64_t n : n_gen) {
    if (n <= 0) continue;
    for (int s : n_seqs) {
      if (s >= 1) tests.push_back(BenchTest{0, n, s});
    }
  }
  return tests;
}

MeanStddev mean_stddev(std::span<const double> samples) {
  MeanStddev r;
  if (samples.empty()) return r;
  double sum = 0;
  for (double v : samples) sum += v;
  r.mean = sum / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double sq = 0;
    for (double v : samples) sq += (v - r.mean) * (v - r.mean);
    r.stddev = std::sqrt(sq / static_cast<double>(samples.size() - 1));
  }
  return r;
}

const char* file_type_name(uint32_t file_type) {
  // llama.cpp's llama_ftype ids (bit 10 marks a guessed type).
  switch (file_type & ~1024u) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 7:
      return "Q8_0";
    case 8:
      return "Q5_0";
    case 9:
      return "Q5_1";
    case 10:
      return "Q2_K";
    case 11:
      return "Q3_K_S";
    case 12:
      return "Q3_K_M";
    case 13:
      return "Q3_K_L";
    case 14:
      return "Q4_K_S";
    case 15:
      return "Q4_K_M";
    case 16:
      return "Q5_K_S";
    case 17:
      return "Q5_K_M";
    case 18:
      return "Q6_K";
    case 19:
      return "IQ2_XXS";
    case 20:
      return "IQ2_XS";
    case 21:
      return "Q2_K_S";
    case 22:
      return "IQ3_XS";
    case 23:
      return "IQ3_XXS";
    case 24:
      return "IQ1_S";
    case 25:
      return "IQ4_NL";
    case 26:
      return "IQ3_S";
    case 27:
      return "IQ3_M";
    case 28:
      return "IQ2_S";
    case 29:
      return "IQ2_M";
    case 30:
      return "IQ4_XS";
    case 31:
      return "IQ1_M";
    case 32:
      return "BF16";
    case 36:
      return "TQ1_0";
    case 37:
      return "TQ2_0";
    case 38:
      return "MXFP4_MOE";
    case 39:
      return "NVFP4";
    default:
      return "";
  }
}

BenchModelInfo bench_model_info(const model::Model& model) {
  BenchModelInfo info;
  const gguf::GgufFile& file = model.file();
  const std::string& path = file.path();
  const size_t slash = path.find_last_of('/');
  info.file = slash == std::string::npos ? path : path.substr(slash + 1);

  std::map<DType, uint64_t> bytes_by_type;
  for (const gguf::TensorInfo& t : file.tensors()) {
    info.size_bytes += t.nbytes;
    info.n_params += static_cast<uint64_t>(t.nelements());
  }
  const model::ModelConfig& cfg = model.config();
  for (const model::TensorPlacement& p : model.placements()) {
    bytes_by_type[p.dtype] += p.bytes;
    uint64_t read = p.bytes;
    if (p.name == "token_embd.weight") {
      read = cfg.n_vocab > 0 ? p.bytes / static_cast<uint64_t>(cfg.n_vocab) : p.bytes;
    } else if (ends_with(p.name, "_exps.weight") && cfg.moe.n_expert > 0) {
      read = p.bytes * static_cast<uint64_t>(cfg.moe.n_expert_used) /
             static_cast<uint64_t>(cfg.moe.n_expert);
    }
    info.decode_bytes += read;
  }
  for (const cache::LayerGeometry& l : cfg.cache_geometry().layers) {
    if (l.recurrent) info.state_bytes += 2 * (l.state.conv_bytes() + l.state.state_bytes());
  }

  std::string ftype;
  Result<uint32_t> ft = file.get_u32("general.file_type");
  if (ft.ok()) ftype = file_type_name(*ft);
  if (ftype.empty() && !bytes_by_type.empty()) {  // the type holding most bytes
    const auto most =
        std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    ftype = dtype_name(most->first);
    std::transform(ftype.begin(), ftype.end(), ftype.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  info.type = fmt::format("{} {} {}", cfg.arch, params_label(info.n_params), ftype);
  while (!info.type.empty() && info.type.back() == ' ') info.type.pop_back();
  return info;
}

double BenchProfile::ops_ns() const {
  double ns = 0;
  for (const model::OpProfileRow& op : ops) ns += op.ns;
  return ns;
}

int physical_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return default_thread_count();
  std::set<std::pair<int, int>> cores;  // (package, core)
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu{}/topology/", cpu);
    const int core = read_sysfs_int(dir + "core_id");
    const int package = read_sysfs_int(dir + "physical_package_id");
    if (core < 0) return default_thread_count();
    cores.emplace(package, core);
  }
  return cores.empty() ? default_thread_count() : static_cast<int>(cores.size());
}

Result<std::unique_ptr<BenchRunner>> BenchRunner::create(const model::Model& model,
                                                         model::ForwardContext& ctx,
                                                         std::span<const BenchTest> tests,
                                                         const BenchOptions& options) {
  if (options.repetitions < 1)
    return invalid_argument("bench: repetitions must be >= 1, got {}", options.repetitions);
  if (options.n_ubatch < 1)
    return invalid_argument("bench: ubatch size must be >= 1, got {}", options.n_ubatch);
  if (options.tg_prompt < 0)
    return invalid_argument("bench: tg prompt must be >= 0 tokens, got {}", options.tg_prompt);
  if (tests.empty()) return invalid_argument("bench: no tests (every -p and -n is 0)");
  const int64_t bs = options.kv_block_size;
  if (bs < 1) return invalid_argument("bench: KV block size must be >= 1, got {}", bs);

  int64_t n_ctx = 1;
  int64_t blocks = 0;  // most blocks one test holds at once
  int max_seqs = 1;
  for (const BenchTest& t : tests) {
    if (t.n_prompt < 0 || t.n_gen < 0 || t.n_seqs < 1 || (t.n_prompt > 0) == (t.n_gen > 0)) {
      return invalid_argument("bench: invalid test {} (n_prompt {}, n_gen {}, n_seqs {})", t.name(),
                              t.n_prompt, t.n_gen, t.n_seqs);
    }
    const int64_t len = t.is_prefill() ? t.n_prompt : options.tg_prompt + t.n_gen;
    const int64_t seqs = t.is_prefill() ? 1 : t.n_seqs;
    n_ctx = std::max(n_ctx, len);
    blocks = std::max(blocks, seqs * blocks_for(len, bs));
    max_seqs = std::max(max_seqs, static_cast<int>(seqs));
  }
  if (blocks + 1 > INT32_MAX) return invalid_argument("bench: tests need {} KV blocks", blocks);

  cache::KvCacheOptions co;
  co.storage = cache::KvStorage::kPaged;
  co.type = options.kv_type;
  co.block_size = options.kv_block_size;
  co.alloc = options.kv_alloc;
  co.n_blocks = static_cast<int32_t>(blocks + 1);  // + the null block
  co.n_ctx = n_ctx;
  co.n_seq = 0;
  co.max_seqs = max_seqs;     // hybrid models: a recurrent-state slot per sequence
  co.prefix_caching = false;  // repetitions must compute everything again
  Result<std::unique_ptr<cache::KvCache>> cache = model.make_cache(co);
  if (!cache.ok()) return cache.status().with_context("bench KV cache");

  auto runner = std::unique_ptr<BenchRunner>(new BenchRunner(model, ctx, options));
  runner->cache_ = std::move(cache).value();
  runner->rng_state_ = options.seed;
  return runner;
}

void BenchRunner::random_tokens(int64_t n, std::vector<int32_t>* out) {
  const auto n_vocab = static_cast<uint64_t>(model_.config().n_vocab);
  out->resize(static_cast<size_t>(n));
  for (int32_t& t : *out) t = static_cast<int32_t>(splitmix64(&rng_state_) % n_vocab);
}

std::optional<StreamCounters> BenchRunner::stream_totals() const {
  std::optional<StreamCounters> sum;
  for (const Backend* b : ctx_.backends()) {
    const std::optional<StreamCounters> c = b->stream_counters();
    if (!c) continue;
    if (!sum) sum = StreamCounters{};
    sum->dispatches += c->dispatches;
    sum->barriers += c->barriers;
    sum->submits += c->submits;
    sum->recorded_steps += c->recorded_steps;
    sum->replayed_steps += c->replayed_steps;
  }
  return sum;
}

void BenchRunner::add_timed(const std::optional<StreamCounters>& before, int64_t forwards) {
  forwards_ += forwards;
  const std::optional<StreamCounters> after = stream_totals();
  if (!before || !after) return;
  timed_stream_.dispatches += after->dispatches - before->dispatches;
  timed_stream_.barriers += after->barriers - before->barriers;
  timed_stream_.submits += after->submits - before->submits;
  timed_stream_.recorded_steps += after->recorded_steps - before->recorded_steps;
  timed_stream_.replayed_steps += after->replayed_steps - before->replayed_steps;
  timed_forwards_ += forwards;
}

Status BenchRunner::forward(const cache::Batch& batch) {
  Result<TensorView> logits = model_.forward(batch, *cache_, ctx_);
  return logits.status();
}

Result<double> BenchRunner::run_prefill(int64_t n_prompt) {
  FOLIO_ASSIGN_OR_RETURN(const int seq, cache_->add_sequence());
  random_tokens(n_prompt, &tokens_);
  const int64_t ub = options_.n_ubatch;
  Status st;
  const std::optional<StreamCounters> stream0 = stream_totals();
  int64_t forwards = 0;
  model::OpProfile* const outer = options_.profile ? ctx_.set_profile(&profile_) : nullptr;
  const auto t0 = Clock::now();
  for (int64_t b = 0; b < n_prompt && st.ok(); b += ub, ++forwards) {
    const int64_t e = std::min(n_prompt, b + ub);
    batch_.clear();
    for (int64_t i = b; i < e; ++i) {
      batch_.add(tokens_[static_cast<size_t>(i)], static_cast<int32_t>(i), seq, i == n_prompt - 1);
    }
    st = forward(batch_);
  }
  const auto t1 = Clock::now();
  if (options_.profile) ctx_.set_profile(outer);
  add_timed(stream0, forwards);
  const Status rm = cache_->remove_sequence(seq);
  FOLIO_RETURN_IF_ERROR(st);
  FOLIO_RETURN_IF_ERROR(rm);
  return std::chrono::duration<double>(t1 - t0).count();
}

Result<double> BenchRunner::run_decode(int64_t n_gen, int n_seqs) {
  std::vector<int> seqs;
  auto release = [&]() -> Status {
    Status first;
    for (int s : seqs) {
      Status st = cache_->remove_sequence(s);
      if (first.ok() && !st.ok()) first = st;
    }
    seqs.clear();
    return first;
  };
  for (int s = 0; s < n_seqs; ++s) {
    Result<int> seq = cache_->add_sequence();
    if (!seq.ok()) {
      (void)release();
      return seq.status();
    }
    seqs.push_back(*seq);
  }
  const int64_t p = options_.tg_prompt;
  Status st;
  if (p > 0) {  // every sequence's prompt in one forward, untimed
    random_tokens(p * n_seqs, &tokens_);
    batch_.clear();
    for (int s = 0; s < n_seqs; ++s) {
      for (int64_t i = 0; i < p; ++i) {
        batch_.add(tokens_[static_cast<size_t>(s * p + i)], static_cast<int32_t>(i),
                   seqs[static_cast<size_t>(s)], i == p - 1);
      }
    }
    st = forward(batch_);
  }
  random_tokens(n_gen * n_seqs, &tokens_);
  const std::optional<StreamCounters> stream0 = stream_totals();
  model::OpProfile* const outer = options_.profile ? ctx_.set_profile(&profile_) : nullptr;
  const auto t0 = Clock::now();
  for (int64_t step = 0; step < n_gen && st.ok(); ++step) {
    batch_.clear();
    for (int s = 0; s < n_seqs; ++s) {
      batch_.add(tokens_[static_cast<size_t>(step * n_seqs + s)], static_cast<int32_t>(p + step),
                 seqs[static_cast<size_t>(s)], true);
    }
    st = forward(batch_);
  }
  const auto t1 = Clock::now();
  if (options_.profile) ctx_.set_profile(outer);
  add_timed(stream0, n_gen);
  const Status rm = release();
  FOLIO_RETURN_IF_ERROR(st);
  FOLIO_RETURN_IF_ERROR(rm);
  return std::chrono::duration<double>(t1 - t0).count();
}

Result<BenchResult> BenchRunner::run(const BenchTest& test) {
  const std::string name = test.name();
  if (test.n_prompt < 0 || test.n_gen < 0 || test.n_seqs < 1 ||
      (test.n_prompt > 0) == (test.n_gen > 0)) {
    return invalid_argument("bench: invalid test {}", name);
  }
  const int64_t len = test.is_prefill() ? test.n_prompt : options_.tg_prompt + test.n_gen;
  const int64_t seqs = test.is_prefill() ? 1 : test.n_seqs;
  if (len > cache_->n_ctx() || seqs * blocks_for(len, cache_->block_size()) >
                                   cache_->block_manager()->pool().n_blocks() - 1) {
    return invalid_argument("bench: test {} does not fit the cache the runner was created for",
                            name);
  }
  auto once = [&](int64_t n_gen) -> Result<double> {
    return test.is_prefill() ? run_prefill(test.n_prompt) : run_decode(n_gen, test.n_seqs);
  };
  if (options_.warmup) {
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "bench: %s warmup\n", name.c_str());
      std::fflush(options_.log);
    }
    Result<double> w = once(std::min<int64_t>(test.n_gen, 4));
    if (!w.ok()) return w.status().with_context(name + " warmup");
  }
  BenchResult r;
  r.test = test;
  timed_stream_ = StreamCounters{};
  timed_forwards_ = 0;
  forwards_ = 0;
  profile_.clear();  // the warmup's ops
  const double tokens = test.is_prefill() ? static_cast<double>(test.n_prompt)
                                          : static_cast<double>(test.n_gen * test.n_seqs);
  for (int rep = 0; rep < options_.repetitions; ++rep) {
    Result<double> secs = once(test.n_gen);
    if (!secs.ok()) return secs.status().with_context(name);
    r.samples_ns.push_back(*secs * 1e9);
    r.samples_ts.push_back(*secs > 0 ? tokens / *secs : 0.0);
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "bench: %s rep %d/%d: %.2f tokens/s\n", name.c_str(), rep + 1,
                   options_.repetitions, r.samples_ts.back());
      std::fflush(options_.log);
    }
  }
  if (timed_forwards_ > 0) {
    const auto n = static_cast<double>(timed_forwards_);
    r.stream = StreamPerForward{static_cast<double>(timed_stream_.dispatches) / n,
                                static_cast<double>(timed_stream_.barriers) / n,
                                static_cast<double>(timed_stream_.submits) / n,
                                static_cast<int64_t>(timed_stream_.recorded_steps),
                                static_cast<int64_t>(timed_stream_.replayed_steps)};
  }
  if (options_.profile) {
    BenchProfile p;
    p.ops = profile_.by_kind();
    for (double ns : r.samples_ns) p.wall_ns += ns;
    p.forwards = forwards_;
    p.repetitions = options_.repetitions;
    r.profile = std::move(p);
  }
  const MeanStddev ms = mean_stddev(r.samples_ts);
  r.mean_ts = ms.mean;
  r.stddev_ts = ms.stddev;
  return r;
}

}  // namespace folio::tools
