// Speculative decoding with the target's own MTP head (MtpProposer,
// --spec mtp) on tiny random-weight files carrying one MTP block: a qwen35
// hybrid (gated DeltaNet + attention; its block full attention with its own
// LM head), the same as qwen35moe (routed experts + shared expert) and a
// glm4moe MoE (its block routed, the model's LM head).
// Greedy output equals a Generator run without speculation (and without
// the hidden-state sink) token for token: in the Scheduler, 8 sequences
// together and one at a time, and in the Generator with a paged and with a
// contiguous target cache and head cache; seeded sampled requests draw the
// tokens of runs without speculation. Every proposal is the head's own
// guess for the verified text, recomputed from scratch. Target and head
// caches end with no block, sequence or state slot held, and the
// hidden-state sink with no row, also after a request cancelled inside a
// verification and sequences preempted with drafts pending. A model without
// MTP blocks, or loaded without them, is refused with the reason named.
#include <gtest/gtest.h>

#include <algorithm>

#include "cache/hybrid_kv_cache.h"
#include "cache/paged_kv_cache.h"
#include "engine/mtp_proposer.h"
#include "engine/scheduler.h"
#include "model/hidden_states.h"
#include "model/mtp_head.h"
#include "scheduler_fixture.h"
#include "spec_cache_util.h"

namespace folio {
namespace mtp_spec_test {

using spec_testing::expect_empty;
using spec_testing::spec_test_cache;

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

const std::string kRefModels = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/";

// The head, its cache and context, and the target's hidden states.
struct Mtp {
  std::unique_ptr<model::MtpHead> head;
  std::unique_ptr<cache::KvCache> cache;
  std::unique_ptr<model::ForwardContext> ctx;
  std::unique_ptr<model::HiddenStates> hidden;
};

class MtpSpecTest : public SchedulerFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    load(kRefModels + GetParam());
    model::LoadOptions lo;
    lo.load_mtp = true;
    auto m = model::Model::load(kRefModels + GetParam(), lo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = std::move(m).value();
    ASSERT_TRUE(model_->has_mtp());
  }

