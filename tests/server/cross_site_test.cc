// The server as a web page on another site would use it: POST bodies that
// are not declared JSON (forms, text/plain: what a browser sends without a
// preflight) get 415; CORS preflights are answered for the origins
// --cors-origin lists and refused (403) for others; answers carry
// Access-Control-Allow-Origin only for listed origins; bodies over the limit
// get 413 before they are read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "raw_http.h"
#include "server/http_server.h"
#include "scripted_server.h"
#include "test_client.h"

namespace folio::server {
namespace cross_site_test {

using namespace std::chrono_literals;
using testing::RawConnection;
using testing::RawResponse;
using testing::ScriptedService;

class CrossSiteTest : public testing::ScriptedServerTest {
 protected:
  // One request on a fresh connection (Connection: close); `headers` are
  // whole lines without CRLF. A POST gets a Content-Length.
  RawResponse exchange(std::string_view method, std::string_view path,
                       const std::vector<std::string>& headers, std::string_view body = "") {
    std::string req =
        fmt::format("{} {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n", method, path);
    for (const std::string& h : headers) req += h + "\r\n";
    if (method == "POST" || !body.empty())
      req += fmt::format("Content-Length: {}\r\n", body.size());
    req += "\r\n";
    req += body;
    RawConnection c(port_);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.send(req));
    std::string bytes;
    c.read_until_closed(10s, &bytes);
    std::vector<RawResponse> r = testing::parse_responses(bytes);
    EXPECT_EQ(r.size(), 1u) << bytes;
    return r.empty() ? RawResponse{} : r.front();
  }

};

void expect_api_error(const RawResponse& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.status_line << "\n" << r.body;
  Json j = Json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["code"], code) << r.body;
  EXPECT_EQ(r.header("content-type"), "application/json");
}

const char* kTokenize = R"({"content": "hello world"})";

TEST_F(CrossSiteTest, PostBodiesMustBeDeclaredJson) {
  start_serving();
  // What a page on another site can send without a preflight, and no type.
  for (const char* type :
       {"Content-Type: text/plain", "Content-Type: text/plain;charset=UTF-8",
        "Content-Type: application/x-www-form-urlencoded",
        "Content-Type: multipart/form-data; boundary=x", "Content-Type: application/jsonx",
        "Content-Type: application/json-seq", "Content-Type: "}) {
    expect_api_error(exchange("POST", "/tokenize", {type}, kTokenize), 415,
                     "unsupported_media_type");
    expect_api_error(exchange("POST", "/v1/chat/completions", {type},
                              R"({"messages": [{"role": "user", "content": "x"}]})"),
                     415, "unsupported_media_type");
  }
  expect_api_error(exchange("POST", "/v1/completions", {}, R"({"prompt": "x"})"), 415,
                   "unsupported_media_type");
  EXPECT_EQ(service_.n_submitted(), 0u);
  // JSON with parameters and in any case is JSON.
  for (const char* type : {"Content-Type: application/json", "Content-Type: Application/JSON",
                           "Content-Type: application/json; charset=utf-8",
                           "Content-Type:  application/json ;charset=\"utf-8\""}) {
    RawResponse r = exchange("POST", "/tokenize", {type}, kTokenize);
    EXPECT_EQ(r.status, 200) << type << ": " << r.body;
  }
  // GET routes take no body and need no type.
  EXPECT_EQ(exchange("GET", "/v1/models", {}).status, 200);
  EXPECT_EQ(exchange("GET", "/", {}).status, 200);
}

TEST_F(CrossSiteTest, NoOriginIsAllowedByDefault) {
  start_serving();
  RawResponse get = exchange("GET", "/v1/models", {"Origin: http://evil.example"});
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.header("access-control-allow-origin"), "");
  RawResponse post =
      exchange("POST", "/tokenize",
               {"Origin: http://evil.example", "Content-Type: application/json"}, kTokenize);
  EXPECT_EQ(post.status, 200);
  EXPECT_EQ(post.header("access-control-allow-origin"), "");
  RawResponse pre = exchange("OPTIONS", "/v1/chat/completions",
                             {"Origin: http://evil.example", "Access-Control-Request-Method: POST",
                              "Access-Control-Request-Headers: content-type"});
  expect_api_error(pre, 403, "origin_not_allowed");
  EXPECT_EQ(pre.header("access-control-allow-origin"), "");
  EXPECT_EQ(pre.header("access-control-allow-methods"), "");
  // OPTIONS that is not a preflight: the methods; unknown paths: 404;
  // another method: 405 naming them.
  RawResponse plain = exchange("OPTIONS", "/v1/chat/completions", {});
  EXPECT_EQ(plain.status, 204);
  EXPECT_EQ(plain.header("allow"), "POST, OPTIONS");
  expect_api_error(exchange("OPTIONS", "/v1/nothing",
                            {"Origin: http://evil.example", "Access-Control-Request-Method: POST"}),
                   404, "unknown_url");
  RawResponse del = exchange("DELETE", "/v1/models", {});
  expect_api_error(del, 405, "method_not_allowed");
  EXPECT_EQ(del.header("allow"), "GET, OPTIONS");
}

