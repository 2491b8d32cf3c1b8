// `folio serve -m MODEL [--host H --port P --max-seqs N ...]`: the
// OpenAI-compatible HTTP server (src/server) over the continuous-batching
// scheduler (engine/scheduler.h). The port answers at once; the model loads
// in the background (/health: 503 until it is ready). SIGINT / SIGTERM stop
// the server gracefully: it stops accepting, closes idle connections and
// lets the answers in progress finish for up to --shutdown-timeout seconds;
// then what is left is cancelled (streams end with an error event, other
// answers get 503) and the process exits.
//
// Flags follow llama.cpp's server where one exists: -np / --parallel for
// --max-seqs, -b (tokens per step), -ub (micro-batch), -c, -t, --alias,
// --api-key; the model and cache flags are the other commands' (cli_common.h).
#include <pthread.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cache/kv_cache_manager.h"
#include "cli_common.h"
#include "commands.h"
#include "engine/embedder.h"
#include "engine/scheduler.h"
#include "server/generation_service.h"
#include "server/http_server.h"
#include "server/kv_event_publisher.h"

namespace folio::tools {

namespace {

struct ServeFlags {
  ModelFlags model;
  SpecFlags spec;
  std::string host = "127.0.0.1";
  int port = 8080;
  int max_seqs = 4;
  int64_t chunk_cap = 0;
  bool no_decode_first = false;
  int64_t max_waiting = 1024;
  std::string api_key;
  std::string alias;
  std::string chat_template_file;
  std::string chat_format;  // "" = detected from the chat template
  std::string reasoning_format = "auto";
  int reasoning_budget = -1;
  int http_threads = 4;
  int max_connections = 4096;
  int max_connections_per_client = 1024;
  double header_timeout_s = 10;
  double idle_timeout_s = 30;
  double shutdown_timeout_s = 10;
  int64_t max_body_mib = 4;  // server::ServerOptions says why
  std::string kv_events;  // ZMQ endpoint for KV-cache events, "" = off
  bool allow_special_in_content = false;
  std::vector<std::string> cors_origins;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "folio serve: %s\n", message.c_str());
  return 1;
}

std::string model_id(const ServeFlags& f) {
  if (!f.alias.empty()) return f.alias;
  std::filesystem::path p(f.model.model);
  return p.extension() == ".gguf" ? p.stem().string() : p.filename().string();
}

// Everything the background loader builds; destroyed after the server stops.
struct Engine {
  LoadedModel lm;
  std::unique_ptr<chat::ChatTemplate> chat_template;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<server::SchedulerService> service;
  std::unique_ptr<Embedder> embedder;  // embedding models (no scheduler)
};

// An embedding model answers /v1/embeddings (and /tokenize) only.
Status load_embedder(const ServeFlags& f, Engine* e, server::HttpServer* http) {
  EmbedderOptions eo;
  eo.n_threads = e->lm.ctx->n_threads();
  eo.max_batch_tokens = f.model.batch_size;
  eo.device = e->lm.device.get();  // where --device put the weights, or null
  FOLIO_ASSIGN_OR_RETURN(e->embedder, Embedder::create(*e->lm.model, *e->lm.tokenizer, eo));
  std::fprintf(stderr,
               "folio serve: effective configuration: embedding model '%s' (%s pooling, %lld "
               "dimensions, %lld-token inputs at most), threads %d, batch-size %lld\n",
               model_id(f).c_str(), model::pooling_type_name(e->embedder->pooling()),
               static_cast<long long>(e->embedder->n_embd()),
               static_cast<long long>(e->embedder->n_ctx_train()), eo.n_threads,
               static_cast<long long>(eo.max_batch_tokens));
  server::ServedModel m;
  m.id = model_id(f);
  m.n_ctx = e->embedder->n_ctx_train();
  m.n_vocab = static_cast<int32_t>(e->lm.model->config().n_vocab);
  m.tokenizer = e->lm.tokenizer.get();
  m.embedder = e->embedder.get();
  http->set_model(m);
  return Status();
}

// `events`, when given, receives the prefix cache's changes (--kv-events).
Status load_engine(const ServeFlags& f, Engine* e, server::HttpServer* http,
                   server::KvEventPublisher* events) {
  FOLIO_ASSIGN_OR_RETURN(SpeculativeOptions spec, spec_options(f.spec));
  FOLIO_ASSIGN_OR_RETURN(e->lm, load_for_batch(f.model, f.max_seqs, spec));
  if (e->lm.model->config().is_embedding()) return load_embedder(f, e, http);
  FOLIO_RETURN_IF_ERROR(load_draft(f.model, f.spec, f.max_seqs, &e->lm, &spec));
  if (!f.chat_template_file.empty()) {
    std::ifstream in(f.chat_template_file);
    if (!in) return not_found("cannot open --chat-template-file '{}'", f.chat_template_file);
    std::stringstream ss;
    ss << in.rdbuf();
    const auto& vocab = e->lm.tokenizer->vocab();
    FOLIO_ASSIGN_OR_RETURN(
        chat::ChatTemplate t,
        chat::ChatTemplate::parse(ss.str(), e->lm.tokenizer->piece(vocab.bos(), true),
                                       e->lm.tokenizer->piece(vocab.eos(), true)));
    e->chat_template = std::make_unique<chat::ChatTemplate>(std::move(t));
  } else {
    e->chat_template = std::make_unique<chat::ChatTemplate>(pick_chat_template(e->lm));
    if (e->chat_template->is_fallback()) {
      std::fprintf(stderr, "folio serve: chat template: ChatML fallback (%s)\n",
                   e->chat_template->fallback_reason().c_str());
    }
  }
  SchedulerOptions so;
  so.max_seqs = f.max_seqs;
  so.max_batch_tokens = f.model.batch_size;
  so.ubatch = std::min(f.model.ubatch_size, f.model.batch_size);
  so.chunk_cap = f.chunk_cap;
  so.decode_first = !f.no_decode_first;
  so.max_waiting = f.max_waiting;
  so.spec = spec;
  if (events != nullptr) {
    if (e->lm.cache->kv_events() == nullptr) {
      return invalid_argument("--kv-events needs a paged KV cache (this model's cache has no "
                              "block pool)");
    }
    if (e->lm.cache->block_size() != events->block_size()) {
      return internal_error("--kv-events: the cache's blocks hold {} tokens, the events say {}",
                            e->lm.cache->block_size(), events->block_size());
    }
    so.on_kv_events = [events](std::vector<cache::KvEvent> ev) {
      events->publish(std::move(ev));
    };
  }
  e->scheduler =
      std::make_unique<Scheduler>(*e->lm.model, *e->lm.tokenizer, *e->lm.ctx, *e->lm.cache, so);
  FOLIO_RETURN_IF_ERROR(e->scheduler->start());
  e->service = std::make_unique<server::SchedulerService>(*e->scheduler);
  const cache::KvCacheManager* blocks = e->lm.cache->block_manager();
  std::fprintf(stderr,
               "folio serve: effective configuration: model '%s', ctx-size %lld, kv-type %s, "
               "%d KV blocks of %d tokens, threads %d, max-seqs %d, batch-size %lld, "
               "ubatch-size %lld, chunk-cap %lld, decode-first %s, max-waiting %lld\n",
               model_id(f).c_str(), static_cast<long long>(e->lm.cache->n_ctx()),
               f.model.kv_type.c_str(),
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
  if (f.chat_format.empty()) {
    m.chat_format = chat::detect_chat_format(e->chat_template->source());
  } else {
    FOLIO_ASSIGN_OR_RETURN(m.chat_format, chat::parse_chat_format(f.chat_format));
  }
  FOLIO_ASSIGN_OR_RETURN(m.reasoning_format, chat::parse_reasoning_format(f.reasoning_format));
  m.reasoning_budget = f.reasoning_budget;
  std::fprintf(stderr, "folio serve: chat format %s%s, reasoning format %s, reasoning budget %d\n",
               m.chat_format->name().c_str(), f.chat_format.empty() ? " (from the template)" : "",
               chat::reasoning_format_name(m.reasoning_format), m.reasoning_budget);
  m.service = e->service.get();
  m.special_in_content = f.allow_special_in_content;
  http->set_model(m);
  return Status();
}

int serve(const ServeFlags& f) {
  warn_about_model_flags(f.model);

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
  so.http_threads = f.http_threads;
  so.max_connections = f.max_connections;
  so.max_connections_per_client = f.max_connections_per_client;
  so.header_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.header_timeout_s * 1000));
  so.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.idle_timeout_s * 1000));
  so.max_body_bytes = static_cast<size_t>(f.max_body_mib) << 20;
  so.cors_origins = f.cors_origins;
  server::HttpServer http(so);
  Result<int> port = http.start();
  if (!port.ok()) return fail(port.status().message());
  std::fprintf(
      stderr,
      "folio serve: listening on http://%s:%d (model '%s' loading), %d request "
      "threads, up to %d connections (%d per client), API key %s, body limit %lld MiB, "
      "CORS origins %s, control texts in chat content %s\n",
      f.host.c_str(), *port, model_id(f).c_str(), so.http_threads, so.max_connections,
      so.max_connections_per_client, f.api_key.empty() ? "off" : "required",
      static_cast<long long>(f.max_body_mib),
      f.cors_origins.empty() ? "none" : fmt::format("{}", fmt::join(f.cors_origins, ",")).c_str(),
      f.allow_special_in_content ? "parsed as tokens" : "kept as text");
  std::fprintf(stderr,
               "folio serve: loading %s (ctx-size %lld, kv-type %s, kv-block-size %d, kv-blocks "
               "%d, kv-memory %lld MiB, max-seqs %d, batch-size %lld, ubatch-size %lld)\n",
               f.model.model.c_str(), static_cast<long long>(f.model.ctx_size),
               f.model.kv_type.c_str(), f.model.kv_block_size, f.model.kv_blocks,
               static_cast<long long>(f.model.kv_memory_mib), f.max_seqs,
               static_cast<long long>(f.model.batch_size),
               static_cast<long long>(f.model.ubatch_size));

  // Before the engine, so that the scheduler's thread stops first.
  std::unique_ptr<server::KvEventPublisher> events;
  if (!f.kv_events.empty()) {
    Result<std::unique_ptr<server::KvEventPublisher>> p =
        server::KvEventPublisher::create(f.kv_events, f.model.kv_block_size);
    if (!p.ok()) {
      http.stop();
      return fail(p.status().message());
    }
    events = std::move(p).value();
    std::fprintf(stderr,
                 "folio serve: KV-cache events on %s (ZMQ PUB, vLLM's msgpack batches, blocks "
                 "of %d tokens)\n",
                 f.kv_events.c_str(), f.model.kv_block_size);
  }

  Engine engine;
  Status load_status;
  std::thread loader([&] {
    load_status = load_engine(f, &engine, &http, events.get());
    if (load_status.ok()) {
      std::fprintf(stderr, "folio serve: ready\n");
    } else {
      kill(getpid(), SIGTERM);  // wakes the sigwait below
    }
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  loader.join();
  if (load_status.ok()) {
    std::fprintf(stderr,
                 "folio serve: stopping (signal %d): finishing the answers in progress (up to "
                 "%g s)\n",
                 sig, f.shutdown_timeout_s);
  }
  const auto deadline =
      std::chrono::milliseconds(static_cast<int64_t>(f.shutdown_timeout_s * 1000));
  const bool drained = http.drain(deadline);
  // Then the scheduler: what is left is cancelled, so open streams end with
  // an error event saying the server is stopping and other answers get 503
  // (rather than a cut connection); a short second drain lets them go out.
  if (engine.scheduler) engine.scheduler->stop();
  if (!drained) http.drain(std::chrono::seconds(1));
  http.stop();
  if (!load_status.ok()) return fail(load_status.message());
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app, CommandFn* selected) {
  static ServeFlags f;
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  add_model_flags(cmd, &f.model);
  add_spec_flags(cmd, &f.spec);
  cmd->add_option("--host", f.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", f.port, "port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--max-seqs,--parallel", f.max_seqs,
                  "sequences running at once (also -np); sizes the KV pool by default")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--chunk-cap", f.chunk_cap,
                  "prefill chunk cap per sequence (0: min(-b, max(-ub, 4% of ctx)))")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--no-decode-first", f.no_decode_first,
                "prefill chunks take the step budget before decode tokens");
  cmd->add_option("--max-waiting", f.max_waiting, "queued requests beyond this get 503")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--api-key", f.api_key, "require 'Authorization: Bearer KEY'");
  cmd->add_option("--alias", f.alias, "model name in the API (default: the file's stem)");
  cmd->add_option("--chat-template-file", f.chat_template_file,
                  "Jinja chat template to use instead of the model's");
  cmd->add_option("--chat-format", f.chat_format,
                  "how replies are read back, TOOLS[+REASONING] (TOOLS: none, hermes, qwen_xml, "
                  "llama3, mistral, glm, nemotron, lfm2, deepseek, kimi, minimax, command, "
                  "functionary, functionary_v3_2, granite, gemma4, deepseek_v3_2, phi4_mini, "
                  "seed, generic; REASONING: none, think, seed, mistral, command, harmony, gemma4); "
                  "default: detected "
                  "from the chat template")
      ->check([](const std::string& v) {
        Result<chat::ChatFormat> r = chat::parse_chat_format(v);
        return r.ok() ? std::string() : r.status().message();
      });
  cmd->add_option("--reasoning-format", f.reasoning_format,
                  "none: reasoning stays in the content as written; auto, deepseek: it goes to "
                  "reasoning_content")
      ->check(CLI::IsMember({"none", "auto", "deepseek"}))
      ->capture_default_str();
  cmd->add_option("--reasoning-budget", f.reasoning_budget,
                  "token budget for thinking: -1 unrestricted; 0 thinking off where the "
                  "template can (enable_thinking=false); N > 0: after N tokens of a reasoning "
                  "block its close marker is forced and the answer follows (a request's "
                  "reasoning_budget_tokens overrides)")
      ->check([](const std::string& v) {
        int n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        const bool ok = ec == std::errc() && end == v.data() + v.size() && n >= -1;
        return ok ? std::string()
                  : "must be -1 (unrestricted), 0 (thinking off) or a token budget N > 0, got " + v;
      })
      ->capture_default_str();
  cmd->add_option("--http-threads", f.http_threads,
                  "threads that prepare requests (JSON, chat template, tokenizer); connections "
                  "take no thread")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--max-connections", f.max_connections,
                  "open connections at most; more get 503")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--max-connections-per-client", f.max_connections_per_client,
                  "open connections from one address at most; more get 503")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--header-timeout", f.header_timeout_s,
                  "seconds a new connection has to send its request head")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  cmd->add_option("--idle-timeout", f.idle_timeout_s,
                  "seconds a kept-alive connection may wait for its next request")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", f.shutdown_timeout_s,
                  "seconds SIGTERM / SIGINT wait for the answers in progress")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--max-body-mib", f.max_body_mib, "request body limit in MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cors-origin", f.cors_origins,
                  "origin allowed to call the API from a web page (scheme://host[:port], or * "
                  "for any); repeat it or give a comma list; default none: only the page at / "
                  "(same origin) works in a browser")
      ->delimiter(',')
      ->check([](const std::string& o) {
        Status s = server::check_cors_origin(o);
        return s.ok() ? std::string() : s.message();
      });
  cmd->add_flag("--allow-special-in-content", f.allow_special_in_content,
                "control-token texts inside chat messages (e.g. '<|im_start|>') become control "
                "tokens, as in llama.cpp; by default they stay text and only the chat "
                "template's markup yields control tokens");
  cmd->add_option("--kv-events", f.kv_events,
                  "publish KV-cache events (blocks stored / removed, all cleared) in vLLM's "
                  "format on a ZMQ PUB socket bound here, e.g. tcp://127.0.0.1:5557, for "
                  "cache-aware routers");
  cmd->callback([selected] { *selected = [] { return serve(f); }; });
}

}  // namespace folio::tools