  Mtp make_mtp(cache::KvStorage storage, int max_seqs) {
    Mtp m;
    auto h = model::MtpHead::create(*model_);
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    if (!h.ok()) return m;
    m.head = std::move(h).value();
    cache::KvCacheOptions o;
    o.storage = storage;
    o.type = DType::F32;
    o.block_size = 8;
    o.n_ctx = 256;
    // Paged: the proposer adds its sequences; contiguous: it claims slots.
    o.n_seq = storage == cache::KvStorage::kPaged ? 0 : max_seqs;
    o.n_blocks = max_seqs * 33 + 1;
    o.max_seqs = max_seqs;
    o.prefix_caching = false;
    auto c = m.head->make_cache(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    if (c.ok()) m.cache = std::move(c).value();
    m.ctx = model::ForwardContext::cpu(1);
    m.hidden = std::make_unique<model::HiddenStates>(model_->config().n_embd);
    return m;
  }

  static SpeculativeOptions spec(const Mtp& m) {
    SpeculativeOptions s;
    s.type = SpecType::kMtp;
    s.draft_max = 3;
    s.draft_min = 1;
    s.max_batch = 8;
    s.min_accept = 0.0;  // keep speculating: the tests want many verifications
    s.mtp.head = m.head.get();
    s.mtp.cache = m.cache.get();
    s.mtp.ctx = m.ctx.get();
    s.mtp.hidden = m.hidden.get();
    s.mtp.max_batch_tokens = 32;  // prompts catch up in several forwards
    return s;
  }

  std::vector<std::vector<int32_t>> eight_prompts() const {
    auto all = prompts();
    all.resize(8);
    return all;
  }

  // Solo runs without speculation and without a hidden-state sink.
  std::vector<SoloRun> solo_runs(const std::vector<std::vector<int32_t>>& ps,
                                 const SamplingParams& params) {
    std::vector<SoloRun> want;
    for (const auto& p : ps) {
      auto c = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 0, 1);
      if (c == nullptr) return {};
      want.push_back(solo_in(*c, p, params));
    }
    return want;
  }
};

TEST_P(MtpSpecTest, SchedulerGreedyEqualsUnspeculated) {
  const auto ps = eight_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  const std::vector<SoloRun> want = solo_runs(ps, params);
  ASSERT_EQ(want.size(), ps.size());
  for (const int max_seqs : {8, 1}) {
    const std::string what = GetParam() + (max_seqs == 1 ? ", one at a time" : ", 8 together");
    auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, max_seqs, max_seqs * 33 + 1,
                                 3 * max_seqs, 0);
    Mtp m = make_mtp(cache::KvStorage::kPaged, max_seqs);
    ASSERT_NE(cache, nullptr);
    ASSERT_NE(m.cache, nullptr);
    SchedulerOptions so;
    so.max_seqs = max_seqs;
    so.max_batch_tokens = 64;
    so.ubatch = 16;
    so.spec = spec(m);
    ctx_->set_hidden_sink(m.hidden.get());
    ServingMetrics::Snapshot metrics;
    std::vector<std::unique_ptr<Collected>> got;
    {
      Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
      ASSERT_TRUE(sched.start().ok());
      for (const auto& p : ps) {
        got.push_back(std::make_unique<Collected>());
        GenerationRequest req;
        req.prompt = p;
        req.params = params;
        ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
      }
      sched.wait_idle();
      metrics = sched.metrics();
    }
    ctx_->set_hidden_sink(nullptr);
    for (size_t i = 0; i < ps.size(); ++i) {
      std::lock_guard<std::mutex> lock(got[i]->mu);
      EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
      expect_equal(*got[i], want[i], 0, what + ", prompt " + std::to_string(i));
    }
    EXPECT_GT(metrics.spec.draft_tokens, 0u) << what;
    expect_empty(*cache, what + ": target cache");
    expect_empty(*m.cache, what + ": head cache");
    EXPECT_EQ(m.hidden->n_rows(), 0) << what << ": hidden states left";
  }
}

TEST_P(MtpSpecTest, GeneratorGreedyEqualsUnspeculatedPagedAndContiguous) {
  const auto ps = eight_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  const std::vector<SoloRun> want = solo_runs(ps, params);
  ASSERT_EQ(want.size(), ps.size());
  for (const cache::KvStorage storage : {cache::KvStorage::kPaged, cache::KvStorage::kContiguous}) {
    const std::string what =
        GetParam() + (storage == cache::KvStorage::kPaged ? ", paged" : ", contiguous");
    Mtp m = make_mtp(storage, 1);
    ASSERT_NE(m.cache, nullptr);
    SpeculationCounts total;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto cache = spec_test_cache(*model_, storage, 1, 33, 3, 1);
      ASSERT_NE(cache, nullptr);
      solo_ctx_->set_hidden_sink(m.hidden.get());
      Generator gen(*model_, *tok_, *solo_ctx_, *cache);
      GenerateOptions go;
      go.n_predict = -1;
      go.spec = spec(m);
      std::string text;
      auto r = gen.generate(ps[i], params, go, [&](std::string_view s) {
        text += s;
        return true;
      });
      solo_ctx_->set_hidden_sink(nullptr);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->tokens, want[i].tokens) << what << ", prompt " << i;
      EXPECT_EQ(text, want[i].text) << what << ", prompt " << i;
      total.draft_tokens += r->spec.draft_tokens;
      total.accepted_tokens += r->spec.accepted_tokens;
      expect_empty(*m.cache, what + ": head cache after a generate");
      m.hidden->forget(0);
    }
    EXPECT_GT(total.draft_tokens, 0u) << what;
  }
}