TEST_F(CrossSiteTest, ListedOriginsArePreflightedAndAnswered) {
  ServerOptions o;
  o.cors_origins = {"http://app.example", "https://b.example:8443"};
  o.api_key = "sesame";
  start_serving(o);
  for (const std::string origin : {"http://app.example", "https://b.example:8443"}) {
    // Browsers send no credentials with a preflight: no key needed.
    RawResponse pre =
        exchange("OPTIONS", "/v1/chat/completions",
                 {"Origin: " + origin, "Access-Control-Request-Method: POST",
                  "Access-Control-Request-Headers: authorization, content-type, x-stainless-os"});
    EXPECT_EQ(pre.status, 204) << pre.body;
    EXPECT_EQ(pre.header("access-control-allow-origin"), origin);
    EXPECT_EQ(pre.header("vary"), "Origin");
    EXPECT_EQ(pre.header("access-control-allow-methods"), "POST, OPTIONS");
    EXPECT_EQ(pre.header("access-control-allow-headers"),
              "authorization, content-type, x-stainless-os");
    EXPECT_EQ(pre.header("access-control-max-age"), "600");
    // The answers themselves, errors included, are readable by the page.
    RawResponse ok = exchange(
        "POST", "/tokenize",
        {"Origin: " + origin, "Content-Type: application/json", "Authorization: Bearer sesame"},
        kTokenize);
    EXPECT_EQ(ok.status, 200) << ok.body;
    EXPECT_EQ(ok.header("access-control-allow-origin"), origin);
    RawResponse denied = exchange("GET", "/v1/models", {"Origin: " + origin});
    expect_api_error(denied, 401, "invalid_api_key");
    EXPECT_EQ(denied.header("access-control-allow-origin"), origin);
  }
  // Odd request headers are not echoed back: the fields the APIs use are
  // named instead (Anthropic's clients send their key as x-api-key).
  RawResponse odd = exchange("OPTIONS", "/tokenize",
                             {"Origin: http://app.example", "Access-Control-Request-Method: POST",
                              "Access-Control-Request-Headers: a;b"});
  EXPECT_EQ(odd.header("access-control-allow-headers"),
            "Authorization, Content-Type, X-Api-Key, Anthropic-Version");
  // Another origin, or a listed one spelled differently, is not listed.
  for (const char* other : {"http://evil.example", "http://app.example:80", "https://app.example",
                            "http://APP.example"}) {
    RawResponse pre =
        exchange("OPTIONS", "/v1/chat/completions",
                 {std::string("Origin: ") + other, "Access-Control-Request-Method: POST"});
    expect_api_error(pre, 403, "origin_not_allowed");
    RawResponse get = exchange("GET", "/v1/models",
                               {std::string("Origin: ") + other, "Authorization: Bearer sesame"});
    EXPECT_EQ(get.status, 200);
    EXPECT_EQ(get.header("access-control-allow-origin"), "") << other;
  }
}

TEST_F(CrossSiteTest, AnyOriginWithStar) {
  ServerOptions o;
  o.cors_origins = {"*"};
  start_serving(o);
  RawResponse pre = exchange("OPTIONS", "/tokenize",
                             {"Origin: http://x.example", "Access-Control-Request-Method: POST"});
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.header("access-control-allow-origin"), "*");
  RawResponse get = exchange("GET", "/health", {"Origin: null"});
  EXPECT_EQ(get.header("access-control-allow-origin"), "*");
  // Even an allowed origin does not make a text/plain body JSON.
  expect_api_error(exchange("POST", "/tokenize",
                            {"Origin: http://x.example", "Content-Type: text/plain"}, kTokenize),
                   415, "unsupported_media_type");
}

TEST(CrossSite, OriginsAreCheckedAtStart) {
  for (const char* bad :
       {"", "app.example", "http://app.example/", "http://app.example/path", "://x", "http://"}) {
    ServerOptions o;
    o.port = 0;
    o.cors_origins = {bad};
    HttpServer s(o);
    EXPECT_FALSE(s.start().ok()) << bad;
  }
  for (const char* good : {"*", "null", "http://localhost:3000", "https://app.example"}) {
    EXPECT_TRUE(check_cors_origin(good).ok()) << good;
  }
}

TEST_F(CrossSiteTest, OversizedBodiesGet413BeforeTheyAreRead) {
  EXPECT_EQ(ServerOptions().max_body_bytes, size_t{4} << 20);
  ServerOptions o;
  o.max_body_bytes = 1 << 20;
  start_serving(o);
  // Only the head is sent: a declared length over the limit is refused at
  // once, without waiting for 10 MB that never come.
  RawConnection c(port_);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(
      c.send("POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: 10485760\r\n\r\n{\"content\": \""));
  std::string bytes;
  EXPECT_TRUE(c.read_until_closed(10s, &bytes));
  std::vector<RawResponse> r = testing::parse_responses(bytes);
  ASSERT_EQ(r.size(), 1u) << bytes;
  expect_api_error(r[0], 413, "body_too_large");
  EXPECT_NE(r[0].body.find("--max-body-mib"), std::string::npos) << r[0].body;
  // A body at the limit is read and answered.
  std::string words;
  while (words.size() < (1 << 20) - 15) words += "hi ";
  words.resize((1 << 20) - 15);
  const std::string at_limit = "{\"content\": \"" + words + "\"}";
  ASSERT_EQ(at_limit.size(), size_t{1} << 20);
  EXPECT_EQ(exchange("POST", "/tokenize", {"Content-Type: application/json"}, at_limit).status,
            200);
}

}  // namespace cross_site_test
}  // namespace folio::server
