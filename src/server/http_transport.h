// HttpTransport: event-driven HTTP/1.1 (and 1.0) on Boost.Beast / Asio.
//
// A connection costs no thread while it is idle, slow or waiting for the
// engine: `io_threads` threads run every socket's reads, writes and timers,
// and only requests the handler calls heavy run on one of `worker_threads`.
//
// Per connection, one request at a time: its answer is written before the
// next request is read, so pipelined requests (several in one write) are
// all answered, in order. Keep-alive follows the request (HTTP/1.1 unless
// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
// Streamed answers are chunked in HTTP/1.1 and end with the connection in
// HTTP/1.0.
//
// Deadlines: the head of a connection's first request must arrive within
// header_timeout, a later one within idle_timeout, its body within
// body_timeout, and each write must complete within write_timeout; past a
// deadline the connection is closed (and its request cancelled). No
// deadline runs while an answer waits for the engine; a client that closes
// its socket then is noticed at once and its request cancelled.
//
// Limits: max_connections open at once and max_connections_per_client from
// one address; a connection past either gets 503 and is closed. Bodies over
// max_body_bytes get 413, heads over max_header_bytes 431 (a Content-Length
// over the limit is refused before the body is read).
//
// Heavy requests with a body of large_body_bytes or more run on their own
// large_body_workers threads, the rest on worker_threads: big bodies are
// prepared a few at a time (what they cost in memory at once is bounded)
// and never hold the threads small requests need.
//
// Shutdown: drain() stops accepting, closes every connection that is not
// answering a request, lets the answers in progress finish and returns
// when they have or at its deadline; stop() then closes everything,
// cancelling what is left.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/http_message.h"

namespace folio::server {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int io_threads = 1;
  int worker_threads = 4;
  int max_connections = 4096;
  int max_connections_per_client = 1024;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds idle_timeout{30'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds write_timeout{30'000};
  size_t max_header_bytes = size_t{64} << 10;
  size_t max_body_bytes = size_t{4} << 20;
  size_t large_body_bytes = size_t{256} << 10;
  int large_body_workers = 1;
};

struct TransportStats {
  int64_t open_connections = 0;
  int64_t accepted_total = 0;
  int64_t rejected_total = 0;  // over a connection limit
  int64_t requests_total = 0;  // heads read
};

class HttpTransport {
 public:
  // `handler` is borrowed and must outlive stop().
  HttpTransport(TransportOptions options, HttpHandler& handler);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Binds and listens (a port already in use is an error, never shared)
  // and starts the threads. Returns the port.
  Result<int> start();
  // See the header comment. True when every connection closed in time.
  bool drain(std::chrono::milliseconds deadline);
  // Idempotent. Afterwards no handler call or waker runs.
  void stop();

  int port() const;  // after start()
  TransportStats stats() const;
  const TransportOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace folio::server
