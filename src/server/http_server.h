// HttpServer: folio's OpenAI-compatible HTTP API over one GenerationService,
// served by HttpTransport (event-driven HTTP/1.1 on Boost.Beast).
//
// Routes:
//   GET  /              the web chat page (web/chat.html; no API key needed)
//   POST /v1/completions, /v1/chat/completions   (also without /v1)
//   POST /v1/responses (also without /v1)          OpenAI's Responses API
//                                                  (server/responses_api.h)
//   POST /v1/messages, /v1/messages/count_tokens   Anthropic's Messages API
//                                                  (server/anthropic_api.h)
//   POST /v1/embeddings (also without /v1)         embedding models
//   GET  /v1/models (also /models), /v1/models/{id}, /health, /metrics
//   POST /tokenize {"content", "add_special"?, "parse_special"?} -> {"tokens"}
//   POST /detokenize {"tokens"} -> {"content"}
// An unknown path gets 404, a known one with another method 405 (with
// Allow). The server answers from start() on; until set_model() every route
// but /health answers 503 "loading model" and /health 503 {"status":
// "loading model"}, afterwards 200 {"status": "ok"}.
//
// With an API key every route but / and /health needs `Authorization: Bearer KEY`
// or `x-api-key: KEY` (Anthropic's clients) (401 otherwise). Errors of the
// /v1/messages routes, screening's included, take Anthropic's shape. Request bodies over max_body_bytes get 413.
//
// Cross-site requests: a POST body must be declared JSON (Content-Type
// application/json, parameters such as charset allowed), or it gets 415,
// so a web page cannot start work with a form or a text/plain fetch (the
// requests a browser sends without asking). Browsers ask with a preflight
// (OPTIONS) before a JSON POST from another origin: an origin listed in
// cors_origins (or any, with "*") gets 204 with the Access-Control-Allow-*
// fields, another origin 403; OPTIONS without a preflight's fields gets 204
// with Allow. Answers to a listed origin carry Access-Control-Allow-Origin;
// with no cors_origins none does, and only same-origin pages (the chat page
// at /) can read answers. OPTIONS needs no API key (browsers send none).
//
// A non-streaming generation answer's status is sent once its outcome is
// known: a request that fails after it was accepted gets its 4xx / 5xx with
// the OpenAI error body. A stream answers 200 at once (errors found before
// it is accepted still get their status); a later failure is an SSE error
// event. A client that closes its
// connection gets its requests cancelled (GenerationService::cancel).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/generation_service.h"
#include "server/http_transport.h"

namespace folio::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port (start() returns it)
  std::string api_key;  // "": no authentication
  // Threads that run the event loop (sockets, timers): connections, idle
  // or streaming, take none of their own.
  int io_threads = 1;
  // Threads that prepare generation / tokenize requests (JSON, chat
  // template, tokenizer) off the event loop.
  int http_threads = 4;
  // Requests with bodies of large_body_bytes or more are prepared on
  // large_body_threads threads of their own, so that big bodies neither
  // hold the threads small requests need nor add up in memory.
  size_t large_body_bytes = size_t{256} << 10;
  int large_body_threads = 1;
  int max_connections = 4096;
  int max_connections_per_client = 1024;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds idle_timeout{30'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{30'000};
  // Big enough for a full long-context prompt (a 262k-token context is
  // about 1 MiB of text, 2 MiB as token ids), small enough that preparing
  // one request (JSON, template, tokenizer: tens of bytes per body byte)
  // stays near 100 MiB.
  size_t max_body_bytes = size_t{4} << 20;
  // Origins allowed to read answers across sites ("https://app.example",
  // or "*" for any); empty: none (no Access-Control-Allow-Origin is sent).
  std::vector<std::string> cors_origins;
  // /v1/responses keeps this many responses' conversations for
  // previous_response_id (least recently used dropped first), at most
  // response_store_bytes of their JSON in all.
  size_t response_store_entries = 1024;
  size_t response_store_bytes = size_t{64} << 20;
};

// Whether `origin` can be one of ServerOptions::cors_origins: "*", "null",
// or scheme://host[:port] as a browser's Origin field spells it.
Status check_cors_origin(std::string_view origin);

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (an address in use is an error) and serves on
  // background threads. Returns the port.
  Result<int> start();
  // Stops accepting, closes idle connections and waits up to `deadline`
  // for the answers in progress. True when all finished.
  bool drain(std::chrono::milliseconds deadline);
  // Ends every connection (their requests are cancelled) and joins the
  // threads. Idempotent. Call before the model goes away.
  void stop();

  // Makes the model routes live. Once; everything in `model` is borrowed
  // until stop().
  void set_model(const ServedModel& model);
  bool ready() const;
  int port() const;
  const ServerOptions& options() const;
  TransportStats transport_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace folio::server