// Seeded sampled requests (temperature, top-k, a repetition penalty) draw
// the tokens of runs without speculation: a head's draft is kept only where
// the target's own seeded draw equals it.
TEST_P(MtpSpecTest, SeededSamplingEqualsUnspeculated) {
  const auto ps = eight_prompts();
  SamplingParams params;
  params.temperature = 0.7f;
  params.top_k = 20;
  params.repetition_penalty = 1.1f;
  params.max_tokens = 12;
  std::vector<SoloRun> want;
  for (size_t i = 0; i < ps.size(); ++i) {
    SamplingParams p = params;
    p.seed = 1000 + i;
    auto c = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 0, 1);
    ASSERT_NE(c, nullptr);
    want.push_back(solo_in(*c, ps[i], p));
  }
  auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 8, 8 * 33 + 1, 3 * 8, 0);
  Mtp m = make_mtp(cache::KvStorage::kPaged, 8);
  ASSERT_NE(cache, nullptr);
  ASSERT_NE(m.cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 8;
  so.spec = spec(m);
  ctx_->set_hidden_sink(m.hidden.get());
  ServingMetrics::Snapshot metrics;
  std::vector<std::unique_ptr<Collected>> got;
  {
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    ASSERT_TRUE(sched.start().ok());
    for (size_t i = 0; i < ps.size(); ++i) {
      got.push_back(std::make_unique<Collected>());
      GenerationRequest req;
      req.prompt = ps[i];
      req.params = params;
      req.params.seed = 1000 + i;
      ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
    }
    sched.wait_idle();
    metrics = sched.metrics();
  }
  ctx_->set_hidden_sink(nullptr);
  for (size_t i = 0; i < ps.size(); ++i) {
    std::lock_guard<std::mutex> lock(got[i]->mu);
    expect_equal(*got[i], want[i], 0, GetParam() + ", sampled prompt " + std::to_string(i));
  }
  EXPECT_GT(metrics.spec.draft_tokens, 0u) << GetParam();
  expect_empty(*cache, GetParam() + ": target cache");
  expect_empty(*m.cache, GetParam() + ": head cache");
  EXPECT_EQ(m.hidden->n_rows(), 0) << GetParam() << ": hidden states left";
}

// A request cancelled from its own token callback (inside a verification)
// and sequences preempted by a short target pool while their drafts are
// pending: the other requests still equal solo runs; the target and head
// caches end empty and the hidden-state sink holds no row.
TEST_P(MtpSpecTest, CancelAndPreemptLeakNothing) {
  const auto ps = prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  const std::vector<SoloRun> want = solo_runs(ps, params);
  ASSERT_EQ(want.size(), ps.size());
  // 19 blocks of 8 for 6 sequences of up to ~70 positions: preempts.
  auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 6, 20, 6 * 3);
  Mtp m = make_mtp(cache::KvStorage::kPaged, 6);
  ASSERT_NE(cache, nullptr);
  ASSERT_NE(m.cache, nullptr);
  SchedulerOptions so;
  so.max_seqs = 6;
  so.max_batch_tokens = 64;
  so.ubatch = 16;
  so.spec = spec(m);
  ctx_->set_hidden_sink(m.hidden.get());
  std::vector<std::unique_ptr<Collected>> got;
  ServingMetrics::Snapshot metrics;
  constexpr size_t kCancelled = 3;
  {
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    ASSERT_TRUE(sched.start().ok());
    submit_one_cancelling(sched, ps, params, kCancelled, got);
    if (HasFatalFailure()) return;
    sched.wait_idle();
    metrics = sched.metrics();
    for (size_t i = 0; i < ps.size(); ++i) {
      std::lock_guard<std::mutex> lock(got[i]->mu);
      EXPECT_EQ(got[i]->n_done, 1) << i;
      if (i == kCancelled) {
        EXPECT_LT(got[i]->tokens[0].size(), want[i].tokens.size());
        continue;
      }
      EXPECT_TRUE(got[i]->result.status.ok()) << got[i]->result.status.to_string();
      expect_equal(*got[i], want[i], 0, GetParam() + ", prompt " + std::to_string(i));
    }
    expect_empty(*cache, GetParam() + ": target cache, scheduler idle");
    expect_empty(*m.cache, GetParam() + ": head cache, scheduler idle");
  }
  ctx_->set_hidden_sink(nullptr);
  EXPECT_EQ(m.hidden->n_rows(), 0) << GetParam() << ": hidden states left";
  EXPECT_GT(metrics.preemptions, 0u) << GetParam();
  EXPECT_GT(metrics.spec.draft_tokens, 0u) << GetParam();
}

