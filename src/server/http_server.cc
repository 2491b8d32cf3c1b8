#include "server/http_server.h"

#include <cctype>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>

#include "core/log.h"
#include "server/anthropic_api.h"
#include "server/openai_request.h"
#include "server/prometheus.h"
#include "server/response_store.h"
#include "server/responses_api.h"
#include "server/routes.h"
#include "server/web_page.h"

namespace folio::server {

HttpReply json_reply(int status, const Json& j) {
  HttpReply r;
  r.status = status;
  r.body = dump_json(j);
  return r;
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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX-decodes a path segment; nullopt when an escape is malformed.
std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 1 < s.size() ? hex_digit(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// "application/json" with any parameters ("; charset=utf-8"), in any case.
bool http_server_is_json_type(std::string_view v) {
  v = v.substr(0, std::min(v.find(';'), v.size()));
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  constexpr std::string_view kJson = "application/json";
  if (v.size() != kJson.size()) return false;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kJson[i]) return false;
  }
  return true;
}

// A preflight's Access-Control-Request-Headers echoed back when it is a
// plain list of header names; otherwise the fields the APIs use (the key
// as Authorization or Anthropic's x-api-key, anthropic-version).
std::string http_server_allowed_headers(std::string_view requested) {
  constexpr std::string_view kDefault = "Authorization, Content-Type, X-Api-Key, Anthropic-Version";
  if (requested.empty() || requested.size() > 1024) return std::string(kDefault);
  for (char c : requested) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != ',' &&
        c != ' ') {
      return std::string(kDefault);
    }
  }
  return std::string(requested);
}

constexpr std::string_view kModelPrefix = "/v1/models/";

enum class Route {
  kChatPage,  // GET /: the web chat page
  kHealth,
  kModels,
  kModel,  // /v1/models/{id}
  kMetrics,
  kCompletions,
  kChatCompletions,
  kCompletionsRender,      // vLLM's prompt-ids-only twins of the two above
  kChatCompletionsRender,
  kTokenize,
  kDetokenize,
  kEmbeddings,
  kResponses,            // OpenAI's Responses API
  kMessages,             // Anthropic's Messages API
  kMessagesCountTokens,
};

// Routes whose errors take Anthropic's shape.
bool http_server_is_anthropic(Route r) {
  return r == Route::kMessages || r == Route::kMessagesCountTokens;
}

struct RouteInfo {
  Route route;
  const char* method;
  bool heavy;
};

std::optional<RouteInfo> find_route(std::string_view path) {
  if (path == "/" || path == "/index.html") return RouteInfo{Route::kChatPage, "GET", false};
  if (path == "/health") return RouteInfo{Route::kHealth, "GET", false};
  if (path == "/v1/models" || path == "/models") return RouteInfo{Route::kModels, "GET", false};
  if (path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix) {
    return RouteInfo{Route::kModel, "GET", false};
  }
  if (path == "/metrics") return RouteInfo{Route::kMetrics, "GET", false};
  if (path == "/v1/completions" || path == "/completions") {
    return RouteInfo{Route::kCompletions, "POST", true};
  }
  if (path == "/v1/chat/completions" || path == "/chat/completions") {
    return RouteInfo{Route::kChatCompletions, "POST", true};
  }
  if (path == "/v1/completions/render") return RouteInfo{Route::kCompletionsRender, "POST", true};
  if (path == "/v1/chat/completions/render") {
    return RouteInfo{Route::kChatCompletionsRender, "POST", true};
  }
  if (path == "/v1/embeddings" || path == "/embeddings") {
    return RouteInfo{Route::kEmbeddings, "POST", true};
  }
  if (path == "/v1/responses" || path == "/responses") {
    return RouteInfo{Route::kResponses, "POST", true};
  }
  if (path == "/v1/messages") return RouteInfo{Route::kMessages, "POST", true};
  if (path == "/v1/messages/count_tokens") {
    return RouteInfo{Route::kMessagesCountTokens, "POST", true};
  }
  if (path == "/tokenize") return RouteInfo{Route::kTokenize, "POST", true};
  if (path == "/detokenize") return RouteInfo{Route::kDetokenize, "POST", true};
  return std::nullopt;
}

}  // namespace

