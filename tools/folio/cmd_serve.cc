// `folio serve -m MODEL [--host H --port P --max-seqs N ...]`: the
// OpenAI-compatible HTTP server (src/server) over the continuous-batching
// scheduler (engine/scheduler.h). The port answers at once; the model loads
// in the background (/health: 503 until it is ready). SIGINT / SIGTERM stop
// the server: open connections end, their requests are cancelled.
//
// Flags follow llama.cpp's server where one exists: -np / --parallel for
// --max-seqs, -b for --max-batch-tokens, -ub for --ubatch, -c, -t, --alias,
// --api-key. CLI11 has no multi-letter single-dash options, so -np and -ub
// are picked out of the arguments CLI11 leaves over.
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cache/kv_cache_manager.h"
#include "cli_common.h"
#include "commands.h"
#include "engine/scheduler.h"
#include "server/generation_service.h"
#include "server/http_server.h"

namespace folio::tools {

namespace {

struct ServeFlags {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int max_seqs = 4;
  int64_t ctx_size = 4096;
  int64_t max_batch_tokens = 2048;
  int64_t ubatch = 512;
  int64_t chunk_cap = 0;
  bool no_decode_first = false;
  int64_t max_waiting = 1024;
  std::string kv_type = "f16";
  int kv_block_size = 16;
  int32_t kv_blocks = 0;
  int64_t kv_memory_mib = 0;
  int threads = 0;
  std::string api_key;
  std::string alias;
  std::string chat_template_file;
  bool no_repack = false;
  int http_threads = 0;  // 0: max(64, 4 * max_seqs)
  int64_t max_body_mib = 16;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "folio serve: %s\n", message.c_str());
  return 1;
}

// -np N / -ub N (and -np=N) from what CLI11 did not recognise.
Status take_llama_style_flags(const std::vector<std::string>& rest, ServeFlags* f) {
  for (size_t i = 0; i < rest.size(); ++i) {
    std::string name = rest[i], value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < rest.size()) {
      value = rest[++i];
    }
    if (name != "-np" && name != "-ub") return invalid_argument("unknown argument '{}'", rest[i]);
    char* end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') {
      return invalid_argument("{} needs an integer, got '{}'", name, value);
    }
    if (name == "-np") {
      f->max_seqs = static_cast<int>(v);
    } else {
      f->ubatch = v;
    }
  }
  return Status();
}

Status check_flags(const ServeFlags& f) {
  if (f.port < 0 || f.port > 65535) return invalid_argument("--port must be in [0, 65535]");
  if (f.max_seqs < 1) return invalid_argument("--max-seqs must be >= 1, got {}", f.max_seqs);
  if (f.max_batch_tokens < 1) {
    return invalid_argument("--max-batch-tokens must be >= 1, got {}", f.max_batch_tokens);
  }
  if (f.ubatch < 1) return invalid_argument("--ubatch must be >= 1, got {}", f.ubatch);
  if (f.chunk_cap < 0) return invalid_argument("--chunk-cap must be >= 0, got {}", f.chunk_cap);
  if (f.max_waiting < 1) return invalid_argument("--max-waiting must be >= 1");
  if (f.http_threads < 0) return invalid_argument("--http-threads must be >= 0");
  if (f.max_body_mib < 1) return invalid_argument("--max-body-mib must be >= 1");
  return Status();
}

