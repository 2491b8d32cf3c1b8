// `folio bench`: throughput in the manner of llama-bench.
//
//   folio bench -m MODEL[,MODEL...] [-p 512] [-n 128] [--seqs 1,8,32] [-t T]
//               [-r 5] [--kv-type f16] [--isa avx2,avx512] [-ub 512] [-b 2048]
//               [--no-repack] [--json] [--mem | --bw GBPS] [--profile]
//   folio bench -m MODEL --spec ngram|draft|mtp [-md DRAFT] [--draft-max N] -f PROMPT [-f ...]
//               [-n 128] [-t T] [-r 5] [--json]
//
// Every list flag takes comma lists (or repeats); each combination of model,
// ISA, threads, KV type and ubatch size runs every test (pp for each -p,
// tg / tgNxS for each -n and --seqs; see bench/bench_runner.h for what each
// measures). Random token ids (fixed seed): no tokenizer is involved.
// Prints a markdown table, or with --json one JSON object per test and line
// (keys: bench/bench_report.h). Progress goes to stderr. With --device,
// rows also give the dispatches, barriers and submits the device recorded
// per forward (decode step or prefill chunk).
//
// --spec ngram|draft|mtp (with the speculation flags of `run`: -md FILE,
// --draft-max, ...) measures one-sequence decode of real prompts instead,
// each -f FILE in turn: greedy generation of -n tokens without and with
// speculation, alternating run by run (bench/spec_bench.h), reporting both
// speeds, their ratio, the share of draft tokens accepted and whether the
// two outputs were the same (they must be). -p, --seqs > 1 and the memory
// options do not apply there.
//
// --mem measures the memory bandwidth first (STREAM triad, for each thread
// count; bench/mem_bandwidth.h); without -m that is all it does. With a
// bandwidth (--mem or --bw), tg rows also show the weight bytes a decode
// token reads and tg speed as a fraction of bandwidth / those bytes.
//
// --profile times every op of the timed forwards and prints, after the
// table, one table per test: per op kind the calls, total time and share
// of the timed wall time, and the time outside ops (with --json: the
// "profile" keys of each line). Prefill and decode are separate tests, so
// their profiles are too.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/cpu/cpu_buffer_types.h"
#include "bench/bench_report.h"
#include "bench/bench_runner.h"
#include "bench/mem_bandwidth.h"
#include "bench/spec_bench.h"
#include "cache/kv_cache.h"
#include "cli_common.h"
#include "cli_device.h"
#include "commands.h"
#include "core/aligned.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "prompt_text.h"

namespace folio::tools {

namespace {

struct BenchFlags {
  std::vector<std::string> models;
  std::vector<int64_t> n_prompt{512};
  std::vector<int64_t> n_gen{128};
  std::vector<int> n_seqs{1};
  std::vector<int> threads;  // empty: physical cores
  int repetitions = 5;
  std::vector<std::string> kv_types{"f16"};
  std::vector<std::string> isas;  // empty: the active ISA
  std::vector<int64_t> batch_sizes{2048};
  std::vector<int64_t> ubatch_sizes{512};
  int64_t tg_prompt = 1;
  int kv_block_size = 16;
  uint64_t seed = 1234;
  bool no_warmup = false;
  bool no_repack = false;
  bool json = false;
  bool mem = false;
  bool profile = false;
  double bw_gbps = 0;
  int64_t mem_mib = 0;
  int mem_runs = 5;
  std::string device = "auto";  // --device (cli_device.h)
  int n_gpu_layers = -1;        // -ngl
  SpecFlags spec;               // --spec ngram|draft|mtp: the speculation measurement
  std::vector<std::string> prompt_files;  // -f, for --spec
  bool prompt_sizes_given = false;        // -p on the command line
  bool seqs_given = false;                // --seqs on the command line

