#include "server/http_server.h"

#include <csignal>
#include <ctime>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "server/openai_request.h"
#include "server/prometheus.h"
#include "server/routes.h"

namespace folio::server {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.http_status;
  res.set_content(e.body(), "application/json");
}

void send_json(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(dump_json(j), "application/json");
}

namespace {

// Compares without an early exit, so response time says nothing about how
// much of a guessed key was right.
bool same_secret(std::string_view given, std::string_view key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  httplib::Server http;
  std::thread listener;
  std::atomic<bool> listening_done{false};
  std::atomic<bool> started{false};
  int port = -1;
  std::mutex stop_mu;

  mutable std::mutex model_mu;
  std::shared_ptr<const ServedModel> model;
  int64_t created = static_cast<int64_t>(std::time(nullptr));

  std::shared_ptr<const ServedModel> current_model() const {
    std::lock_guard<std::mutex> lock(model_mu);
    return model;
  }

  // The model, or a 503 answer while it loads.
  std::shared_ptr<const ServedModel> model_or_503(httplib::Response& res) const {
    auto m = current_model();
    if (!m) send_error(res, unavailable_error("loading model"));
    return m;
  }

  // Reads a POST body within the size limit (chunked bodies included).
  bool read_body(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader, std::string* body) {
    bool too_large = false;
    const bool ok = reader([&](const char* data, size_t n) {
      if (body->size() + n > options.max_body_bytes) {
        too_large = true;
        return false;
      }
      body->append(data, n);
      return true;
    });
    if (too_large || res.status == 413) {
      send_error(res, too_large_error(fmt::format("the request body is larger than the limit of "
                                                  "{} bytes",
                                                  options.max_body_bytes),
                                      "body_too_large"));
      res.set_header("Connection", "close");
      return false;
    }
    if (!ok) {
      send_error(res, bad_request("could not read the request body"));
      return false;
    }
    return true;
  }

  void post(const std::string& path,
            std::function<void(const ServedModel&, const std::string&, httplib::Response&)> fn) {
    http.Post(path, [this, fn](const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
      std::string body;
      if (!read_body(req, res, reader, &body)) return;
      auto m = model_or_503(res);
      if (!m) return;
      fn(*m, body, res);
    });
  }

  void install_routes() {
    http.new_task_queue = [n = options.http_threads] {
      return new httplib::ThreadPool(static_cast<size_t>(n));
    };
    http.set_payload_max_length(options.max_body_bytes);
    http.set_keep_alive_max_count(100);
    // Responses go out in several writes (headers, then chunks): without
    // this, Nagle's algorithm and delayed ACKs add ~40 ms per answer and
    // per streamed token.
    http.set_tcp_nodelay(true);

    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (options.api_key.empty() || req.path == "/health")
        return httplib::Server::HandlerResponse::Unhandled;
      const std::string auth = req.get_header_value("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      const bool ok = auth.size() > kBearer.size() &&
                      auth.compare(0, kBearer.size(), kBearer) == 0 &&
                      same_secret(std::string_view(auth).substr(kBearer.size()), options.api_key);
      if (ok) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, unauthorized_error());
      return httplib::Server::HandlerResponse::Handled;
    });

    // Answers httplib produced itself (unknown route, oversized body, bad
    // request line) get OpenAI-shaped bodies too.
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty() || res.content_length_ > 0)
            return httplib::Server::HandlerResponse::Unhandled;
          ApiError e;
          if (res.status == 404) {
            e = not_found_error(fmt::format("Invalid URL ({} {})", req.method, req.path),
                                "unknown_url");
          } else if (res.status == 413) {
            e = too_large_error("the request is too large", "body_too_large");
          } else if (res.status >= 500) {
            e = internal_server_error("internal error");
            e.http_status = res.status;
          } else {
            e = bad_request(fmt::format("bad request ({})", res.status));
            e.http_status = res.status;
          }
          send_error(res, e);
          return httplib::Server::HandlerResponse::Handled;
        }));
    http.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown exception";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          FOLIO_LOG_ERROR("server: {} {}: {}", req.method, req.path, what);
          send_error(res, internal_server_error(fmt::format("internal error: {}", what)));
        });
    http.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      FOLIO_LOG_DEBUG("server: {} {} -> {}", req.method, req.path, res.status);
    });

    http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (current_model()) {
        send_json(res, 200, Json{{"status", "ok"}});
      } else {
        send_json(res, 503, Json{{"status", "loading model"}});
      }
    });
    auto models = [this](const httplib::Request&, httplib::Response& res) {
      auto m = model_or_503(res);
      if (!m) return;
      Json entry = Json::object();
      entry["id"] = m->id;
      entry["object"] = "model";
      entry["created"] = created;
      entry["owned_by"] = "folio";
      entry["max_model_len"] = m->n_ctx;
      send_json(res, 200, Json{{"object", "list"}, {"data", Json::array({entry})}});
    };
    http.Get("/v1/models", models);
    http.Get("/models", models);
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      auto m = model_or_503(res);
      if (!m) return;
      res.set_content(render_prometheus(m->service->metrics(), m->id),
                      std::string(kPrometheusContentType));
    });
    for (const char* prefix : {"/v1", ""}) {
      post(std::string(prefix) + "/completions",
           [this](const ServedModel& m, const std::string& body, httplib::Response& res) {
             handle_generation(m, options, ApiKind::kCompletion, body, res);
           });
      post(std::string(prefix) + "/chat/completions",
           [this](const ServedModel& m, const std::string& body, httplib::Response& res) {
             handle_generation(m, options, ApiKind::kChat, body, res);
           });
    }
    post("/tokenize", handle_tokenize);
    post("/detokenize", handle_detokenize);
  }
};

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->install_routes();
}

HttpServer::~HttpServer() {
  stop();
}

Result<int> HttpServer::start() {
  Impl& s = *impl_;
  if (s.started.exchange(true)) return invalid_argument("server already started");
  if (s.options.http_threads < 1) {
    return invalid_argument("http threads must be >= 1, got {}", s.options.http_threads);
  }
  // A client that disconnects mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (s.options.port == 0) {
    s.port = s.http.bind_to_any_port(s.options.host);
    if (s.port <= 0) return io_error("cannot bind {}:<any port>", s.options.host);
  } else {
    if (s.options.port < 0 || s.options.port > 65535) {
      return invalid_argument("port must be in [0, 65535], got {}", s.options.port);
    }
    if (!s.http.bind_to_port(s.options.host, s.options.port)) {
      return io_error("cannot bind {}:{} (in use, or a bad address)", s.options.host,
                      s.options.port);
    }
    s.port = s.options.port;
  }
  s.listener = std::thread([&s] {
    s.http.listen_after_bind();
    s.listening_done = true;
  });
  return s.port;
}

void HttpServer::stop() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.stop_mu);
  if (!s.listener.joinable()) return;
  // stop() before the listening loop runs would be lost: wait for it.
  while (!s.http.is_running() && !s.listening_done) std::this_thread::yield();
  s.http.stop();
  s.listener.join();
}

void HttpServer::set_model(const ServedModel& model) {
  std::lock_guard<std::mutex> lock(impl_->model_mu);
  impl_->model = std::make_shared<const ServedModel>(model);
}

bool HttpServer::ready() const {
  return impl_->current_model() != nullptr;
}
int HttpServer::port() const {
  return impl_->port;
}
const ServerOptions& HttpServer::options() const {
  return impl_->options;
}

}  // namespace folio::server
