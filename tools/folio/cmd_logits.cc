// `folio logits -m MODEL --tokens "ID ID ..." --out FILE`: evaluates the token
// ids as one sequence from position 0 and writes the logits of every position
// as raw little-endian float32, row-major [n_tokens][n_vocab]. Loading
// progress, buffer sizes and timings go to stderr; any error is a message on
// stderr and exit code 1.
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "cli_device.h"
#include "commands.h"
#include "core/thread_pool.h"
#include "model/evaluate.h"
#include "model/model.h"

namespace folio::tools {

namespace {

struct LogitsArgs {
  std::string device = "auto";  // --device (cli_device.h)
  int n_gpu_layers = -1;        // -ngl
  std::string model;
  std::string tokens;
  std::string out;
  int threads = 0;
  std::string kv_type = "f32";
  int64_t batch = 512;
  bool no_repack = false;
};

// "1 2 3" or "1,2,3" -> ids; anything else is an error naming the item.
Result<std::vector<int32_t>> parse_tokens(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == ',' || s[i] == '\t' || s[i] == '\n') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != ',' && s[j] != '\t' && s[j] != '\n') ++j;
    const std::string item = s.substr(i, j - i);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (end != item.c_str() + item.size() || errno != 0 || v < 0 || v > INT32_MAX) {
      return invalid_argument("bad token id '{}' in --tokens", item);
    }
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  if (ids.empty()) return invalid_argument("--tokens holds no token ids");
  return ids;
}

Result<DType> parse_kv_type(const std::string& s) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  if (s == "q8_0") return DType::Q8_0;
  return invalid_argument("bad --kv-type '{}' (expected f32, f16 or q8_0)", s);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Status run_logits(const LogitsArgs& a) {
  FOLIO_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, parse_tokens(a.tokens));
  FOLIO_ASSIGN_OR_RETURN(DType kv_type, parse_kv_type(a.kv_type));
  if (a.batch <= 0) return invalid_argument("--batch {} must be positive", a.batch);
  if (a.threads < 0) return invalid_argument("--threads {} must be positive", a.threads);

  const auto t_load = std::chrono::steady_clock::now();
  FOLIO_ASSIGN_OR_RETURN(DeviceChoice dc, choose_device(a.device, a.n_gpu_layers));
  if (!dc.note.empty()) std::fprintf(stderr, "logits: %s\n", dc.note.c_str());
  const std::unique_ptr<Backend> device = std::move(dc.device);  // outlives model, cache, context
  model::LoadOptions lo;
  lo.log = stderr;
  lo.prefault = true;
  lo.buffer_types = weight_buffer_types(a.no_repack);
  offload_weights(device.get(), dc.offload_layers, &lo);
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> m, load_on_device(a.model, lo, device.get()));
  log_weight_buffer_types(a.no_repack, stderr);
  const int64_t n_vocab = m->config().n_vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] >= n_vocab) {
      return invalid_argument("token id {} (position {}) is outside the vocabulary of {} tokens",
                              tokens[i], i, n_vocab);
    }
  }
  cache::KvCacheOptions ko;
  ko.n_ctx = static_cast<int64_t>(tokens.size());
  ko.type = kv_type;
  ko.alloc = kv_allocator(device.get(), dc.offload_layers);
  FOLIO_ASSIGN_OR_RETURN(std::unique_ptr<cache::KvCache> cache, m->make_cache(ko));
  const int threads = a.threads > 0 ? a.threads : default_thread_count();
  auto ctx = model::ForwardContext::with_device(device.get(), threads);
  std::fprintf(stderr,
               "logits: loaded in %.2f s; KV cache %s, %lld positions, %.2f MiB; %d threads\n",
               seconds_since(t_load), a.kv_type.c_str(), static_cast<long long>(ko.n_ctx),
               static_cast<double>(cache->bytes()) / (1 << 20), threads);

  std::FILE* out = std::fopen(a.out.c_str(), "wb");
  if (out == nullptr) return io_error("cannot open '{}' for writing", a.out);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(out, std::fclose);
  std::vector<float> swapped;
  const auto t_eval = std::chrono::steady_clock::now();
  Status st = model::eval_sequence(
      *m, *cache, *ctx, tokens, a.batch, [&](int64_t, const float* rows, int64_t n_rows) -> Status {
        const size_t count = static_cast<size_t>(n_rows * n_vocab);
        const float* data = rows;
        if constexpr (std::endian::native == std::endian::big) {
          swapped.resize(count);
          for (size_t i = 0; i < count; ++i) {
            swapped[i] = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<uint32_t>(rows[i])));
          }
          data = swapped.data();
        }
        if (std::fwrite(data, sizeof(float), count, out) != count)
          return io_error("write to '{}' failed", a.out);
        return Status();
      });
  FOLIO_RETURN_IF_ERROR(st);
  const double dt = seconds_since(t_eval);
  if (std::fclose(closer.release()) != 0) return io_error("write to '{}' failed", a.out);
  std::fprintf(
      stderr,
      "logits: %zu tokens in %.3f s (%.1f tokens/s, batch %lld); wrote %s [%zu][%lld] f32\n",
      tokens.size(), dt, static_cast<double>(tokens.size()) / dt, static_cast<long long>(a.batch),
      a.out.c_str(), tokens.size(), static_cast<long long>(n_vocab));
  return Status();
}

}  // namespace

void register_logits_command(CLI::App& app, CommandFn* selected) {
  CLI::App* cmd = app.add_subcommand(
      "logits",
      "evaluate token ids as one sequence and write the logits of every position (raw f32)");
  static LogitsArgs args;
  cmd->add_option("-m,--model", args.model, "GGUF model file")->required();
  cmd->add_option("--tokens", args.tokens, "token ids, separated by spaces (or commas)")
      ->required();
  cmd->add_option("--out", args.out, "output file: little-endian float32 [n_tokens][n_vocab]")
      ->required();
  cmd->add_option("-t,--threads", args.threads, "threads (default: hardware concurrency)");
  cmd->add_option("--kv-type", args.kv_type, "KV cache type: f32|f16|q8_0")->capture_default_str();
  cmd->add_option("--batch", args.batch, "tokens per forward call (1: token-by-token decode path)")
      ->capture_default_str();
  cmd->add_flag("--no-repack", args.no_repack, "keep weights in their GGUF layout");
  add_device_flags(cmd, &args.device, &args.n_gpu_layers);
  cmd->callback([selected] {
    *selected = [] {
      const Status st = run_logits(args);
      if (!st.ok()) {
        std::fprintf(stderr, "folio logits: %s\n", st.message().c_str());
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace folio::tools