struct HttpServer::Impl final : HttpHandler {
  ServerOptions options;
  std::unique_ptr<HttpTransport> transport;

  // previous_response_id of /v1/responses.
  std::shared_ptr<ResponseStore> responses;

  mutable std::mutex model_mu;
  std::shared_ptr<const ServedModel> model;
  int64_t created = static_cast<int64_t>(std::time(nullptr));

  std::shared_ptr<const ServedModel> current_model() const {
    std::lock_guard<std::mutex> lock(model_mu);
    return model;
  }

  // `Authorization: Bearer KEY`, or `x-api-key: KEY` as Anthropic's clients send it.
  bool authorized(const HttpRequest& r) const {
    if (options.api_key.empty()) return true;
    const std::string_view auth = r.header("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (auth.size() > kBearer.size() && auth.substr(0, kBearer.size()) == kBearer &&
        same_secret(auth.substr(kBearer.size()), options.api_key)) {
      return true;
    }
    const std::string_view key = r.header("X-Api-Key");
    return !key.empty() && same_secret(key, options.api_key);
  }

  // An error answer in the shape of the route's API.
  static std::unique_ptr<HttpReply> error_for(const RouteInfo& info, const ApiError& e) {
    return std::make_unique<HttpReply>(http_server_is_anthropic(info.route)
                                           ? anthropic_error_reply(e)
                                           : e.reply());
  }

  bool origin_allowed(std::string_view origin) const {
    for (const std::string& o : options.cors_origins) {
      if (o == "*" || o == origin) return true;
    }
    return false;
  }

  HttpHeaders answer_headers(const HttpRequest& r) const override {
    const std::string_view origin = r.header("Origin");
    if (origin.empty() || !origin_allowed(origin)) return {};
    for (const std::string& o : options.cors_origins) {
      if (o == "*") return {{"Access-Control-Allow-Origin", "*"}};
    }
    // The answer depends on the Origin field: caches must key on it.
    return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
  }

  // OPTIONS on a route: a CORS preflight (Origin and
  // Access-Control-Request-Method), or a plain question for the methods.
  HttpReply options_reply(const HttpRequest& r, const RouteInfo& info) const {
    HttpReply reply;
    reply.status = 204;
    const std::string methods = fmt::format("{}, OPTIONS", info.method);
    const std::string_view origin = r.header("Origin");
    if (origin.empty() || r.header("Access-Control-Request-Method").empty()) {
      reply.headers.emplace_back("Allow", methods);
      return reply;
    }
    if (!origin_allowed(origin)) {
      ApiError e = bad_request(fmt::format(
          "cross-origin requests from '{}' are not allowed (the server's --cors-origin lists "
          "the origins that may call it)",
          origin));
      e.http_status = 403;
      e.code = "origin_not_allowed";
      return e.reply();
    }
    reply.headers.emplace_back("Access-Control-Allow-Methods", methods);
    reply.headers.emplace_back(
        "Access-Control-Allow-Headers",
        http_server_allowed_headers(r.header("Access-Control-Request-Headers")));
    reply.headers.emplace_back("Access-Control-Max-Age", "600");
    return reply;
  }