// --draft-p-min: a proposal stops before a token the head gives a lower
// probability (1: no head guess of a 512-token vocabulary is that sure).
TEST_P(MtpSpecTest, DraftPMinStopsProposals) {
  const auto ps = eight_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 8;
  Mtp m = make_mtp(cache::KvStorage::kPaged, 1);
  ASSERT_NE(m.cache, nullptr);
  for (const float p_min : {0.0f, 1.0f}) {
    auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 3, 1);
    ASSERT_NE(cache, nullptr);
    solo_ctx_->set_hidden_sink(m.hidden.get());
    Generator gen(*model_, *tok_, *solo_ctx_, *cache);
    GenerateOptions go;
    go.n_predict = -1;
    go.spec = spec(m);
    go.spec.draft_p_min = p_min;
    auto r = gen.generate(ps[3], params, go, [](std::string_view) { return true; });
    solo_ctx_->set_hidden_sink(nullptr);
    m.hidden->forget(0);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    if (p_min > 0.0f) {
      EXPECT_EQ(r->spec.draft_tokens, 0u);
    } else {
      EXPECT_GT(r->spec.draft_tokens, 0u);
    }
  }
}

// Records each proposal of the proposer it wraps.
class RecordingProposer final : public DraftProposer {
 public:
  struct Proposal {
    std::vector<int32_t> tokens, draft;
  };
  RecordingProposer(std::unique_ptr<DraftProposer> inner, std::vector<Proposal>* log)
      : inner_(std::move(inner)), log_(log) {}
  Status begin(uint64_t id) override { return inner_->begin(id); }
  Status propose(std::span<const DraftRequest> requests,
                 std::span<std::vector<int32_t>> out) override {
    const Status st = inner_->propose(requests, out);
    for (size_t i = 0; i < requests.size(); ++i) {
      log_->push_back(
          {std::vector<int32_t>(requests[i].tokens.begin(), requests[i].tokens.end()), out[i]});
    }
    return st;
  }
  void accept(uint64_t id, int n) override { inner_->accept(id, n); }
  void release(uint64_t id) override { inner_->release(id); }

 private:
  std::unique_ptr<DraftProposer> inner_;
  std::vector<Proposal>* log_;
};