  bool speculating() const { return spec.type != "none" || !spec.draft_model.empty(); }
};

int bench_fail(const Status& s) {
  std::fprintf(stderr, "folio bench: %s\n", s.message().c_str());
  return 1;
}

// "-ub N" (llama-bench's spelling, which CLI11 cannot declare) arrives as
// extra arguments.
Status take_ubatch_extras(const std::vector<std::string>& extras, std::vector<int64_t>* ub) {
  bool seen = false;
  for (size_t i = 0; i < extras.size(); ++i) {
    if (extras[i] != "-ub" || i + 1 >= extras.size()) {
      return invalid_argument("unexpected argument '{}'", extras[i]);
    }
    if (!seen) ub->clear();
    seen = true;
    const std::string& v = extras[++i];
    size_t start = 0;
    while (start <= v.size()) {
      const size_t comma = std::min(v.find(',', start), v.size());
      const std::string item = v.substr(start, comma - start);
      try {
        size_t pos = 0;
        const long long n = std::stoll(item, &pos);
        if (pos != item.size()) throw std::invalid_argument(item);
        ub->push_back(n);
      } catch (...) {
        return invalid_argument("-ub: '{}' is not an integer", item);
      }
      start = comma + 1;
    }
  }
  return Status();
}

Status validate(const BenchFlags& f) {
  if (f.models.empty() && !f.mem) return invalid_argument("give -m MODEL (or --mem)");
  if (!f.speculating() && !f.prompt_files.empty())
    return invalid_argument("-f (prompt files) goes with --spec ngram|draft|mtp");
  if (f.speculating()) {
    if (f.models.empty()) return invalid_argument("--spec: give -m MODEL");
    if (f.prompt_files.empty())
      return invalid_argument("--spec measures decoding of real prompts: give -f FILE");
    if (f.prompt_sizes_given)
      return invalid_argument("--spec measures decoding of the -f prompts: -p does not apply");
    if (f.seqs_given && (f.n_seqs.size() != 1 || f.n_seqs[0] != 1))
      return invalid_argument("--spec measures one sequence: --seqs does not apply");
    if (f.mem || f.bw_gbps > 0)
      return invalid_argument("--spec: --mem / --bw do not apply");
    if (f.batch_sizes.size() != 1 || f.ubatch_sizes.size() != 1)
      return invalid_argument("--spec takes one -b and one -ub value");
  }
  for (int t : f.threads) {
    if (t < 1) return invalid_argument("-t: thread counts must be >= 1, got {}", t);
  }
  for (int64_t p : f.n_prompt) {
    if (p < 0) return invalid_argument("-p: prompt sizes must be >= 0, got {}", p);
  }
  for (int64_t n : f.n_gen) {
    if (n < 0) return invalid_argument("-n: generation lengths must be >= 0, got {}", n);
  }
  for (int s : f.n_seqs) {
    if (s < 1) return invalid_argument("--seqs: sequence counts must be >= 1, got {}", s);
  }
  for (int64_t b : f.batch_sizes) {
    if (b < 1) return invalid_argument("-b: batch sizes must be >= 1, got {}", b);
  }
  for (int64_t b : f.ubatch_sizes) {
    if (b < 1) return invalid_argument("-ub: ubatch sizes must be >= 1, got {}", b);
  }
  if (f.repetitions < 1) return invalid_argument("-r must be >= 1, got {}", f.repetitions);
  if (f.tg_prompt < 0) return invalid_argument("--tg-prompt must be >= 0, got {}", f.tg_prompt);
  if (f.bw_gbps < 0) return invalid_argument("--bw must be > 0, got {}", f.bw_gbps);
  if (f.mem_mib < 0) return invalid_argument("--mem-size must be > 0, got {}", f.mem_mib);
  for (const std::string& k : f.kv_types) {
    Result<DType> t = cache::parse_kv_type(k);
    if (!t.ok()) return t.status().with_context("--kv-type");
  }
  for (const std::string& name : f.isas) {
    Isa isa;
    if (!parse_isa(name, &isa))
      return invalid_argument("--isa: '{}' is not scalar|neon|neon_dotprod|neon_i8mm|avx2|avx2_vnni|avx512|amx", name);
    const std::vector<Isa> ladder = isa_ladder(detected_isa());
    if (std::find(ladder.begin(), ladder.end(), isa) == ladder.end()) {
      return unsupported("--isa: this CPU does not support {} (best: {})", name,
                         isa_name(detected_isa()));
    }
  }
  return Status();
}

// Triad bandwidth for each thread count (GB/s), measured or given.
Result<std::map<int, double>> bandwidths(const BenchFlags& f, const std::vector<int>& threads) {
  std::map<int, double> bw;
  if (f.bw_gbps > 0) {
    for (int t : threads) bw[t] = f.bw_gbps;
    return bw;
  }
  if (!f.mem) return bw;
  if (!f.json) {
    std::printf("| threads | pages | triad GB/s | read GB/s | array MiB |\n");
    std::printf("| ------: | ----- | ---------: | --------: | --------: |\n");
  }
  for (int t : threads) {
    ThreadPool pool(t);
    // STREAM's ordinary pages first (the limit decode is compared with),
    // then huge pages, as folio's weight buffers have them where the
    // kernel gives them.
    for (bool huge : {false, true}) {
      if (huge && !huge_pages_available()) continue;
      MemBandwidthOptions mo;
      mo.array_bytes = static_cast<size_t>(f.mem_mib) << 20;
      mo.runs = f.mem_runs;
      mo.huge_pages = huge;
      std::fprintf(stderr, "bench: memory bandwidth, %d threads, 3 arrays of %zu MiB%s\n", t,
                   (mo.array_bytes > 0 ? mo.array_bytes : default_array_bytes()) >> 20,
                   huge ? ", huge pages" : "");
      FOLIO_ASSIGN_OR_RETURN(MemBandwidthResult m, measure_mem_bandwidth(pool, mo));
      if (!huge) bw[t] = m.triad_gbps;
      if (f.json) {
        std::printf("%s\n", membench_json_line(m).c_str());
      } else {
        std::printf("| %7d | %-5s | %10.2f | %9.2f | %9zu |\n", t, m.huge_pages ? "2M" : "4K",
                    m.triad_gbps, m.read_gbps, m.array_bytes >> 20);
      }
      std::fflush(stdout);
    }
  }
  if (!f.json && !f.models.empty()) std::printf("\n");
  return bw;
}

// --spec: for each model, ISA, thread count and KV type, loads the model
// (and draft) for generation and measures each prompt file at each -n.
int run_spec_bench_command(const BenchFlags& f) {
  Result<SpeculativeOptions> spec0 = spec_options(f.spec);
  if (!spec0.ok()) return bench_fail(spec0.status());
  std::vector<std::string> texts;
  for (const std::string& path : f.prompt_files) {
    Result<std::string> t = read_text_file(path);
    if (!t.ok()) return bench_fail(t.status().with_context(fmt::format("-f '{}'", path)));
    texts.push_back(std::move(t).value());
  }
  std::vector<int> threads = f.threads;
  if (threads.empty()) threads.push_back(physical_core_count());
  std::vector<Isa> isas;
  for (const std::string& name : f.isas) {
    Isa isa;
    (void)parse_isa(name, &isa);
    isas.push_back(isa);
  }
  if (isas.empty()) isas.push_back(active_isa());

  bool header = false;
  for (const std::string& path : f.models) {
    for (Isa isa : isas) {
      set_isa_limit(isa);
      for (int t : threads) {
        for (const std::string& kv : f.kv_types) {
          ModelFlags mf;
          mf.model = path;
          mf.threads = t;
          mf.kv_type = kv;
          mf.kv_block_size = f.kv_block_size;
          mf.batch_size = f.batch_sizes[0];
          mf.ubatch_size = f.ubatch_sizes[0];
          mf.no_repack = f.no_repack;
          mf.device = f.device;
          mf.n_gpu_layers = f.n_gpu_layers;
          SpeculativeOptions spec = *spec0;
          Result<LoadedModel> lm = load_for_generation(mf, spec);
          if (!lm.ok()) return bench_fail(lm.status());
          if (const Status st = load_draft(mf, f.spec, 1, &*lm, &spec); !st.ok())
            return bench_fail(st);
          SpecBenchRecord rec;
          rec.model = bench_model_info(*lm->model);
          if (lm->draft != nullptr && lm->draft->model != nullptr)
            rec.draft_model = bench_model_info(*lm->draft->model).file;
          rec.spec_type = spec_type_name(spec.type);
          rec.draft_max = spec.draft_max;
          rec.backend = lm->ctx->backends().empty() ? "cpu" : lm->ctx->backends()[0]->name();
          if (f.no_repack) rec.backend += " plain";
          rec.isa = isa_name(active_isa());
          rec.threads = lm->ctx->n_threads();
          rec.kv_type = kv;
          for (int64_t n : f.n_gen) {
            if (n <= 0) continue;
            for (size_t i = 0; i < texts.size(); ++i) {
              tokenizer::TokenizeOptions to;
              to.add_special = true;
              to.parse_special = true;
              const std::vector<int32_t> prompt = lm->tokenizer->tokenize(texts[i], to);
              const std::string& file = f.prompt_files[i];
              const size_t slash = file.find_last_of('/');
              SpecBenchOptions so;
              so.repetitions = f.repetitions;
              so.warmup = !f.no_warmup;
              so.n_gen = n;
              so.n_batch = std::min(mf.batch_size, mf.ubatch_size);
              so.seed = f.seed;
              so.spec = spec;
              so.log = stderr;
              Result<SpecBenchResult> r =
                  run_spec_bench(*lm->model, *lm->tokenizer, *lm->ctx, *lm->cache, 0, prompt,
                                 slash == std::string::npos ? file : file.substr(slash + 1), so);
              if (!r.ok()) return bench_fail(r.status());
              rec.result = std::move(r).value();
              if (f.json) {
                std::printf("%s\n", spec_bench_json_line(rec).c_str());
              } else {
                if (!header) std::printf("%s\n", spec_bench_table_header().c_str());
                header = true;
                std::printf("%s\n", spec_bench_table_row(rec).c_str());
              }
              std::fflush(stdout);
              if (!rec.result.identical) {
                std::fprintf(stderr,
                             "folio bench: %s: the output with speculation differs from the "
                             "output without it\n",
                             rec.result.prompt.c_str());
              }
            }
          }
        }
      }
    }
  }
  return 0;
}

int run_bench(BenchFlags f, const std::vector<std::string>& extras) {
  Status st = take_ubatch_extras(extras, &f.ubatch_sizes);
  if (!st.ok()) return bench_fail(st);
  st = validate(f);
  if (!st.ok()) return bench_fail(st);
  if (f.speculating()) return run_spec_bench_command(f);
  std::vector<int> threads = f.threads;
  if (threads.empty()) threads.push_back(physical_core_count());
  const std::vector<BenchTest> tests = make_bench_tests(f.n_prompt, f.n_gen, f.n_seqs);
  if (!f.models.empty() && tests.empty())
    return bench_fail(invalid_argument("no tests: -p and -n are all 0"));

  Result<std::map<int, double>> bw = bandwidths(f, threads);
  if (!bw.ok()) return bench_fail(bw.status());
  const bool with_bw = !bw->empty();

  std::vector<Isa> isas;
  for (const std::string& name : f.isas) {
    Isa isa;
    (void)parse_isa(name, &isa);
    isas.push_back(isa);
  }
  if (isas.empty()) isas.push_back(active_isa());

  bool header = false;
  std::string profiles;  // printed after the table
  for (const std::string& path : f.models) {
    for (Isa isa : isas) {
      set_isa_limit(isa);
      model::LoadOptions lo;
      lo.log = stderr;
      lo.prefault = true;  // the file's pages resident before any timing
      lo.buffer_types = cpu_weight_buffer_types(active_isa(), !f.no_repack);
      std::fprintf(stderr, "bench: %s\n",
                   cpu_weight_buffer_note(active_isa(), !f.no_repack).c_str());
      Result<DeviceChoice> dc = choose_device(f.device, f.n_gpu_layers);
      if (!dc.ok()) return bench_fail(dc.status());
      if (!dc->note.empty()) std::fprintf(stderr, "bench: %s\n", dc->note.c_str());
      const std::unique_ptr<Backend> device = std::move(dc->device);  // outlives model and contexts
      offload_weights(device.get(), dc->offload_layers, &lo);
      Result<std::unique_ptr<model::Model>> m = load_on_device(path, lo, device.get());
      if (!m.ok()) return bench_fail(m.status());
      const BenchModelInfo info = bench_model_info(**m);
      for (int t : threads) {
        std::unique_ptr<model::ForwardContext> ctx =
            model::ForwardContext::with_device(device.get(), t);
        for (const std::string& kv : f.kv_types) {
          for (int64_t b : f.batch_sizes) {
            for (int64_t ub : f.ubatch_sizes) {
              BenchOptions bo;
              bo.repetitions = f.repetitions;
              bo.n_ubatch = std::min(b, ub);
              bo.tg_prompt = f.tg_prompt;
              bo.warmup = !f.no_warmup;
              bo.seed = f.seed;
              bo.kv_type = *cache::parse_kv_type(kv);
              bo.kv_block_size = f.kv_block_size;
              bo.log = stderr;
              bo.kv_alloc = kv_allocator(device.get(), dc->offload_layers);
              bo.profile = f.profile;
              std::fprintf(stderr, "bench: %s, %s, %d threads, kv %s, ubatch %lld\n",
                           info.file.c_str(), isa_name(active_isa()), t, kv.c_str(),
                           static_cast<long long>(bo.n_ubatch));
              Result<std::unique_ptr<BenchRunner>> runner =
                  BenchRunner::create(**m, *ctx, tests, bo);
              if (!runner.ok()) return bench_fail(runner.status());
              for (const BenchTest& test : tests) {
                Result<BenchResult> r = (*runner)->run(test);
                if (!r.ok()) return bench_fail(r.status());
                BenchRecord rec;
                rec.model = info;
                rec.backend = ctx->backends().empty() ? "cpu" : ctx->backends()[0]->name();
                rec.isa = isa_name(active_isa());
                rec.repack = !f.no_repack;
                if (f.no_repack) rec.backend += " plain";
                rec.threads = t;
                rec.kv_type = kv;
                rec.n_ubatch = bo.n_ubatch;
                rec.tg_prompt = bo.tg_prompt;
                rec.result = std::move(r).value();
                const auto it = bw->find(t);
                rec.bw_gbps = it == bw->end() ? 0.0 : it->second;
                if (f.json) {
                  std::printf("%s\n", bench_json_line(rec).c_str());
                } else {
                  const bool with_stream = rec.result.stream.has_value();
                  if (!header) {
                    std::printf("%s\n", bench_table_header(with_bw, with_stream).c_str());
                  }
                  header = true;
                  std::printf("%s\n", bench_table_row(rec, with_bw, with_stream).c_str());
                  const std::string p = bench_profile_table(rec);
                  if (!p.empty()) profiles += "\n" + p;
                }
                std::fflush(stdout);
              }
            }
          }
        }
      }
    }
  }
  if (!profiles.empty()) std::printf("%s", profiles.c_str());
  return 0;
}

}  // namespace

void register_bench_command(CLI::App& app, CommandFn* selected) {
  static BenchFlags flags;
  CLI::App* cmd = app.add_subcommand("bench", "throughput benchmark in the manner of llama-bench");
  cmd->add_option("-m,--model", flags.models, "GGUF model file(s), repeatable or comma list")
      ->delimiter(',');
  CLI::Option* p = cmd->add_option("-p,--n-prompt", flags.n_prompt,
                                   "prompt sizes (pp tests), comma list")
                       ->delimiter(',')
                       ->capture_default_str();
  cmd->add_option("-n,--n-gen", flags.n_gen, "generated tokens (tg tests), comma list")
      ->delimiter(',')
      ->capture_default_str();
  CLI::Option* seqs = cmd->add_option("--seqs", flags.n_seqs,
                                      "sequences decoding together in tg tests (tgNxS), comma list")
                          ->delimiter(',')
                          ->capture_default_str();
  cmd->add_option("-t,--threads", flags.threads, "thread counts (default: physical cores)")
      ->delimiter(',');
  cmd->add_option("-r,--repetitions", flags.repetitions, "timed runs per test")
      ->capture_default_str();
  cmd->add_option("--kv-type", flags.kv_types, "KV cache types: f32|f16|bf16|q8_0, comma list")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--isa", flags.isas, "kernel ISA limits: scalar|neon|neon_dotprod|neon_i8mm|avx2|avx2_vnni|avx512|amx, comma list")
      ->delimiter(',');
  cmd->add_option("-b,--batch-size", flags.batch_sizes,
                  "logical batch sizes; a prefill forward takes min(b, ub) tokens")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--ubatch-size", flags.ubatch_sizes,
                  "prefill tokens per forward (also -ub N), comma list")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--tg-prompt", flags.tg_prompt,
                  "tokens each tg sequence is prefilled with before timing")
      ->capture_default_str();
  cmd->add_option("--kv-block-size", flags.kv_block_size, "paged KV block size in tokens")
      ->capture_default_str();
  cmd->add_option("--seed", flags.seed, "seed of the random token ids")->capture_default_str();
  cmd->add_flag("--no-warmup", flags.no_warmup, "skip the untimed warmup run of each test");
  add_device_flags(cmd, &flags.device, &flags.n_gpu_layers);
  cmd->add_flag("--no-repack", flags.no_repack,
                "keep every weight in plain mapped memory (no AMX / repacked buffers)");
  cmd->add_flag("--profile", flags.profile,
                "time every op of the timed forwards; print per op kind totals per test");
  cmd->add_flag("--json", flags.json, "one JSON object per test and line instead of a table");
  cmd->add_flag("--mem", flags.mem,
                "measure memory bandwidth (STREAM triad) first; alone, only that");
  cmd->add_option("--bw", flags.bw_gbps, "memory bandwidth in GB/s (instead of measuring it)");
  cmd->add_option("--mem-size", flags.mem_mib, "MiB per triad array (default: 2 x L3)");
  cmd->add_option("--mem-runs", flags.mem_runs, "triad runs (best is reported)")
      ->capture_default_str();
  add_spec_flags(cmd, &flags.spec);
  cmd->add_option("-f,--file", flags.prompt_files,
                  "--spec: a prompt file whose continuation is measured (repeatable)");
  cmd->allow_extras();
  cmd->callback([selected, cmd, p, seqs] {
    flags.prompt_sizes_given = p->count() > 0;
    flags.seqs_given = seqs->count() > 0;
    const std::vector<std::string> extras = cmd->remaining();
    *selected = [extras] { return run_bench(flags, extras); };
  });
}

}  // namespace folio::tools
