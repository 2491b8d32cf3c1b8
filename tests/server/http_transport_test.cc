// The HTTP layer as hostile and old clients use it, over raw sockets:
// slow connections cost other clients nothing, deadlines close them,
// pipelined requests are all answered, HTTP/1.0 gets HTTP/1.0, limits
// answer 503, a port in use is an error, drain() and stop() are bounded,
// and a generation's status says how it ended.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "raw_http.h"
#include "server/http_server.h"
#include "scripted_server.h"
#include "test_client.h"

namespace folio::server {
namespace http_transport_test {

using namespace std::chrono_literals;
using testing::RawConnection;
using testing::RawResponse;
using testing::ScriptedService;

class HttpTransportTest : public testing::ScriptedServerTest {
 protected:
  // One request on a fresh connection, read until the server closes it.
  std::vector<RawResponse> exchange(std::string_view request,
                                    std::chrono::milliseconds timeout = 5s) {
    RawConnection c(port_);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.send(request));
    std::string bytes;
    c.read_until_closed(timeout, &bytes);
    return testing::parse_responses(bytes);
  }

  // Milliseconds a GET /health takes on a fresh connection.
  double health_ms() {
    const auto t0 = std::chrono::steady_clock::now();
    auto a = testing::get(port_, "/health");
    EXPECT_EQ(a.status, 200);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
  }

};

std::string post_request(std::string_view path, std::string_view body,
                         std::string_view extra_headers = "") {
  return fmt::format(
      "POST {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\n{}\r\n{}",
      path, body.size(), extra_headers, body);
}

TEST_F(HttpTransportTest, HundredsOfSlowConnectionsCostOtherClientsNothing) {
  start_serving();
  // 300 clients trickling a request head, one header line every 50 ms.
  std::vector<RawConnection> slow;
  for (int i = 0; i < 300; ++i) {
    slow.emplace_back(port_);
    ASSERT_TRUE(slow.back().ok()) << i;
    ASSERT_TRUE(slow.back().send("POST /v1/completions HTTP/1.1\r\n"));
  }
  std::atomic<bool> stop{false};
  std::thread trickler([&] {
    int line = 0;
    while (!stop) {
      for (auto& c : slow) c.send(fmt::format("X-Slow-{}: 1\r\n", line));
      ++line;
      std::this_thread::sleep_for(50ms);
    }
  });
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) ms.push_back(health_ms());
  stop = true;
  trickler.join();
  std::sort(ms.begin(), ms.end());
  // A thread per connection (or a pool of them) would queue /health behind
  // the slow heads until their 10 s header deadline. The bounds are far
  // below that but loose: the test also runs under TSan, beside other tests
  // on a 2-core machine (seen there: median 69 ms, worst 1.8 s; 3 ms alone).
  EXPECT_LT(ms[ms.size() / 2], 250.0) << "median /health ms";
  EXPECT_LT(ms.back(), 5000.0) << "worst /health ms";
  EXPECT_GE(server_->transport_stats().open_connections, 300);
}