// The drafts are the head's own guesses for the verified text: recomputed
// from scratch for every proposal of a run (the target over the tokens
// before the new one, its hidden states recorded; the head over all of
// them with those states shifted by one, then chained on its own state),
// they are the same tokens. This checks which state pairs with which
// token, the positions, the chaining and the catch-up across steps with
// rejected drafts.
TEST_P(MtpSpecTest, DraftsAreTheHeadsOwnGuesses) {
  const auto ps = eight_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  Mtp m = make_mtp(cache::KvStorage::kPaged, 1);
  ASSERT_NE(m.cache, nullptr);
  std::vector<RecordingProposer::Proposal> log;
  for (const size_t i : {size_t{1}, size_t{5}}) {
    auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 3, 1);
    ASSERT_NE(cache, nullptr);
    solo_ctx_->set_hidden_sink(m.hidden.get());
    Generator gen(*model_, *tok_, *solo_ctx_, *cache);
    GenerateOptions go;
    go.n_predict = -1;
    go.spec = spec(m);
    const SpeculativeOptions inner = go.spec;
    go.spec.make = [&log, inner]() -> std::unique_ptr<DraftProposer> {
      SpeculativeOptions o = inner;
      o.make = nullptr;
      auto p = make_proposer(o);
      return std::make_unique<RecordingProposer>(std::move(p).value(), &log);
    };
    auto r = gen.generate(ps[i], params, go, [](std::string_view) { return true; });
    solo_ctx_->set_hidden_sink(nullptr);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    m.hidden->forget(0);
  }
  ASSERT_GT(log.size(), 4u);
  const int64_t e = model_->config().n_embd, v = model_->config().n_vocab;
  int checked = 0;
  for (const RecordingProposer::Proposal& p : log) {
    if (p.draft.empty()) continue;
    const auto len = static_cast<int64_t>(p.tokens.size());
    // The target's states at positions 0 .. len - 2.
    model::HiddenStates states(e);
    auto target_cache = spec_test_cache(*model_, cache::KvStorage::kContiguous, 1, 0, 0, 1);
    ASSERT_NE(target_cache, nullptr);
    auto ctx = model::ForwardContext::cpu(1);
    ctx->set_hidden_sink(&states);
    cache::Batch b;
    for (int64_t q = 0; q + 1 < len; ++q)
      b.add(p.tokens[static_cast<size_t>(q)], static_cast<int32_t>(q), 0, q + 2 == len);
    ASSERT_TRUE(model_->forward(b, *target_cache, *ctx).ok());
    // The head over every position, then chained.
    Mtp ref = make_mtp(cache::KvStorage::kContiguous, 1);
    ASSERT_NE(ref.cache, nullptr);
    std::vector<float> rows(static_cast<size_t>(len * e), 0.0f);
    for (int64_t q = 1; q < len; ++q) {
      const float* h = states.row(0, q - 1);
      ASSERT_NE(h, nullptr);
      std::copy(h, h + e, rows.begin() + q * e);
    }
    b.clear();
    for (int64_t q = 0; q < len; ++q)
      b.add(p.tokens[static_cast<size_t>(q)], static_cast<int32_t>(q), 0, q + 1 == len);
    std::vector<int32_t> want;
    for (size_t d = 0; d < p.draft.size(); ++d) {
      auto out = ref.head->forward(b, rows, *ref.cache, *ref.ctx);
      ASSERT_TRUE(out.ok()) << out.status().to_string();
      const float* l = out->logits.row<const float>(0);
      want.push_back(static_cast<int32_t>(std::max_element(l, l + v) - l));
      const float* g = out->hidden.row<const float>(0);
      rows.assign(g, g + e);
      b.clear();
      b.add(want.back(), static_cast<int32_t>(len + static_cast<int64_t>(d)), 0, true);
    }
    EXPECT_EQ(p.draft, want) << GetParam() << ": proposal after " << len << " tokens";
    ++checked;
  }
  EXPECT_GT(checked, 4);
}

INSTANTIATE_TEST_SUITE_P(Models, MtpSpecTest,
                         ::testing::Values("tiny-qwen35-mtp-f32.gguf",
                                           "tiny-qwen35moe-mtp-f32.gguf", "tiny-glm4moe-f32.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.substr(5);  // past "tiny-"
                           return n.substr(0, n.find('-'));
                         });

// --spec mtp where there is no head: errors that say why.
TEST(MtpSpecErrors, NoHeadIsRefused) {
  auto plain = model::Model::load(testing_sched::kModels + "tiny-qwen35-f32.gguf");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  auto h = model::MtpHead::create(**plain);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(h.status().message().find("no MTP blocks"), std::string::npos)
      << h.status().to_string();

  auto unloaded = model::Model::load(kRefModels + "tiny-qwen35-mtp-f32.gguf");
  ASSERT_TRUE(unloaded.ok()) << unloaded.status().to_string();
  EXPECT_FALSE((*unloaded)->has_mtp());
  EXPECT_TRUE((*unloaded)->weights().mtp.empty());
  h = model::MtpHead::create(**unloaded);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("load_mtp"), std::string::npos) << h.status().to_string();

  SpeculativeOptions s;
  s.type = SpecType::kMtp;
  auto p = make_proposer(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_spec_type("mtp").value(), SpecType::kMtp);
}

}  // namespace mtp_spec_test
}  // namespace folio
