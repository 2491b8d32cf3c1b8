// HttpTransport on Boost.Beast: one Connection object per socket, every
// handler of a connection on its own strand, so a connection's state needs
// no lock. The only calls from other threads are the AsyncReply wakers
// (scheduler thread) and worker results, and both arrive by posting to the
// connection's strand.
#include "server/http_transport.h"

// Beast speaks std::string_view rather than boost::string_view.
#define BOOST_BEAST_USE_STD_STRING_VIEW

#include <fmt/format.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/log.h"
#include "server/api_error.h"

namespace folio::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Connection;

constexpr std::string_view kServerName = "folio";
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Wakers hold this: once closed (stop()), none posts to the io_context.
struct WakerGate {
  std::mutex mu;
  bool open = true;
};

// The complete bytes of a 503 for a connection over a limit.
std::string rejection_bytes(std::string_view why) {
  ApiError e = unavailable_error(std::string(why));
  const std::string body = e.body();
  return fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nServer: {}\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
      kServerName, body.size(), body);
}

// Everything the connections share: the io_context, the acceptor, the
// workers and the bookkeeping behind the limits, drain() and stop().
struct TransportState {
  TransportOptions options;
  HttpHandler& handler;

  // Connection bookkeeping (any thread).
  std::mutex mu;
  std::condition_variable all_closed;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
  std::unordered_map<std::string, int> per_client;
  TransportStats stats;
  std::atomic<bool> draining{false};
  std::shared_ptr<WakerGate> gate = std::make_shared<WakerGate>();

  std::mutex lifecycle_mu;
  bool started = false;
  bool stopped = false;
  int port = -1;

  // Declared last among what connections touch: destroying the io_context
  // destroys the handlers still queued in it, and with them the last
  // references to their connections, whose destructors use the members
  // above.
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::thread_pool workers;
  net::thread_pool large_workers;  // heavy requests with large bodies
  std::vector<std::thread> io_threads;

  TransportState(TransportOptions o, HttpHandler& h)
      : options(std::move(o)),
        handler(h),
        ioc(std::max(1, options.io_threads)),
        workers(static_cast<size_t>(std::max(1, options.worker_threads))),
        large_workers(static_cast<size_t>(std::max(1, options.large_body_workers))) {}

  void accept();
  void on_accept(beast::error_code ec, tcp::socket socket);
  void reject(tcp::socket socket, std::string_view why);
  void unregister(Connection* c, const std::string& client);
  std::vector<std::shared_ptr<Connection>> live_connections();
  bool wait_closed(std::chrono::steady_clock::time_point until);
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(TransportState& srv, tcp::socket socket, std::string client)
      : srv_(srv), stream_(std::move(socket)), client_(std::move(client)) {}

  ~Connection() { srv_.unregister(this, client_); }