TEST_F(HttpTransportTest, HeadDeadlineClosesATrickler) {
  ServerOptions o;
  o.header_timeout = 300ms;
  start_serving(o);
  RawConnection c(port_);
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\n"));
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  std::string bytes;
  for (int i = 0; i < 40 && !closed; ++i) {  // a header line every 50 ms
    c.send(fmt::format("X-Slow-{}: 1\r\n", i));
    closed = !c.read_for(50ms, &bytes);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(closed);
  EXPECT_LT(s, 1.5);
}

TEST_F(HttpTransportTest, BodyDeadlineClosesAStalledUpload) {
  ServerOptions o;
  o.body_timeout = 300ms;
  start_serving(o);
  RawConnection c(port_);
  ASSERT_TRUE(
      c.send("POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: 100\r\n\r\n{\"con"));
  std::string bytes;
  EXPECT_TRUE(c.read_until_closed(2s, &bytes));
  EXPECT_EQ(bytes, "");  // closed by the deadline, not answered
}

TEST_F(HttpTransportTest, PipelinedRequestsAreAllAnsweredInOrder) {
  start_serving();
  const std::string body = R"({"content": "hello world"})";
  std::string requests = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  requests += post_request("/tokenize", body);
  requests += "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  requests += "GET /v1/models/tiny HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  auto rs = exchange(requests);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_EQ(Json::parse(rs[0].body)["status"], "ok");
  EXPECT_EQ(rs[1].status, 200);
  EXPECT_TRUE(Json::parse(rs[1].body).contains("tokens"));
  EXPECT_EQ(Json::parse(rs[2].body)["object"], "list");
  EXPECT_EQ(Json::parse(rs[3].body)["id"], "tiny");
  EXPECT_EQ(rs[3].header("connection"), "close");
}

TEST_F(HttpTransportTest, PipelinedGenerationsAnswerInOrder) {
  start_serving();
  std::string requests = post_request("/v1/completions", R"({"prompt": "a"})");
  requests += post_request("/v1/completions", R"({"prompt": "b", "stream": true})");
  RawConnection c(port_);
  ASSERT_TRUE(c.send(requests));
  for (int k = 0; k < 2; ++k) {
    ScriptedService::Submitted s;
    ASSERT_TRUE(service_.wait_submitted(static_cast<size_t>(k), &s)) << k;
    s.callbacks.on_token(testing::token_event(0, 5, k == 0 ? "one" : "two"));
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kEndOfGeneration;
    s.callbacks.on_done(r);
  }
  std::string bytes;
  for (int i = 0; i < 100 && testing::parse_responses(bytes).size() < 2; ++i) {
    c.read_for(20ms, &bytes);
  }
  auto rs = testing::parse_responses(bytes);
  ASSERT_EQ(rs.size(), 2u) << bytes;
  EXPECT_EQ(Json::parse(rs[0].body)["choices"][0]["text"], "one");
  EXPECT_EQ(rs[1].header("content-type"), "text/event-stream");
  EXPECT_NE(rs[1].body.find("\"two\""), std::string::npos);
  EXPECT_NE(rs[1].body.find("data: [DONE]"), std::string::npos);
}

TEST_F(HttpTransportTest, KeepAliveServesSequentialRequests) {
  start_serving();
  RawConnection c(port_);
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    for (int t = 0; t < 100 && testing::parse_responses(bytes).size() < size_t(i + 1); ++t) {
      ASSERT_TRUE(c.read_for(20ms, &bytes));
    }
  }
  auto rs = testing::parse_responses(bytes);
  ASSERT_EQ(rs.size(), 3u);
  for (const auto& r : rs) EXPECT_EQ(r.status, 200);
}

TEST_F(HttpTransportTest, Http10GetsHttp10AndNoChunking) {
  start_serving();
  auto rs = exchange("GET /health HTTP/1.0\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status_line.substr(0, 8), "HTTP/1.0");
  EXPECT_EQ(rs[0].status, 200);
  EXPECT_FALSE(rs[0].header("content-length").empty());

  // A stream to an HTTP/1.0 client: plain bytes, ended by closing.
  RawConnection c(port_);
  const std::string body = R"({"prompt": "x", "stream": true})";
  ASSERT_TRUE(c.send(fmt::format(
      "POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\n\r\n{}",
      body.size(), body)));
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  s.callbacks.on_token(testing::token_event(0, 5, "hi"));
  RequestResult r;
  r.choices.resize(1);
  r.choices[0].stop = StopReason::kEndOfGeneration;
  s.callbacks.on_done(r);
  std::string bytes;
  ASSERT_TRUE(c.read_until_closed(5s, &bytes));
  rs = testing::parse_responses(bytes);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status_line.substr(0, 8), "HTTP/1.0");
  EXPECT_EQ(rs[0].header("transfer-encoding"), "");
  EXPECT_EQ(rs[0].body.rfind("data: ", 0), 0u) << rs[0].body;
  EXPECT_NE(rs[0].body.find("data: [DONE]\n\n"), std::string::npos);
}

