// Speculative decoding on hybrid models (gated DeltaNet: qwen35, qwen3next;
// Mamba-2: granitehybrid, nemotron_h; short conv: lfm2): the recurrent state
// after the last accepted draft is restored from the draft snapshots the
// forward saved (cache::HybridKvCache::verify), so greedy output equals a
// solo Generator run without speculation token for token, in the Scheduler
// (a mixed batch with requests that opt out; 8 sequences together and each
// alone) and in the Generator (the contiguous hybrid cache); drafts (from a
// proposer that knows the output and errs on purpose, and from n-gram
// lookup) are both accepted and rejected; the state pool ends with the free
// counts it started with and the prefix checkpoints of a run that never
// speculated; a cache without free slots for the snapshots runs the steps
// without drafts. Draft models on hybrids: draft_model_spec_test.cc.
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "cache/hybrid_kv_cache.h"
#include "engine/scheduler.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_spec_hybrid_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;
using testing_sched::spec_oracle;

const std::string kRefModels = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/";

SpeculativeOptions spec_hybrid_ngram() {
  SpeculativeOptions s;
  s.type = SpecType::kNgram;
  s.ngram_min = 1;
  s.ngram_max = 3;
  s.draft_max = 4;
  s.draft_min = 1;
  s.max_batch = 8;
  s.min_accept = 0.0;  // keep speculating: the tests want many verifications
  return s;
}