std::string model_id(const ServeFlags& f) {
  if (!f.alias.empty()) return f.alias;
  std::filesystem::path p(f.model);
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

// Everything the background loader builds; destroyed after the server stops.
struct Engine {
  LoadedModel lm;
  std::unique_ptr<tokenizer::ChatTemplate> chat_template;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<server::SchedulerService> service;
};

Status load_engine(const ServeFlags& f, Engine* e, server::HttpServer* http) {
  ModelFlags mf;
  mf.model = f.model;
  mf.threads = f.threads;
  mf.ctx_size = f.ctx_size;
  mf.kv_type = f.kv_type;
  mf.batch_size = f.max_batch_tokens;
  mf.kv_block_size = f.kv_block_size;
  mf.kv_blocks = f.kv_blocks;
  mf.kv_memory_mib = f.kv_memory_mib;
  mf.no_repack = f.no_repack;
  FOLIO_ASSIGN_OR_RETURN(e->lm, load_for_batch(mf, f.max_seqs));
  if (!f.chat_template_file.empty()) {
    std::ifstream in(f.chat_template_file);
    if (!in) return not_found("cannot open --chat-template-file '{}'", f.chat_template_file);
    std::stringstream ss;
    ss << in.rdbuf();
    const auto& vocab = e->lm.tokenizer->vocab();
    FOLIO_ASSIGN_OR_RETURN(
        tokenizer::ChatTemplate t,
        tokenizer::ChatTemplate::parse(ss.str(), e->lm.tokenizer->piece(vocab.bos(), true),
                                       e->lm.tokenizer->piece(vocab.eos(), true)));
    e->chat_template = std::make_unique<tokenizer::ChatTemplate>(std::move(t));
  } else {
    e->chat_template = std::make_unique<tokenizer::ChatTemplate>(pick_chat_template(e->lm));
    if (e->chat_template->is_fallback()) {
      std::fprintf(stderr, "folio serve: chat template: ChatML fallback (%s)\n",
                   e->chat_template->fallback_reason().c_str());
    }
  }
  SchedulerOptions so;
  so.max_seqs = f.max_seqs;
  so.max_batch_tokens = f.max_batch_tokens;
  so.ubatch = f.ubatch;
  so.chunk_cap = f.chunk_cap;
  so.decode_first = !f.no_decode_first;
  so.max_waiting = f.max_waiting;
  e->scheduler =
      std::make_unique<Scheduler>(*e->lm.model, *e->lm.tokenizer, *e->lm.ctx, *e->lm.cache, so);
  FOLIO_RETURN_IF_ERROR(e->scheduler->start());
  e->service = std::make_unique<server::SchedulerService>(*e->scheduler);
  const cache::KvCacheManager* blocks = e->lm.cache->block_manager();
  std::fprintf(stderr,
               "folio serve: effective configuration: model '%s', ctx-size %lld, kv-type %s, "
               "%d KV blocks of %d tokens, threads %d, max-seqs %d, max-batch-tokens %lld, "
               "ubatch %lld, chunk-cap %lld, decode-first %s, max-waiting %lld\n",
               model_id(f).c_str(), static_cast<long long>(e->lm.cache->n_ctx()), f.kv_type.c_str(),
               blocks != nullptr ? blocks->pool().n_usable() : 0,
               blocks != nullptr ? blocks->block_size() : 0, e->lm.ctx->n_threads(), so.max_seqs,
               static_cast<long long>(so.max_batch_tokens), static_cast<long long>(so.ubatch),
               static_cast<long long>(e->scheduler->effective_chunk_cap()),
               so.decode_first ? "on" : "off", static_cast<long long>(so.max_waiting));
  server::ServedModel m;
  m.id = model_id(f);
  m.n_ctx = e->lm.cache->n_ctx();
  m.n_vocab = static_cast<int32_t>(e->lm.model->config().n_vocab);
  m.tokenizer = e->lm.tokenizer.get();
  m.chat_template = e->chat_template.get();
  m.service = e->service.get();
  http->set_model(m);
  return Status();
}

int serve(ServeFlags& f, const std::vector<std::string>& rest) {
  if (Status s = take_llama_style_flags(rest, &f); !s.ok()) return fail(s.message());
  if (Status s = check_flags(f); !s.ok()) return fail(s.message());

  // SIGINT / SIGTERM are taken by sigwait() below; every thread started
  // from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  server::ServerOptions so;
  so.host = f.host;
  so.port = f.port;
  so.api_key = f.api_key;
  so.http_threads = f.http_threads > 0 ? f.http_threads : std::max(64, 4 * f.max_seqs);
  so.max_body_bytes = static_cast<size_t>(f.max_body_mib) << 20;
  server::HttpServer http(so);
  Result<int> port = http.start();
  if (!port.ok()) return fail(port.status().message());
  std::fprintf(stderr,
               "folio serve: listening on http://%s:%d (model '%s' loading), %d connection "
               "threads, API key %s, body limit %lld MiB\n",
               f.host.c_str(), *port, model_id(f).c_str(), so.http_threads,
               f.api_key.empty() ? "off" : "required", static_cast<long long>(f.max_body_mib));
  std::fprintf(stderr,
               "folio serve: loading %s (ctx-size %lld, kv-type %s, kv-block-size %d, kv-blocks "
               "%d, kv-memory %lld MiB, max-seqs %d, max-batch-tokens %lld, ubatch %lld)\n",
               f.model.c_str(), static_cast<long long>(f.ctx_size), f.kv_type.c_str(),
               f.kv_block_size, f.kv_blocks, static_cast<long long>(f.kv_memory_mib), f.max_seqs,
               static_cast<long long>(f.max_batch_tokens), static_cast<long long>(f.ubatch));

  Engine engine;
  Status load_status;
  std::thread loader([&] {
    load_status = load_engine(f, &engine, &http);
    if (load_status.ok()) {
      std::fprintf(stderr, "folio serve: ready\n");
    } else {
      kill(getpid(), SIGTERM);  // wakes the sigwait below
    }
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  loader.join();
  if (load_status.ok()) std::fprintf(stderr, "folio serve: stopping (signal %d)\n", sig);
  // Scheduler first: open streams end with an error event saying the
  // server is stopping (rather than a cut connection), new requests get 503.
  if (engine.scheduler) engine.scheduler->stop();
  http.stop();
  if (!load_status.ok()) return fail(load_status.message());
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app, CommandFn* selected) {
  static ServeFlags f;
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  cmd->add_option("-m,--model", f.model, "GGUF model file")->required();
  cmd->add_option("--host", f.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f.port, "port (0: any free port)")->capture_default_str();
  cmd->add_option("--max-seqs,--parallel", f.max_seqs,
                  "sequences running at once (also -np); sizes the KV pool by default")
      ->capture_default_str();
  cmd->add_option("-c,--ctx-size", f.ctx_size, "context per sequence (capped by the model's)")
      ->capture_default_str();
  cmd->add_option("-b,--max-batch-tokens,--batch-size", f.max_batch_tokens,
                  "tokens per step, decode + prefill")
      ->capture_default_str();
  cmd->add_option("--ubatch,--ubatch-size", f.ubatch, "micro-batch size (also -ub)")
      ->capture_default_str();
  cmd->add_option("--chunk-cap", f.chunk_cap,
                  "prefill chunk cap per sequence (0: min(T, max(ubatch, 4% of ctx)))")
      ->capture_default_str();
  cmd->add_flag("--no-decode-first", f.no_decode_first,
                "prefill chunks take the step budget before decode tokens");
  cmd->add_option("--max-waiting", f.max_waiting, "queued requests beyond this get 503")
      ->capture_default_str();
  cmd->add_option("--kv-type", f.kv_type, "KV cache type: f32|f16|bf16|q8_0")
      ->capture_default_str();
  cmd->add_option("--kv-block-size", f.kv_block_size, "KV block: 8..128 tokens, a power of 2")
      ->capture_default_str();
  CLI::Option* blocks = cmd->add_option("--kv-blocks", f.kv_blocks,
                                        "KV pool size in blocks (default: max-seqs contexts)");
  cmd->add_option("--kv-memory", f.kv_memory_mib, "KV pool size in MiB")->excludes(blocks);
  cmd->add_option("-t,--threads", f.threads, "compute threads (default: all cores)");
  cmd->add_flag("--no-repack", f.no_repack,
                "keep weights in their GGUF layout (no AMX / repacked buffers)");
  cmd->add_option("--api-key", f.api_key, "require 'Authorization: Bearer KEY'");
  cmd->add_option("--alias", f.alias, "model name in the API (default: the file's stem)");
  cmd->add_option("--chat-template-file", f.chat_template_file,
                  "Jinja chat template to use instead of the model's");
  cmd->add_option("--http-threads", f.http_threads,
                  "connection threads (default: max(64, 4 x max-seqs))");
  cmd->add_option("--max-body-mib", f.max_body_mib, "request body limit in MiB")
      ->capture_default_str();
  cmd->allow_extras();  // -np / -ub
  cmd->callback([cmd, selected] {
    std::vector<std::string> rest = cmd->remaining();
    *selected = [rest] { return serve(f, rest); };
  });
}

}  // namespace folio::tools
