// The HTTP messages route handlers see: a parsed request, a complete reply,
// and a reply produced over time (generation). No transport types leak
// through here; http_transport.cc turns them into bytes on a socket.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace folio::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string path;    // the target up to '?'
  std::string query;   // after '?', undecoded ("" if none)
  int version = 11;    // 10: HTTP/1.0, 11: HTTP/1.1
  HttpHeaders headers;
  std::string body;  // empty until the transport has read it

  // The first header of that name (ASCII case-insensitive), "" if absent.
  std::string_view header(std::string_view name) const;
};

// A reply whose whole body is known.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HttpHeaders headers;  // extra fields (Cache-Control, Allow, ...)
};

// A reply produced over time, pulled by the transport on the connection's
// executor each time the producer wakes it. Its head (status, type) may come
// only once the outcome is known (a non-streaming generation), so a request
// that fails gets an honest status rather than a 200 with an error inside.
class AsyncReply {
 public:
  virtual ~AsyncReply() = default;

  struct Progress {
    // Set on the first poll that knows the head, never again.
    bool head = false;
    int status = 200;
    std::string content_type;
    HttpHeaders headers;
    // true: the body comes in pieces as they are produced (chunked in
    // HTTP/1.1, until close in HTTP/1.0); false: the whole body comes in
    // the same poll as the head, with finished.
    bool streaming = false;
    std::string data;       // body bytes produced since the last poll
    bool finished = false;  // no more data will come
  };

  // `wake` is called (from any thread, possibly many times) when poll()
  // has something new; it must not block. An empty function detaches: once
  // set_waker({}) returns, the old function is never called again.
  virtual void set_waker(std::function<void()> wake) = 0;
  // Never blocks.
  virtual Progress poll() = 0;
  // The client went away or the server stops before the end: stop the work
  // behind the reply. Idempotent; harmless after the end.
  virtual void cancel() = 0;
};

using RouteResult = std::variant<HttpReply, std::shared_ptr<AsyncReply>>;

// What the transport calls for each request.
class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // After the head, before the body is read: an answer now (unknown route,
  // wrong method, missing credentials), or nullptr to read the body and
  // call handle(). The transport closes the connection after an early
  // answer to a request whose body it did not read.
  virtual std::unique_ptr<HttpReply> screen(const HttpRequest& head) = 0;
  // Whether handle() does real work (JSON parsing, templates, tokenizing):
  // such requests run on a worker thread, the rest on the I/O thread.
  virtual bool is_heavy(const HttpRequest& request) const = 0;
  // Header fields added to every answer to `request`, early, complete or
  // streamed (CORS: Access-Control-Allow-Origin for an allowed Origin).
  virtual HttpHeaders answer_headers(const HttpRequest& request) const {
    (void)request;
    return {};
  }
  // Never throws through: exceptions become 500 answers in the transport.
  virtual RouteResult handle(const HttpRequest& request) = 0;
};

}  // namespace folio::server