class SchedulerSpecHybridTest : public SchedulerFixture,
                                public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override { load(GetParam()); }

  std::vector<std::vector<int32_t>> repeating_prompts() const {
    const std::vector<std::string> texts = {
        "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,",
        "the cat sat on the mat. the cat sat on the mat. the cat sat on",
        "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return",
        "Once upon a time",
        "A list of fruits: apple, banana, apple, banana, apple,",
        "{\"name\": \"x\", \"value\": 1}, {\"name\": \"y\", \"value\": 2}, {\"name\":",
        "x = 1\ny = 2\nx = 1\ny = 2\nx =",
        "She opened the letter and read: she opened the letter and",
    };
    std::vector<std::vector<int32_t>> out;
    for (const std::string& s : texts) out.push_back(tokenize(s));
    return out;
  }

  int32_t n_vocab() const { return static_cast<int32_t>(model_->config().n_vocab); }

  // The model's own contiguous hybrid cache for one sequence.
  std::unique_ptr<cache::KvCache> contiguous(int draft_slots) {
    cache::KvCacheOptions co;
    co.n_ctx = 256;
    co.draft_slots = draft_slots;
    auto c = model_->make_cache(co);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::unique_ptr<cache::HybridKvCache> paged(int draft_slots, int max_checkpoints = -1,
                                              int max_seqs = 4) {
    cache::KvCacheOptions o;
    o.storage = cache::KvStorage::kPaged;
    o.type = DType::F32;
    o.block_size = 8;
    o.n_ctx = 256;
    o.n_blocks = max_seqs * 32 + 1;
    o.n_seq = 0;
    o.max_seqs = max_seqs;
    o.max_checkpoints = max_checkpoints;
    o.draft_slots = draft_slots;
    auto c = cache::HybridKvCache::create(model_->config().cache_geometry(), o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Solo Generator runs without speculation on the contiguous cache.
  std::vector<SoloRun> solo_runs(const std::vector<std::vector<int32_t>>& ps,
                                 const SamplingParams& params) {
    std::vector<SoloRun> want;
    for (const auto& p : ps) {
      auto c = contiguous(0);
      if (c == nullptr) return {};
      want.push_back(solo_in(*c, p, params));
    }
    return want;
  }

  struct Run {
    std::vector<std::unique_ptr<Collected>> got;
    ServingMetrics::Snapshot metrics;
  };

  Run run_all(cache::HybridKvCache& cache, const SchedulerOptions& so,
              const std::vector<std::vector<int32_t>>& ps, const SamplingParams& params,
              const std::set<size_t>& opt_out = {}) {
    Run out;
    Scheduler sched(*model_, *tok_, *ctx_, cache, so);
    const Status st = sched.start();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return out;
    for (size_t i = 0; i < ps.size(); ++i) {
      out.got.push_back(std::make_unique<Collected>());
      GenerationRequest req;
      req.prompt = ps[i];
      req.params = params;
      req.speculative = opt_out.count(i) == 0;
      auto id = sched.submit(req, out.got.back()->callbacks());
      EXPECT_TRUE(id.ok()) << id.status().to_string();
    }
    sched.wait_idle();
    out.metrics = sched.metrics();
    return out;
  }

  void expect_solo(const Run& r, const std::vector<SoloRun>& want, const std::string& what) {
    ASSERT_EQ(r.got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      std::lock_guard<std::mutex> lock(r.got[i]->mu);
      EXPECT_EQ(r.got[i]->n_done, 1);
      EXPECT_TRUE(r.got[i]->result.status.ok()) << r.got[i]->result.status.to_string();
      expect_equal(*r.got[i], want[i], 0, what + ", prompt " + std::to_string(i));
    }
  }
};

// A mixed batch (two of five requests opt out), then for each proposer
// (the oracle: drafts accepted and rejected; n-gram lookup) 8 sequences
// together and each alone: the solo runs' tokens; the state pool ends with
// its free count, nothing leaked.
TEST_P(SchedulerSpecHybridTest, SchedulerGreedyEqualsUnspeculated) {
  const auto ps = repeating_prompts();
  ASSERT_EQ(ps.size(), 8u);
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  const std::vector<SoloRun> want = solo_runs(ps, params);
  ASSERT_EQ(want.size(), ps.size());

  SchedulerOptions so;
  so.max_seqs = 4;
  so.max_batch_tokens = 64;
  so.ubatch = 16;
  so.spec = spec_oracle(ps, want, n_vocab());
  auto cache = paged(4 * 4);
  ASSERT_NE(cache, nullptr);
  const int32_t free_before = cache->state_pool().n_free();
  const std::vector<std::vector<int32_t>> five(ps.begin(), ps.begin() + 5);
  const std::vector<SoloRun> want5(want.begin(), want.begin() + 5);
  const Run mixed = run_all(*cache, so, five, params, {1, 3});
  expect_solo(mixed, want5, GetParam() + ", mixed batch");
  EXPECT_GT(mixed.metrics.spec.draft_tokens, 0u) << GetParam();
  EXPECT_GT(mixed.metrics.spec.accepted_tokens, 0u) << GetParam();
  EXPECT_LT(mixed.metrics.spec.accepted_tokens, mixed.metrics.spec.draft_tokens) << GetParam();
  EXPECT_EQ(cache->state_pool().n_free(), free_before);
  EXPECT_EQ(cache->state_pool().n_held(), 0);
  EXPECT_EQ(cache->block_manager()->pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();

  for (const bool oracle : {true, false}) {
    so.spec = oracle ? spec_oracle(ps, want, n_vocab()) : spec_hybrid_ngram();
    for (const int max_seqs : {8, 1}) {
      const std::string what = GetParam() + (oracle ? ", oracle" : ", n-gram") +
                               (max_seqs == 1 ? ", one at a time" : ", 8 together");
      so.max_seqs = max_seqs;
      auto c = paged(4 * max_seqs, -1, max_seqs);
      ASSERT_NE(c, nullptr);
      const int32_t free_at_start = c->state_pool().n_free();
      const Run r = run_all(*c, so, ps, params);
      expect_solo(r, want, what);
      EXPECT_GT(r.metrics.spec.draft_tokens, 0u) << what;
      // The tiny DeltaNet models' output does not repeat these prompts:
      // n-gram drafts are all rejected there.
      if (oracle) {
        EXPECT_GT(r.metrics.spec.accepted_tokens, 0u) << what;
      }
      EXPECT_EQ(c->state_pool().n_free(), free_at_start) << what;
      EXPECT_EQ(c->state_pool().n_held(), 0) << what;
      EXPECT_EQ(c->block_manager()->pool().n_used(), 0) << what;
      EXPECT_TRUE(c->check_invariants().ok()) << what << ": " << c->check_invariants().to_string();
    }
  }
}

// The Generator (run, chat) on the contiguous hybrid cache: the same tokens
// with speculation as without; with no draft slots the steps run without
// drafts and the tokens are the same.
TEST_P(SchedulerSpecHybridTest, GeneratorGreedyEqualsUnspeculated) {
  const auto ps = repeating_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  const std::vector<SoloRun> want = solo_runs(ps, params);
  ASSERT_EQ(want.size(), ps.size());
  for (const int draft_slots : {4, 0}) {
    uint64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      auto c = contiguous(draft_slots);
      ASSERT_NE(c, nullptr);
      Generator gen(*model_, *tok_, *solo_ctx_, *c);
      GenerateOptions go;
      go.n_predict = -1;
      go.spec = spec_oracle(ps, want, n_vocab());
      std::string text;
      auto r = gen.generate(ps[i], params, go, [&](std::string_view s) {
        text += s;
        return true;
      });
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->tokens, want[i].tokens) << GetParam() << ", prompt " << i;
      EXPECT_EQ(text, want[i].text) << GetParam() << ", prompt " << i;
      drafted += r->spec.draft_tokens;
      accepted += r->spec.accepted_tokens;
      auto* h = dynamic_cast<cache::HybridKvCache*>(c.get());
      ASSERT_NE(h, nullptr);
      EXPECT_EQ(h->state_pool().n_held(), 1);  // the sequence's own slot only
      EXPECT_TRUE(h->check_invariants().ok()) << h->check_invariants().to_string();
    }
    if (draft_slots > 0) {
      EXPECT_GT(accepted, 0u) << GetParam();
      EXPECT_LT(accepted, drafted) << GetParam();
    } else {
      EXPECT_EQ(drafted, 0u) << GetParam();
    }
  }
}

// Prefix checkpoints cover verified tokens only: a speculating run saves the
// checkpoints a plain run saves, and a second turn (each prompt extended by
// its first answer) resumes from them to the solo runs' tokens.
TEST_P(SchedulerSpecHybridTest, PrefixCheckpointsEqualUnspeculatedRun) {
  auto ps = repeating_prompts();
  ps.resize(5);  // the pools hold every checkpoint of five sequences: none is evicted
  SamplingParams params = greedy_;
  params.max_tokens = 20;
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 64;
  so.ubatch = 16;
  auto plain_cache = paged(3 * 4);  // the same slots: nothing is evicted in either run
  ASSERT_NE(plain_cache, nullptr);
  const Run plain = run_all(*plain_cache, so, ps, params);
  so.spec = spec_oracle(ps, solo_runs(ps, params), n_vocab());
  auto spec_cache = paged(3 * 4);
  ASSERT_NE(spec_cache, nullptr);
  const Run spec = run_all(*spec_cache, so, ps, params);
  EXPECT_GT(spec.metrics.spec.accepted_tokens, 0u) << GetParam();
  std::vector<std::vector<int32_t>> second;
  for (size_t i = 0; i < ps.size(); ++i) {
    std::lock_guard<std::mutex> a(plain.got[i]->mu), b(spec.got[i]->mu);
    EXPECT_EQ(spec.got[i]->tokens, plain.got[i]->tokens) << i;
    std::vector<int32_t> p = ps[i];
    p.insert(p.end(), plain.got[i]->tokens[0].begin(), plain.got[i]->tokens[0].end());
    const std::vector<int32_t> more = tokenize(" and again:");
    p.insert(p.end(), more.begin() + 1, more.end());  // without the BOS
    second.push_back(std::move(p));
  }
  const cache::HybridCacheStats ps_stats = plain_cache->stats();
  const cache::HybridCacheStats ss_stats = spec_cache->stats();
  EXPECT_EQ(ss_stats.checkpoints_saved, ps_stats.checkpoints_saved);
  EXPECT_EQ(ss_stats.checkpoints_cached, ps_stats.checkpoints_cached);
  EXPECT_EQ(spec_cache->block_manager()->pool().n_used(), 0);
  EXPECT_EQ(spec_cache->state_pool().n_held(), 0);

  const std::vector<SoloRun> want = solo_runs(second, params);
  ASSERT_EQ(want.size(), second.size());
  const Run turn2 = run_all(*spec_cache, so, second, params);
  expect_solo(turn2, want, GetParam() + ", second turn");
  EXPECT_GT(turn2.metrics.prefix_hit_tokens, 0u) << GetParam();
  EXPECT_EQ(spec_cache->state_pool().n_held(), 0);
  EXPECT_TRUE(spec_cache->check_invariants().ok()) << spec_cache->check_invariants().to_string();
}

INSTANTIATE_TEST_SUITE_P(Hybrids, SchedulerSpecHybridTest,
                         ::testing::Values("tiny-qwen35-f32.gguf", "tiny-qwen3next-f32.gguf",
                                           kRefModels + "tiny-granitehybrid-f32.gguf",
                                           kRefModels + "tiny-nemotron-h-f32.gguf",
                                           kRefModels + "tiny-lfm2-f32.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string f = info.param.substr(info.param.rfind('/') + 1);
                           std::string name;
                           for (const char ch : f.substr(0, f.find("-f32"))) {
                             if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
                           }
                           return name;
                         });

}  // namespace scheduler_spec_hybrid_test
}  // namespace folio