  const std::string& client() const { return client_; }
  auto executor() { return stream_.get_executor(); }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_head(); });
  }

  // On the strand: drain() started. A connection not answering closes now;
  // one answering closes after its answer (keep-alive off).
  void on_drain() {
    if (state_ == State::kReading) close();
  }

  // On the strand: stop() closes everything, cancelling the answer.
  void on_stop() { close(); }

 private:
  enum class State { kReading, kHandling, kClosed };

  // --- reading -----------------------------------------------------------

  void read_head() {
    if (state_ == State::kClosed) return;
    if (srv_.draining) return close();
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(srv_.options.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(srv_.options.max_body_bytes);
    stream_.expires_after(served_ == 0 ? srv_.options.header_timeout : srv_.options.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              self->on_head(ec);
                            });
  }

  // A reply to a request that could not be read (its body unread): the
  // connection ends after it.
  void refuse(const ApiError& e, const char* what) {
    FOLIO_LOG_DEBUG("http: {} from {}: {}", what, client_, e.message);
    send_reply(e.reply(), /*keep_alive=*/false);
  }

  bool read_failed(beast::error_code ec) {
    if (!ec) return false;
    if (ec == http::error::body_limit) {
      refuse(too_large_error(fmt::format("the request body is larger than the limit of {} bytes "
                                         "(folio serve --max-body-mib)",
                                         srv_.options.max_body_bytes),
                             "body_too_large"),
             "body over the limit");
    } else if (ec == http::error::header_limit) {
      ApiError e = bad_request(fmt::format("the request head is larger than the limit of {} bytes",
                                           srv_.options.max_header_bytes));
      e.http_status = 431;
      refuse(e, "head over the limit");
    } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      refuse(bad_request(fmt::format("malformed HTTP request: {}", ec.message())),
             "malformed request");
    } else {
      // End of stream, a deadline passed, reset by peer, or closed by us.
      close();
    }
    return true;
  }

  void on_head(beast::error_code ec) {
    if (state_ == State::kClosed || read_failed(ec)) return;
    {
      std::lock_guard<std::mutex> lock(srv_.mu);
      ++srv_.stats.requests_total;
    }
    const auto& m = parser_->get();
    request_ = std::make_shared<HttpRequest>();
    HttpRequest& r = *request_;
    r.method = std::string(m.method_string());
    const std::string_view target = m.target();
    const size_t q = target.find('?');
    r.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
    r.version = m.version() == 10 ? 10 : 11;
    for (const auto& f : m) r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    keep_alive_ = m.keep_alive();

    std::unique_ptr<HttpReply> early;
    try {
      early = srv_.handler.screen(r);
    } catch (const std::exception& e) {
      early = std::make_unique<HttpReply>(internal_server_error(e.what()).reply());
    }
    if (early) {
      // Keep the connection only when there is no body left unread.
      return send_reply(std::move(*early), keep_alive_ && parser_->is_done());
    }
    if (parser_->is_done()) return dispatch();
    const std::string_view expect = r.header("Expect");
    if (!expect.empty()) {
      if (!beast::iequals(expect, "100-continue")) {
        ApiError e = bad_request(fmt::format("unsupported Expect: {}", expect));
        e.http_status = 417;
        return refuse(e, "unsupported Expect");
      }
      stream_.expires_after(srv_.options.write_timeout);
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         if (ec) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    if (state_ == State::kClosed) return;
    stream_.expires_after(srv_.options.body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (self->state_ == State::kClosed || self->read_failed(ec)) return;
                       self->request_->body = std::move(self->parser_->get().body());
                       self->dispatch();
                     });
  }

  // --- handling ----------------------------------------------------------

  static RouteResult safe_handle(HttpHandler& h, const HttpRequest& r) {
    try {
      return h.handle(r);
    } catch (const std::exception& e) {
      FOLIO_LOG_ERROR("http: {} {}: {}", r.method, r.path, e.what());
      return internal_server_error(fmt::format("internal error: {}", e.what())).reply();
    } catch (...) {
      return internal_server_error("internal error").reply();
    }
  }

  void dispatch() {
    state_ = State::kHandling;
    stream_.expires_never();
    parser_.reset();
    if (!srv_.handler.is_heavy(*request_)) return on_result(safe_handle(srv_.handler, *request_));
    net::thread_pool& pool =
        request_->body.size() >= srv_.options.large_body_bytes ? srv_.large_workers : srv_.workers;
    net::post(pool, [self = shared_from_this(), req = request_]() mutable {
      RouteResult result = safe_handle(self->srv_.handler, *req);
      auto exec = self->stream_.get_executor();
      net::post(exec, [self = std::move(self), result = std::move(result)]() mutable {
        self->on_result(std::move(result));
      });
    });
  }

  void on_result(RouteResult result) {
    if (auto* reply = std::get_if<HttpReply>(&result)) {
      if (state_ == State::kClosed) return;
      return send_reply(std::move(*reply), keep_alive_);
    }
    std::shared_ptr<AsyncReply> a = std::get<std::shared_ptr<AsyncReply>>(std::move(result));
    if (state_ == State::kClosed) return a->cancel();
    start_async(std::move(a));
  }

  // --- complete replies --------------------------------------------------

  void send_reply(HttpReply r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(request_ && request_->version == 10 ? 10 : 11);
    res->result(static_cast<unsigned>(r.status));
    res->set(http::field::server, kServerName);
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    if (request_) {
      for (auto& [k, v] : srv_.handler.answer_headers(*request_)) res->set(k, v);
    }
    res->body() = std::move(r.body);
    keep_alive = keep_alive && !srv_.draining;
    res->keep_alive(keep_alive);
    res->prepare_payload();
    FOLIO_LOG_DEBUG("http: {} {} -> {}", request_ ? request_->method : "-",
                    request_ ? request_->path : "-", r.status);
    state_ = State::kHandling;
    stream_.expires_after(srv_.options.write_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec) return self->close();
                        self->answered(keep_alive);
                      });
  }

  // An answer went out completely.
  void answered(bool keep_alive) {
    ++served_;
    request_.reset();
    if (!keep_alive || srv_.draining) return linger_close();
    read_head();
  }

  // --- replies over time -------------------------------------------------

  void start_async(std::shared_ptr<AsyncReply> a) {
    async_ = std::move(a);
    have_head_ = head_sent_ = finished_ = writing_ = false;
    pending_.clear();
    std::weak_ptr<Connection> weak = weak_from_this();
    auto exec = stream_.get_executor();
    std::shared_ptr<WakerGate> gate = srv_.gate;
    async_->set_waker([weak, exec, gate] {
      std::lock_guard<std::mutex> lock(gate->mu);
      if (!gate->open) return;
      net::post(exec, [weak] {
        if (auto c = weak.lock()) c->pump();
      });
    });
    watch_peer();
    pump();
  }

  void detach_async() {
    if (!async_) return;
    async_->set_waker({});
    async_.reset();
  }

  void pump() {
    if (!async_ || state_ == State::kClosed || writing_) return;
    AsyncReply::Progress p = async_->poll();
    if (p.head && !have_head_) {
      have_head_ = true;
      head_ = std::move(p);
      pending_ += head_.data;
      finished_ = head_.finished;
    } else {
      pending_ += p.data;
      finished_ = finished_ || p.finished;
    }
    if (!have_head_) return;
    if (!head_.streaming) {
      if (!finished_) return;  // the whole body comes with the end
      HttpReply r;
      r.status = head_.status;
      r.content_type = head_.content_type;
      r.headers = std::move(head_.headers);
      r.body = std::move(pending_);
      detach_async();
      return send_reply(std::move(r), keep_alive_);
    }
    if (!head_sent_) return write_stream_head();
    if (!pending_.empty()) return write_stream_data();
    if (finished_) return write_stream_end();
  }

  bool http10() const { return request_ && request_->version == 10; }

  template <class Buffers, class Then>
  void write_then(const Buffers& buffers, Then then) {
    writing_ = true;
    stream_.expires_after(srv_.options.write_timeout);
    net::async_write(stream_, buffers,
                     [self = shared_from_this(), then](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       self->stream_.expires_never();
                       if (ec) return self->close();
                       then(*self);
                     });
  }

  void write_stream_head() {
    auto res = std::make_shared<http::response<http::empty_body>>();
    res->version(http10() ? 10 : 11);
    res->result(static_cast<unsigned>(head_.status));
    res->set(http::field::server, kServerName);
    res->set(http::field::content_type, head_.content_type);
    for (auto& [k, v] : head_.headers) res->set(k, v);
    for (auto& [k, v] : srv_.handler.answer_headers(*request_)) res->set(k, v);
    if (http10()) {
      res->keep_alive(false);  // the body ends with the connection
    } else {
      res->keep_alive(keep_alive_ && !srv_.draining);
      res->chunked(true);
    }
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    writing_ = true;
    stream_.expires_after(srv_.options.write_timeout);
    http::async_write_header(stream_, *sr,
                             [self = shared_from_this(), res, sr](beast::error_code ec, size_t) {
                               self->writing_ = false;
                               self->stream_.expires_never();
                               if (ec) return self->close();
                               self->head_sent_ = true;
                               self->keep_alive_ = res->keep_alive();
                               self->pump();
                             });
  }

  void write_stream_data() {
    if (http10()) {
      out_ = std::move(pending_);
    } else {
      out_ = fmt::format("{:x}\r\n", pending_.size());
      out_ += pending_;
      out_ += "\r\n";
    }
    pending_.clear();
    write_then(net::buffer(out_), [](Connection& c) { c.pump(); });
  }

  void write_stream_end() {
    detach_async();
    if (http10()) return linger_close();
    out_ = "0\r\n\r\n";
    write_then(net::buffer(out_), [](Connection& c) { c.answered(c.keep_alive_); });
  }

  // While an answer waits for the engine, notice a client that closes its
  // socket and cancel its request. A client that sends more (a pipelined
  // request) is not watched further: that request is read after this one.
  void watch_peer() {
    if (watching_ || !async_ || state_ == State::kClosed) return;
    watching_ = true;
    stream_.socket().async_wait(tcp::socket::wait_read,
                                [self = shared_from_this()](beast::error_code ec) {
                                  self->watching_ = false;
                                  if (ec || !self->async_ || self->state_ == State::kClosed) return;
                                  char c;
                                  const ssize_t n =
                                      ::recv(self->stream_.socket().native_handle(), &c, 1,
                                             MSG_PEEK | MSG_DONTWAIT);
                                  if (n > 0) return;
                                  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                                errno == EINTR)) {
                                    return self->watch_peer();
                                  }
                                  FOLIO_LOG_DEBUG("http: {} went away mid-answer", self->client_);
                                  self->close();
                                });
  }

  // --- closing -----------------------------------------------------------

  // After a last answer: stop sending, then read (and drop) what the client
  // still sends until it closes or a short deadline, so that closing does
  // not reset the connection before the client has read the answer.
  void linger_close() {
    if (state_ == State::kClosed) return;
    state_ = State::kHandling;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    stream_.expires_after(std::chrono::seconds(2));
    linger_read();
  }

  void linger_read() {
    stream_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > (size_t{1} << 20)) return self->close();
                              self->linger_read();
                            });
  }

  void close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    if (async_) {
      async_->set_waker({});
      async_->cancel();
      async_.reset();
    }
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  TransportState& srv_;
  beast::tcp_stream stream_;
  std::string client_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpRequest> request_;  // the request being answered
  State state_ = State::kReading;
  bool keep_alive_ = false;
  int64_t served_ = 0;

  // The AsyncReply being written.
  std::shared_ptr<AsyncReply> async_;
  AsyncReply::Progress head_;
  bool have_head_ = false;
  bool head_sent_ = false;
  bool finished_ = false;
  bool writing_ = false;
  bool watching_ = false;
  std::string pending_;  // produced, not yet written
  std::string out_;      // being written

  std::array<char, 4096> scratch_{};
  size_t lingered_ = 0;
};

