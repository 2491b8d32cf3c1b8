// The fixture the HTTP tests share: the tiny llama's tokenizer and a ChatML
// template, and an HttpServer on an ephemeral port of 127.0.0.1 whose
// model answers from a ScriptedService (no forward runs).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "server/http_server.h"
#include "test_client.h"
#include "tokenizer/tokenizer.h"

namespace folio::server::testing {

class ScriptedServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = tokenizer::Tokenizer::open(std::string(FOLIO_REFDATA_DIR) +
                                        "/models/tiny-llama-f32.gguf");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    tmpl_ = std::make_unique<chat::ChatTemplate>(chat::ChatTemplate::chatml("", ""));
  }

  void TearDown() override {
    if (server_) server_->stop();
  }

  // The server alone, without a model (host and port are set here).
  void start(ServerOptions o = {}) {
    o.host = "127.0.0.1";
    o.port = 0;
    server_ = std::make_unique<HttpServer>(o);
    auto port = server_->start();
    ASSERT_TRUE(port.ok()) << port.status().to_string();
    port_ = *port;
  }

  // The tiny model "tiny", answered by service_.
  void serve_model(int64_t n_ctx = 256) {
    ServedModel m;
    m.id = "tiny";
    m.n_ctx = n_ctx;
    m.n_vocab = tok_->vocab().size();
    m.tokenizer = tok_.get();
    m.chat_template = tmpl_.get();
    m.service = &service_;
    server_->set_model(m);
  }

  void start_serving(ServerOptions o = {}) {
    start(std::move(o));
    serve_model();
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<chat::ChatTemplate> tmpl_;
  ScriptedService service_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

}  // namespace folio::server::testing
