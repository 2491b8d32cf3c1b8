// Shared by the Scheduler tests: a tiny reference model, paged caches, solo
// Generator runs to compare with, and a thread-safe collector of one
// request's callbacks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/paged_kv_cache.h"
#include "engine/generator.h"
#include "engine/scheduler.h"

namespace folio::testing_sched {

inline const std::string kModels = std::string(FOLIO_REFDATA_DIR) + "/models/";

// Everything one request's callbacks delivered. Written on the step thread,
// read by the test (under mu).
struct Collected {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<int32_t>> tokens;  // [choice]
  std::vector<std::string> text;             // [choice] streamed text + tail
  int n_done = 0;
  RequestResult result;
  int64_t first_event = -1;  // global order of this request's first token event
  int64_t n_events = 0;

  explicit Collected(int n = 1) : tokens(static_cast<size_t>(n)), text(static_cast<size_t>(n)) {}

  RequestCallbacks callbacks(std::atomic<int64_t>* order = nullptr) {
    RequestCallbacks cb;
    cb.on_token = [this, order](const TokenEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_event < 0 && order != nullptr) first_event = (*order)++;
      tokens.at(static_cast<size_t>(ev.choice)).push_back(ev.token.token);
      text.at(static_cast<size_t>(ev.choice)) += ev.text;
      ++n_events;
      cv.notify_all();
    };
    cb.on_done = [this](const RequestResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      ++n_done;
      result = r;
      for (size_t i = 0; i < r.choices.size() && i < text.size(); ++i) text[i] += r.choices[i].tail;
      cv.notify_all();
    };
    return cb;
  }
  // Waits until a choice has `n` tokens or the request is done.
  void wait_tokens(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20),
                [&] { return n_done > 0 || tokens[0].size() >= n; });
  }
};

// Submits every prompt with `params` to a started scheduler, appending one
// Collected per request to `got`. Request `cancelled` cancels itself from
// its own token callback once 6 tokens are kept (with speculation: inside a
// verification). Fails the test when a submit is refused.
inline void submit_one_cancelling(Scheduler& sched, const std::vector<std::vector<int32_t>>& ps,
                                  const SamplingParams& params, size_t cancelled,
                                  std::vector<std::unique_ptr<Collected>>& got) {
  auto cancel_id = std::make_shared<std::atomic<uint64_t>>(0);
  for (size_t i = 0; i < ps.size(); ++i) {
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[i];
    req.params = params;
    RequestCallbacks cb = got.back()->callbacks();
    if (i == cancelled) {
      auto inner = cb.on_token;
      Scheduler* s = &sched;
      auto sent = std::make_shared<bool>(false);
      cb.on_token = [inner, s, cancel_id, sent](const TokenEvent& ev) {
        inner(ev);
        if (ev.kept_tokens >= 6 && !*sent) {
          *sent = true;
          s->cancel(cancel_id->load());
        }
      };
    }
    auto id = sched.submit(req, std::move(cb));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    if (i == cancelled) *cancel_id = *id;
  }
}

struct SoloRun {
  std::vector<int32_t> tokens;
  std::string text;
  StopReason stop = StopReason::kLength;
};

// Knows each prompt's greedy continuation (the solo runs) and proposes it,
// with every third draft token wrong: drafts are accepted and rejected on
// any model, where n-gram lookup may find nothing to propose (the tiny
// DeltaNet models' output does not repeat).
class OracleProposer final : public StatelessProposer {
 public:
  OracleProposer(std::vector<std::vector<int32_t>> prompts,
                 std::vector<std::vector<int32_t>> outputs, int32_t n_vocab)
      : prompts_(std::move(prompts)), outputs_(std::move(outputs)), n_vocab_(n_vocab) {}

  void propose_one(std::span<const int32_t> tokens, int max_draft,
                   std::vector<int32_t>& out) const override {
    out.clear();
    for (size_t i = 0; i < prompts_.size(); ++i) {
      const std::vector<int32_t>& p = prompts_[i];
      const std::vector<int32_t>& o = outputs_[i];
      if (tokens.size() < p.size() || tokens.size() - p.size() > o.size()) continue;
      const size_t g = tokens.size() - p.size();
      if (!std::equal(p.begin(), p.end(), tokens.begin()) ||
          !std::equal(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(g),
                      tokens.begin() + static_cast<std::ptrdiff_t>(p.size()))) {
        continue;
      }
      for (size_t k = g; k < o.size() && static_cast<int>(out.size()) < max_draft; ++k) {
        out.push_back(k % 3 == 2 ? (o[k] + 1) % n_vocab_ : o[k]);
      }
      return;
    }
  }