  std::unique_ptr<HttpReply> screen(const HttpRequest& r) override {
    const std::optional<RouteInfo> info = find_route(r.path);
    if (!info) {
      return std::make_unique<HttpReply>(
          not_found_error(fmt::format("Invalid URL ({} {})", r.method, r.path), "unknown_url")
              .reply());
    }
    if (r.method == "OPTIONS") return std::make_unique<HttpReply>(options_reply(r, *info));
    if (r.method != info->method) {
      ApiError e = bad_request(
          fmt::format("method {} is not allowed on {} (use {})", r.method, r.path, info->method));
      e.http_status = 405;
      e.code = "method_not_allowed";
      auto reply = error_for(*info, e);
      reply->headers.emplace_back("Allow", fmt::format("{}, OPTIONS", info->method));
      return reply;
    }
    // The page and /health need no key: the page asks for it.
    if (info->route == Route::kHealth || info->route == Route::kChatPage) return nullptr;
    if (!authorized(r)) return error_for(*info, unauthorized_error());
    // Every POST route takes a JSON body. A browser sends a cross-site form
    // or text/plain POST without asking the server first; a JSON one only
    // after a preflight the server answers.
    if (std::string_view(info->method) == "POST" &&
        !http_server_is_json_type(r.header("Content-Type"))) {
      const std::string_view type = r.header("Content-Type");
      ApiError e = bad_request(
          type.empty() ? std::string("the request body must be JSON: send 'Content-Type: "
                                     "application/json'")
                       : fmt::format("the request body must be JSON: Content-Type is '{}', not "
                                     "'application/json'",
                                     type.substr(0, 200)));
      e.http_status = 415;
      e.code = "unsupported_media_type";
      return error_for(*info, e);
    }
    if (!current_model()) return error_for(*info, unavailable_error("loading model"));
    return nullptr;
  }

  bool is_heavy(const HttpRequest& r) const override {
    const std::optional<RouteInfo> info = find_route(r.path);
    return info && info->heavy;
  }

  Json model_entry(const ServedModel& m) const {
    Json entry = Json::object();
    entry["id"] = m.id;
    entry["object"] = "model";
    entry["created"] = created;
    entry["owned_by"] = "folio";
    entry["max_model_len"] = m.n_ctx;
    return entry;
  }

  RouteResult handle(const HttpRequest& r) override {
    const std::optional<RouteInfo> info = find_route(r.path);
    if (!info) return not_found_error("unknown route", "unknown_url").reply();
    if (info->route == Route::kChatPage) {
      HttpReply page;
      page.content_type = "text/html; charset=utf-8";
      page.body = std::string(chat_page_html());
      page.headers.emplace_back("Cache-Control", "no-cache");
      return page;
    }
    if (info->route == Route::kHealth) {
      return current_model() ? json_reply(200, Json{{"status", "ok"}})
                             : json_reply(503, Json{{"status", "loading model"}});
    }
    auto m = current_model();
    if (!m) return unavailable_error("loading model").reply();
    switch (info->route) {
      case Route::kModels:
        return json_reply(200, Json{{"object", "list"}, {"data", Json::array({model_entry(*m)})}});
      case Route::kModel: {
        const std::optional<std::string> id = percent_decode(r.path.substr(kModelPrefix.size()));
        if (!id) return bad_request("malformed %-escape in the model id").reply();
        if (*id != m->id) {
          return not_found_error(
                     fmt::format("The model '{}' does not exist; this server serves '{}'", *id,
                                 m->id),
                     "model_not_found")
              .reply();
        }
        return json_reply(200, model_entry(*m));
      }
      case Route::kMetrics: {
        HttpReply reply;
        reply.content_type = std::string(kPrometheusContentType);
        const TransportStats http = transport->stats();
        reply.body = render_prometheus(
            m->service != nullptr ? m->service->metrics() : ServingMetrics().snapshot(), m->id,
            &http);
        return reply;
      }
      case Route::kCompletions:
      case Route::kChatCompletions:
        if (m->service == nullptr) {
          return bad_request(fmt::format("the model '{}' is an embedding model: it answers "
                                         "/v1/embeddings, not completions",
                                         m->id),
                             "model")
              .reply();
        }
        return handle_generation(
            *m, info->route == Route::kChatCompletions ? ApiKind::kChat : ApiKind::kCompletion,
            r.body);
      case Route::kCompletionsRender:
      case Route::kChatCompletionsRender:
        return handle_render(*m,
                             info->route == Route::kChatCompletionsRender ? ApiKind::kChat
                                                                          : ApiKind::kCompletion,
                             r.body);
      case Route::kResponses:
      case Route::kMessages:
      case Route::kMessagesCountTokens: {
        if (m->service == nullptr || m->chat_template == nullptr) {
          ApiError e = bad_request(fmt::format("the model '{}' is an embedding model: it answers "
                                               "/v1/embeddings, not chat",
                                               m->id),
                                   "model");
          return http_server_is_anthropic(info->route) ? anthropic_error_reply(e) : e.reply();
        }
        if (info->route == Route::kResponses) return handle_responses(*m, responses, r.body);
        if (info->route == Route::kMessages) return handle_anthropic_messages(*m, r.body);
        return handle_anthropic_count_tokens(*m, r.body);
      }
      case Route::kEmbeddings:
        return handle_embeddings(*m, r.body);
      case Route::kTokenize:
        return handle_tokenize(*m, r.body);
      case Route::kDetokenize:
        return handle_detokenize(*m, r.body);
      case Route::kHealth:
      case Route::kChatPage:
        break;
    }
    return internal_server_error("unrouted request").reply();
  }
};