// --- TransportState -------------------------------------------------------

void TransportState::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void TransportState::on_accept(beast::error_code ec, tcp::socket socket) {
  if (!acceptor.is_open()) return;  // drain() / stop()
  if (ec) {
    // Out of descriptors and the like: keep listening, a little later.
    FOLIO_LOG_WARN("http: accept failed: {}", ec.message());
    auto timer = std::make_shared<net::steady_timer>(acceptor.get_executor(),
                                                     std::chrono::milliseconds(50));
    timer->async_wait([this, timer](beast::error_code) {
      if (acceptor.is_open()) accept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // answers go out in several writes
  const auto remote = socket.remote_endpoint(ignored);
  std::string client = ignored ? std::string("?") : remote.address().to_string();
  const char* over = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    ++stats.accepted_total;
    if (static_cast<int64_t>(connections.size()) >= options.max_connections) {
      over = "too many connections";
    } else if (per_client[client] >= options.max_connections_per_client) {
      over = "too many connections from this client";
    }
    if (over) ++stats.rejected_total;
  }
  if (over) {
    reject(std::move(socket), over);
  } else {
    auto c = std::make_shared<Connection>(*this, std::move(socket), client);
    {
      std::lock_guard<std::mutex> lock(mu);
      connections.emplace(c.get(), c);
      ++per_client[client];
      stats.open_connections = static_cast<int64_t>(connections.size());
    }
    c->start();
  }
  accept();
}

void TransportState::reject(tcp::socket socket, std::string_view why) {
  struct Rejected {
    tcp::socket socket;
    std::string bytes;
  };
  auto r = std::make_shared<Rejected>(Rejected{std::move(socket), rejection_bytes(why)});
  net::async_write(r->socket, net::buffer(r->bytes), [r](beast::error_code, size_t) {
    beast::error_code ec;
    r->socket.shutdown(tcp::socket::shutdown_both, ec);
    r->socket.close(ec);
  });
}

void TransportState::unregister(Connection* c, const std::string& client) {
  std::lock_guard<std::mutex> lock(mu);
  connections.erase(c);
  if (auto it = per_client.find(client); it != per_client.end() && --it->second <= 0) {
    per_client.erase(it);
  }
  stats.open_connections = static_cast<int64_t>(connections.size());
  if (connections.empty()) all_closed.notify_all();
}

std::vector<std::shared_ptr<Connection>> TransportState::live_connections() {
  std::vector<std::shared_ptr<Connection>> out;
  std::lock_guard<std::mutex> lock(mu);
  for (auto& [p, weak] : connections) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

bool TransportState::wait_closed(std::chrono::steady_clock::time_point until) {
  std::unique_lock<std::mutex> lock(mu);
  return all_closed.wait_until(lock, until, [&] { return connections.empty(); });
}

}  // namespace

struct HttpTransport::Impl : TransportState {
  using TransportState::TransportState;
};

// --- HttpTransport -------------------------------------------------------

HttpTransport::HttpTransport(TransportOptions options, HttpHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

HttpTransport::~HttpTransport() {
  stop();
}

Result<int> HttpTransport::start() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.lifecycle_mu);
  if (s.started) return invalid_argument("the HTTP transport is already started");
  const TransportOptions& o = s.options;
  if (o.port < 0 || o.port > 65535) {
    return invalid_argument("port must be in [0, 65535], got {}", o.port);
  }
  if (o.io_threads < 1 || o.worker_threads < 1 || o.large_body_workers < 1) {
    return invalid_argument(
        "io, worker and large-body worker threads must be >= 1 (got {}, {} and {})", o.io_threads,
        o.worker_threads, o.large_body_workers);
  }
  if (o.max_connections < 1 || o.max_connections_per_client < 1) {
    return invalid_argument("connection limits must be >= 1 (got {} and {})", o.max_connections,
                            o.max_connections_per_client);
  }
  // A client that disconnects mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);

  beast::error_code ec;
  tcp::resolver resolver(s.ioc);
  auto endpoints = resolver.resolve(o.host, std::to_string(o.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return io_error("cannot resolve the address '{}': {}", o.host,
                    ec ? ec.message() : std::string("no address"));
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  const std::string where = fmt::format("{}:{}", o.host, o.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (ec) return io_error("cannot open a socket for {}: {}", where, ec.message());
  // SO_REUSEADDR only lets a restarted server bind past connections of a
  // previous one in TIME_WAIT; a live listener on the port still makes
  // bind() fail (SO_REUSEPORT, which would share it, is not set).
  s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  s.acceptor.bind(endpoint, ec);
  if (ec) {
    if (ec == net::error::address_in_use) {
      return io_error("cannot listen on {}: the port is already in use (another server?)", where);
    }
    return io_error("cannot listen on {}: {}", where, ec.message());
  }
  s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return io_error("cannot listen on {}: {}", where, ec.message());
  s.port = s.acceptor.local_endpoint().port();

  s.started = true;
  s.work.emplace(net::make_work_guard(s.ioc));
  s.accept();
  for (int i = 0; i < o.io_threads; ++i) {
    s.io_threads.emplace_back([&s] { s.ioc.run(); });
  }
  return s.port;
}

bool HttpTransport::drain(std::chrono::milliseconds deadline) {
  Impl& s = *impl_;
  const auto until = std::chrono::steady_clock::now() + deadline;
  {
    std::lock_guard<std::mutex> lock(s.lifecycle_mu);
    if (!s.started || s.stopped) return true;
  }
  s.draining = true;
  net::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
  });
  for (auto& c : s.live_connections()) {
    net::post(c->executor(), [c] { c->on_drain(); });
  }
  return s.wait_closed(until);
}

void HttpTransport::stop() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.lifecycle_mu);
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.draining = true;
  {
    std::lock_guard<std::mutex> g(s.gate->mu);
    s.gate->open = false;
  }
  net::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
  });
  for (auto& c : s.live_connections()) {
    net::post(c->executor(), [c] { c->on_stop(); });
  }
  // Closed sockets finish their handlers at once; a worker still preparing
  // a request holds its connection until it is done.
  s.wait_closed(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.io_threads) t.join();
  s.io_threads.clear();
  s.workers.join();
  s.large_workers.join();
}

TransportStats HttpTransport::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

const TransportOptions& HttpTransport::options() const {
  return impl_->options;
}

int HttpTransport::port() const {
  return impl_->port;
}

}  // namespace folio::server