 private:
  std::vector<std::vector<int32_t>> prompts_;
  std::vector<std::vector<int32_t>> outputs_;
  int32_t n_vocab_ = 0;
};

inline SpeculativeOptions spec_oracle(const std::vector<std::vector<int32_t>>& prompts,
                                      const std::vector<SoloRun>& runs, int32_t n_vocab) {
  SpeculativeOptions s;
  s.type = SpecType::kNgram;  // replaced by `make`
  s.draft_max = 4;
  s.draft_min = 1;
  s.max_batch = 8;
  s.min_accept = 0.0;
  std::vector<std::vector<int32_t>> outputs;
  for (const SoloRun& r : runs) outputs.push_back(r.tokens);
  s.make = [prompts, outputs, n_vocab] {
    return std::make_unique<OracleProposer>(prompts, outputs, n_vocab);
  };
  return s;
}

class SchedulerFixture : public ::testing::Test {
 protected:
  // `file` in tests/data's models, or a path.
  void load(const std::string& file) {
    auto m = model::Model::load(file.find('/') == std::string::npos ? kModels + file : file);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    auto t = tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
    ctx_ = model::ForwardContext::cpu(2);
    solo_ctx_ = model::ForwardContext::cpu(1);
    greedy_.temperature = 0.0f;
  }
  void SetUp() override { load("tiny-llama-f32.gguf"); }

  std::vector<int32_t> tokenize(const std::string& s) const {
    tokenizer::TokenizeOptions to;
    to.add_special = true;
    return tok_->tokenize(s, to);
  }

  // Ten prompts, four sharing a long prefix.
  std::vector<std::vector<int32_t>> prompts() const {
    const std::string shared =
        "The old lighthouse keeper climbed the spiral stairs every evening, counting the steps "
        "as his father had taught him, and lit the lamp before the fishing boats came home. ";
    const std::vector<std::string> texts = {
        shared + "What did he see?",        "Once upon a time",
        shared + "Why did he count?",       "The capital of France is",
        shared + "Who taught him?",         "Rain fell on the quiet town while the baker",
        shared + "When did boats return?",  "1, 2, 3, 4,",
        "A list of fruits: apple, banana,", "She opened the letter and",
    };
    std::vector<std::vector<int32_t>> out;
    for (const std::string& s : texts) out.push_back(tokenize(s));
    return out;
  }

  std::unique_ptr<cache::PagedKvCache> make_cache(int32_t n_blocks, int n_seq = 0,
                                                  int64_t n_ctx = 256) {
    cache::KvCacheOptions o;
    o.type = DType::F32;
    o.block_size = 8;
    o.n_ctx = n_ctx;
    o.n_blocks = n_blocks;
    o.n_seq = n_seq;
    o.max_seqs = 8;           // sliding-window layers' pages: windows of this many sequences
    o.max_step_tokens = 128;  // and steps this long
    auto c = cache::PagedKvCache::create(model_->config().cache_geometry(), o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // A solo Generator run of `prompt` (its own cache and context).
  SoloRun solo(const std::vector<int32_t>& prompt, const SamplingParams& params,
               int64_t n_ctx = 256) {
    auto cache = make_cache(0, 1, n_ctx);
    if (cache == nullptr) return {};
    return solo_in(*cache, prompt, params);
  }

  // A solo Generator run of `prompt` in `cache` (which holds nothing else).
  SoloRun solo_in(cache::KvCache& cache, const std::vector<int32_t>& prompt,
                  const SamplingParams& params) {
    SoloRun out;
    Generator gen(*model_, *tok_, *solo_ctx_, cache);
    GenerateOptions go;
    go.n_predict = -1;  // params.max_tokens decides
    auto r = gen.generate(prompt, params, go, [&](std::string_view s) {
      out.text += s;
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return out;
    out.tokens = r->tokens;
    out.stop = r->stop;
    return out;
  }

  void expect_equal(const Collected& c, const SoloRun& s, int choice, const std::string& what) {
    const auto i = static_cast<size_t>(choice);
    EXPECT_EQ(c.tokens[i], s.tokens) << what;
    EXPECT_EQ(c.text[i], s.text) << what;
    ASSERT_GT(c.result.choices.size(), i) << what;
    EXPECT_EQ(c.result.choices[i].stop, s.stop) << what;
    EXPECT_EQ(c.result.choices[i].n_generated, static_cast<int64_t>(s.tokens.size())) << what;
  }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<model::ForwardContext> ctx_;
  std::unique_ptr<model::ForwardContext> solo_ctx_;
  SamplingParams greedy_;
};

}  // namespace folio::testing_sched
