// HttpServer: folio's OpenAI-compatible HTTP API over one GenerationService.
//
// Routes (cpp-httplib; each connection is served by a thread of its pool):
//   POST /v1/completions, /v1/chat/completions   (also without /v1)
//   GET  /v1/models (also /models), /health, /metrics
//   POST /tokenize {"content", "add_special"?, "parse_special"?} -> {"tokens"}
//   POST /detokenize {"tokens"} -> {"content"}
// The server answers from start() on; until set_model() every route but
// /health answers 503 "loading model" and /health 503 {"status": "loading
// model"}, afterwards 200 {"status": "ok"}.
//
// With an API key every route but /health needs `Authorization: Bearer KEY`
// (401 otherwise). Request bodies over max_body_bytes get 413.
//
// Generation answers are written with chunked transfer encoding, streaming
// (SSE) or not: the connection thread waits for the request's events and
// checks the socket between them, so a client that goes away cancels its
// request (GenerationService::cancel) within poll_interval.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/generation_service.h"

namespace folio::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (start() returns it)
  std::string api_key;  // "": no authentication
  // Connection threads: each open connection (a streaming request holds
  // one for its whole life) takes one; more connections wait.
  int http_threads = 64;
  size_t max_body_bytes = size_t{16} << 20;
  // How often a connection waiting for tokens checks that its client is
  // still there.
  std::chrono::milliseconds poll_interval{50};
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port and serves on a background thread. Returns the port.
  Result<int> start();
  // Stops accepting, ends every connection (their requests are cancelled)
  // and joins the threads. Idempotent. Call before the model goes away.
  void stop();

  // Makes the model routes live. Once; everything in `model` is borrowed
  // until stop().
  void set_model(const ServedModel& model);
  bool ready() const;
  int port() const;
  const ServerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace folio::server
