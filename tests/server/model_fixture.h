// A real serving stack on loopback for tests: the tiny llama reference
// model, a paged KV cache, the Scheduler and an HttpServer on an ephemeral
// port; plus solo greedy Generator runs to compare outputs with.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/paged_kv_cache.h"
#include "engine/generator.h"
#include "engine/scheduler.h"
#include "server/http_server.h"
#include "server/openai_response.h"
#include "test_client.h"

namespace folio::server::testing {

struct StackOptions {
  int max_seqs = 4;
  int64_t n_ctx = 512;
  int32_t n_blocks = 0;  // 0: max_seqs contexts
  int64_t max_batch_tokens = 256;
  int64_t ubatch = 64;
  std::string api_key;
  // Null: the model's own template. Borrowed.
  const chat::ChatTemplate* chat_template = nullptr;
  int reasoning_budget = -1;  // --reasoning-budget
};

class ServingStack {
 public:
  static constexpr const char* kModelId = "tiny";

  // Loads the model once per process (it is read-only).
  static const model::Model& model() {
    static std::unique_ptr<model::Model> m = [] {
      auto r = model::Model::load(std::string(FOLIO_REFDATA_DIR) + "/models/tiny-llama-f32.gguf");
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      return r.ok() ? std::move(r).value() : nullptr;
    }();
    return *m;
  }
  static const tokenizer::Tokenizer& tokenizer() {
    static tokenizer::Tokenizer t = tokenizer::Tokenizer::from_gguf(model().file()).value();
    return t;
  }
  static const chat::ChatTemplate& chat_template() {
    static chat::ChatTemplate t =
        chat::ChatTemplate::from_gguf(model().file(), tokenizer().vocab());
    return t;
  }

  static std::unique_ptr<cache::KvCache> make_cache(int64_t n_ctx, int n_seq, int32_t n_blocks) {
    cache::KvCacheOptions o;
    o.storage = cache::KvStorage::kPaged;
    o.type = DType::F32;
    o.block_size = 16;
    o.n_ctx = n_ctx;
    o.n_seq = n_seq;
    o.n_blocks = n_blocks;
    auto c = model().make_cache(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  explicit ServingStack(StackOptions o = {}) : options_(o) {
    const int32_t blocks =
        o.n_blocks > 0 ? o.n_blocks : static_cast<int32_t>(o.max_seqs * ((o.n_ctx + 15) / 16) + 1);
    cache_ = make_cache(o.n_ctx, 0, blocks);
    ctx_ = model::ForwardContext::cpu(2);
    SchedulerOptions so;
    so.max_seqs = o.max_seqs;
    so.max_batch_tokens = o.max_batch_tokens;
    so.ubatch = o.ubatch;
    scheduler_ = std::make_unique<Scheduler>(model(), tokenizer(), *ctx_, *cache_, so);
    Status s = scheduler_->start();
    EXPECT_TRUE(s.ok()) << s.to_string();
    service_ = std::make_unique<SchedulerService>(*scheduler_);
    ServerOptions hs;
    hs.host = "127.0.0.1";
    hs.port = 0;
    hs.api_key = o.api_key;
    http_ = std::make_unique<HttpServer>(hs);
    auto port = http_->start();
    EXPECT_TRUE(port.ok()) << port.status().to_string();
    port_ = port.ok() ? *port : 0;
    ServedModel m;
    m.id = kModelId;
    m.n_ctx = cache_->n_ctx();
    m.n_vocab = static_cast<int32_t>(model().config().n_vocab);
    m.tokenizer = &tokenizer();
    m.chat_template = o.chat_template != nullptr ? o.chat_template : &chat_template();
    m.reasoning_budget = o.reasoning_budget;
    m.service = service_.get();
    http_->set_model(m);
  }

  ~ServingStack() {
    http_->stop();
    scheduler_->stop();
  }

  int port() const { return port_; }
  Scheduler& scheduler() { return *scheduler_; }
  HttpServer& http() { return *http_; }
  cache::KvCache& cache() { return *cache_; }

  // Blocks referenced by live sequences once the scheduler is idle.
  int32_t used_blocks_when_idle() {
    scheduler_->wait_idle();
    return cache_->block_manager()->pool().n_used();
  }

  // The solo reference: a greedy (or seeded) Generator run of `prompt` on a
  // cache of its own with the same context.
  struct Solo {
    std::string text;
    std::string finish;
    int64_t n_generated = 0;
  };
  Solo solo(const std::vector<int32_t>& prompt, SamplingParams p, int64_t max_tokens) const {
    static std::unique_ptr<model::ForwardContext> ref_ctx = model::ForwardContext::cpu(1);
    auto cache = make_cache(options_.n_ctx, 1, 0);
    Generator gen(model(), tokenizer(), *ref_ctx, *cache);
    GenerateOptions go;
    go.n_predict = max_tokens;
    Solo out;
    auto r = gen.generate(prompt, p, go, [&](std::string_view s) {
      out.text += s;
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) {
      out.finish = finish_reason_name(r->stop);
      out.n_generated = r->n_generated;
    }
    return out;
  }

  static std::vector<int32_t> completion_tokens(const std::string& text) {
    return tokenizer().tokenize(text, {.add_special = true, .parse_special = true});
  }
  static std::vector<int32_t> chat_tokens(const Json& messages) {
    auto text = chat_template().apply_json(messages);
    EXPECT_TRUE(text.ok());
    auto ids = tokenizer().tokenize(*text, {.add_special = false, .parse_special = true});
    const auto& v = tokenizer().vocab();
    if (v.add_bos() && (ids.empty() || ids.front() != v.bos())) ids.insert(ids.begin(), v.bos());
    return ids;
  }

 private:
  StackOptions options_;
  std::unique_ptr<cache::KvCache> cache_;
  std::unique_ptr<model::ForwardContext> ctx_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<SchedulerService> service_;
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

inline SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

}  // namespace folio::server::testing