TEST_F(HttpTransportTest, ExpectContinueGetsA100First) {
  start_serving();
  RawConnection c(port_);
  const std::string body = R"({"content": "hi"})";
  ASSERT_TRUE(c.send(
      fmt::format("POST /tokenize HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: "
                  "application/json\r\nContent-Length: {}\r\n\r\n",
                  body.size())));
  std::string bytes;
  for (int i = 0; i < 50 && bytes.find("\r\n\r\n") == std::string::npos; ++i) {
    c.read_for(20ms, &bytes);
  }
  ASSERT_EQ(bytes.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u) << bytes;
  bytes.clear();
  ASSERT_TRUE(c.send(body));
  for (int i = 0; i < 100 && testing::parse_responses(bytes).empty(); ++i) {
    c.read_for(20ms, &bytes);
  }
  auto rs = testing::parse_responses(bytes);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 200);
}

TEST_F(HttpTransportTest, ConnectionLimitsAnswer503) {
  ServerOptions o;
  o.max_connections_per_client = 4;
  start_serving(o);
  std::vector<RawConnection> held;
  for (int i = 0; i < 4; ++i) {
    held.emplace_back(port_);
    ASSERT_TRUE(held.back().ok());
  }
  // Let the server count them before the next one.
  for (int i = 0; i < 100 && server_->transport_stats().open_connections < 4; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  auto rs = exchange("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 503);
  EXPECT_TRUE(Json::parse(rs[0].body).contains("error"));
  EXPECT_EQ(server_->transport_stats().rejected_total, 1);
  held.pop_back();
  for (int i = 0; i < 100 && server_->transport_stats().open_connections >= 4; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(testing::get(port_, "/health").status, 200);
}

TEST_F(HttpTransportTest, APortInUseIsAnError) {
  start_serving();
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = port_;
  HttpServer second(o);
  auto r = second.start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("already in use"), std::string::npos)
      << r.status().message();
}

TEST_F(HttpTransportTest, RoutesAndMethods) {
  start_serving();
  auto rs = exchange("DELETE /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 405);
  EXPECT_EQ(rs[0].header("allow"), "GET, OPTIONS");
  rs = exchange("GET /v1/models/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 404);
  EXPECT_EQ(Json::parse(rs[0].body)["error"]["code"], "model_not_found");
  rs = exchange("GET /v1/models/t%69ny HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 200);
  rs = exchange("GARBAGE\r\n\r\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].status, 400);
}

// A non-streaming request that fails after it was accepted gets the
// failure's status, not 200 with an error inside; a stream, open since it
// was accepted, ends with the error as an event.
TEST_F(HttpTransportTest, FailuresAfterAcceptanceKeepTheirStatus) {
  start_serving();
  struct Case {
    Status status;
    bool cancelled;
    int http;
  };
  const Case cases[] = {
      {invalid_argument("the sequence cannot fit the KV pool"), false, 400},
      {resource_exhausted("overloaded"), false, 503},
      {internal_error("forward failed"), false, 500},
      {Status(), true, 503},
  };
  size_t k = 0;
  for (bool stream : {false, true}) {
    for (const Case& c : cases) {
      testing::HttpAnswer a;
      std::thread client([&] {
        a = testing::post(port_, "/v1/completions",
                          stream ? R"({"prompt": "x", "stream": true})" : R"({"prompt": "x"})");
      });
      ScriptedService::Submitted s;
      ASSERT_TRUE(service_.wait_submitted(k++, &s));
      RequestResult r;
      r.status = c.status;
      r.choices.resize(1);
      if (c.cancelled) r.choices[0].stop = StopReason::kCancelled;
      s.callbacks.on_done(r);
      client.join();
      if (stream) {
        EXPECT_EQ(a.status, 200) << a.body;
        ASSERT_FALSE(a.events.empty()) << a.body;
        EXPECT_TRUE(a.events.back()["error"]["message"].is_string()) << a.body;
        EXPECT_TRUE(a.done);
        continue;
      }
      EXPECT_EQ(a.status, c.http) << a.body;
      EXPECT_EQ(a.content_type, "application/json");
      EXPECT_TRUE(testing::json_of(a)["error"]["message"].is_string()) << a.body;
    }
  }
}

TEST_F(HttpTransportTest, DrainFinishesAnswersAndClosesTricklers) {
  start_serving();
  std::vector<RawConnection> slow;
  for (int i = 0; i < 10; ++i) {
    slow.emplace_back(port_);
    slow.back().send("GET /health HTTP/1.1\r\n");
  }
  testing::HttpAnswer a;
  std::thread client(
      [&] { a = testing::post(port_, "/v1/completions", R"({"prompt": "x", "stream": true})"); });
  ScriptedService::Submitted s;
  ASSERT_TRUE(service_.wait_submitted(0, &s));
  s.callbacks.on_token(testing::token_event(0, 5, "a"));
  std::thread finisher([&] {
    std::this_thread::sleep_for(300ms);
    s.callbacks.on_token(testing::token_event(0, 6, "b"));
    RequestResult r;
    r.choices.resize(1);
    r.choices[0].stop = StopReason::kEndOfGeneration;
    s.callbacks.on_done(r);
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_->drain(5s));
  const double s_taken =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finisher.join();
  client.join();
  EXPECT_LT(s_taken, 2.0);
  EXPECT_EQ(a.status, 200);
  EXPECT_TRUE(a.done);
  EXPECT_EQ(testing::streamed_text(a), "ab");
  std::string bytes;
  for (auto& c : slow) EXPECT_TRUE(c.read_until_closed(1s, &bytes));
  // No new connections once draining.
  EXPECT_EQ(testing::get(port_, "/health").status, 0);
}

TEST_F(HttpTransportTest, StopIsBoundedWithTricklingClients) {
  start_serving();
  std::vector<RawConnection> slow;
  for (int i = 0; i < 50; ++i) {
    slow.emplace_back(port_);
    slow.back().send(
        "POST /v1/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n{");
  }
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_->drain(10s));
  server_->stop();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

// A handler whose requests with big bodies wait until the test releases
// them, so the test sees without timing which requests are answered while
// big ones are being prepared, and how many are prepared at once.
class GatedBigBodies final : public HttpHandler {
 public:
  static constexpr size_t kBig = 4096;
  std::unique_ptr<HttpReply> screen(const HttpRequest&) override { return nullptr; }
  bool is_heavy(const HttpRequest&) const override { return true; }
  RouteResult handle(const HttpRequest& r) override {
    HttpReply reply;
    if (r.body.size() < kBig) {
      reply.body = R"({"big": false})";
      return reply;
    }
    std::unique_lock<std::mutex> lock(mu_);
    ++running_;
    max_running_ = std::max(max_running_, running_);
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    --running_;
    reply.body = R"({"big": true})";
    return reply;
  }
  bool wait_running(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return running_ >= n; });
  }
  int running() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }
  int max_running() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_running_;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int max_running_ = 0;
  bool released_ = false;
};

// Big bodies go through their own lane of large_body_workers threads: at
// most that many are prepared at once, and small requests are answered
// while every big one waits.
TEST(HttpTransportLanes, BigBodiesNeverHoldSmallRequests) {
  GatedBigBodies handler;
  TransportOptions o;
  o.port = 0;
  o.worker_threads = 2;
  o.large_body_bytes = GatedBigBodies::kBig;
  o.large_body_workers = 1;
  HttpTransport transport(o, handler);
  Result<int> port = transport.start();
  ASSERT_TRUE(port.ok()) << port.status().to_string();
  const std::string big(GatedBigBodies::kBig + 10, 'x');
  std::vector<std::future<testing::HttpAnswer>> bigs;
  for (int i = 0; i < 4; ++i) {
    bigs.push_back(std::async(std::launch::async, [&] { return testing::post(*port, "/", big); }));
  }
  ASSERT_TRUE(handler.wait_running(1));
  // More small requests than worker threads, one after another and
  // together, all answered while the big ones are held.
  for (int i = 0; i < 3; ++i) {
    testing::HttpAnswer a = testing::post(*port, "/", "{}");
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, R"({"big": false})");
  }
  std::vector<std::future<testing::HttpAnswer>> smalls;
  for (int i = 0; i < 6; ++i) {
    smalls.push_back(
        std::async(std::launch::async, [&] { return testing::post(*port, "/", "{}"); }));
  }
  for (auto& f : smalls) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready) << "a small request waited";
    EXPECT_EQ(f.get().status, 200);
  }
  EXPECT_EQ(handler.running(), 1);  // the other three big ones queue
  handler.release();
  for (auto& f : bigs) {
    testing::HttpAnswer a = f.get();
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, R"({"big": true})");
  }
  EXPECT_EQ(handler.max_running(), 1);
  transport.stop();
}

}  // namespace
}  // namespace folio::server