HttpServer::HttpServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const ServerOptions& o = impl_->options;
  impl_->responses =
      std::make_shared<ResponseStore>(o.response_store_entries, o.response_store_bytes);
  TransportOptions t;
  t.host = o.host;
  t.port = o.port;
  t.io_threads = o.io_threads;
  t.worker_threads = o.http_threads;
  t.max_connections = o.max_connections;
  t.max_connections_per_client = o.max_connections_per_client;
  t.header_timeout = o.header_timeout;
  t.idle_timeout = o.idle_timeout;
  t.body_timeout = o.body_timeout;
  t.write_timeout = o.write_timeout;
  t.max_body_bytes = o.max_body_bytes;
  t.large_body_bytes = o.large_body_bytes;
  t.large_body_workers = o.large_body_threads;
  impl_->transport = std::make_unique<HttpTransport>(t, *impl_);
}

HttpServer::~HttpServer() {
  stop();
}

Status check_cors_origin(std::string_view origin) {
  if (origin == "*") return Status();
  // An origin as browsers send it: scheme "://" host [":" port], nothing
  // after (no path, no trailing '/'), or "null" (sandboxed documents).
  if (origin == "null") return Status();
  const size_t sep = origin.find("://");
  const std::string_view rest = sep == std::string_view::npos ? "" : origin.substr(sep + 3);
  if (sep == std::string_view::npos || sep == 0 || rest.empty() ||
      rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return invalid_argument(
        "CORS origin '{}' is not an origin: write scheme://host[:port] (no path, no trailing "
        "'/'), or '*' for any",
        origin);
  }
  return Status();
}

Result<int> HttpServer::start() {
  for (const std::string& o : impl_->options.cors_origins) {
    FOLIO_RETURN_IF_ERROR(check_cors_origin(o));
  }
  return impl_->transport->start();
}

bool HttpServer::drain(std::chrono::milliseconds deadline) {
  return impl_->transport->drain(deadline);
}

void HttpServer::stop() {
  impl_->transport->stop();
}

void HttpServer::set_model(const ServedModel& model) {
  std::lock_guard<std::mutex> lock(impl_->model_mu);
  impl_->model = std::make_shared<const ServedModel>(model);
}

bool HttpServer::ready() const {
  return impl_->current_model() != nullptr;
}
int HttpServer::port() const {
  return impl_->transport->port();
}
const ServerOptions& HttpServer::options() const {
  return impl_->options;
}
TransportStats HttpServer::transport_stats() const {
  return impl_->transport->stats();
}

}  // namespace folio::server
