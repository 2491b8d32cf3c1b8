// Speculative decoding (n-gram proposals) in the Scheduler, on the tiny
// reference models: greedy output equals a solo Generator run without
// speculation token for token (dense llama and qwen3, MoE qwen3moe, Gemma 3's
// sliding-window pages), 8 sequences speculating together, requests that
// speculate and requests that opt out in one batch, each alone, and with a
// pool small enough to drop drafts and preempt; a seeded sampled request
// (penalties, top-k) and a stop string give the solo run's tokens too;
// prompts that repeat themselves get drafts accepted; rollback leaks
// nothing: the pool ends idle and the prefix cache's hashes (and published
// KV events) equal those of a run that never speculated. Hybrid models:
// scheduler_spec_hybrid_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "cache/hybrid_kv_cache.h"
#include "engine/scheduler.h"
#include "grammar/gbnf_parser.h"
#include "scheduler_fixture.h"

namespace folio {
namespace scheduler_spec_test {

using testing_sched::Collected;
using testing_sched::SchedulerFixture;
using testing_sched::SoloRun;

const std::string kRefModels = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/";

SpeculativeOptions ngram(int draft_max = 4) {
  SpeculativeOptions s;
  s.type = SpecType::kNgram;
  s.ngram_min = 1;
  s.ngram_max = 3;
  s.draft_max = draft_max;
  s.draft_min = 1;
  s.max_batch = 8;
  s.min_accept = 0.0;  // keep speculating: the tests want many verifications
  return s;
}

using HashSet = std::set<std::pair<uint64_t, uint64_t>>;

class SchedulerSpecTest : public SchedulerFixture {
 protected:
  // Prompts whose continuations repeat what they hold.
  std::vector<std::vector<int32_t>> repeating_prompts() const {
    const std::vector<std::string> texts = {
        "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,",
        "the cat sat on the mat. the cat sat on the mat. the cat sat on",
        "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return",
        "{\"name\": \"x\", \"value\": 1}, {\"name\": \"y\", \"value\": 2}, {\"name\":",
        "Once upon a time",
        "A list of fruits: apple, banana, apple, banana, apple,",
    };
    std::vector<std::vector<int32_t>> out;
    for (const std::string& s : texts) out.push_back(tokenize(s));
    return out;
  }

  // Eight prompts whose continuations repeat what they hold.
  std::vector<std::vector<int32_t>> eight_prompts() const {
    auto out = repeating_prompts();
    out.push_back(tokenize("x = 1\ny = 2\nx = 1\ny = 2\nx ="));
    out.push_back(tokenize("She opened the letter and read: she opened the letter and"));
    return out;
  }

  struct Outcome {
    std::vector<std::unique_ptr<Collected>> got;
    ServingMetrics::Snapshot metrics;
    HashSet events;  // hashes published as stored
  };

  // Submits every prompt at once with `params`; requests whose index is in
  // `opt_out` do not speculate.
  Outcome run_all(cache::PagedKvCache& cache, SchedulerOptions so,
                  const std::vector<std::vector<int32_t>>& ps, const SamplingParams& params,
                  const std::set<size_t>& opt_out = {}) {
    Outcome out;
    auto events = std::make_shared<HashSet>();
    so.on_kv_events = [events](std::vector<cache::KvEvent> evs) {
      for (const cache::KvEvent& e : evs) {
        if (e.kind != cache::KvEvent::Kind::kStored) continue;
        for (const cache::BlockHash& h : e.hashes) events->emplace(h.lo, h.hi);
      }
    };
    {
      // Every request is queued before the scheduler thread starts, so the
      // schedule (and its step count) does not depend on thread timing.
      Scheduler sched(*model_, *tok_, *ctx_, cache, so);
      for (size_t i = 0; i < ps.size(); ++i) {
        out.got.push_back(std::make_unique<Collected>());
        GenerationRequest req;
        req.prompt = ps[i];
        req.params = params;
        req.speculative = opt_out.count(i) == 0;
        auto id = sched.submit(req, out.got.back()->callbacks());
        EXPECT_TRUE(id.ok()) << id.status().to_string();
      }
      const Status st = sched.start();
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (!st.ok()) return out;
      sched.wait_idle();
      out.metrics = sched.metrics();
    }  // stopped: every event delivered
    out.events = *events;
    return out;
  }

  void expect_solo(const Outcome& o, const std::vector<SoloRun>& want, const std::string& what) {
    ASSERT_EQ(o.got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      std::lock_guard<std::mutex> lock(o.got[i]->mu);
      EXPECT_EQ(o.got[i]->n_done, 1);
      EXPECT_TRUE(o.got[i]->result.status.ok()) << o.got[i]->result.status.to_string();
      expect_equal(*o.got[i], want[i], 0, what + ", prompt " + std::to_string(i));
    }
  }

  static HashSet hashed(const cache::PagedKvCache& cache) {
    HashSet out;
    const cache::BlockPool& pool = cache.manager().pool();
    for (cache::BlockId b = 1; b < pool.n_blocks(); ++b) {
      if (pool.is_hashed(b)) out.emplace(pool.hash(b).lo, pool.hash(b).hi);
    }
    return out;
  }

  // Greedy: 8 sequences speculating together, then 6 with two of them
  // opting out, then each alone: equal to solo runs; drafts were accepted;
  // nothing leaked.
  void check_greedy_equality(int64_t max_tokens) {
    const auto ps = eight_prompts();
    SamplingParams params = greedy_;
    params.max_tokens = static_cast<int32_t>(max_tokens);
    std::vector<SoloRun> want;
    for (const auto& p : ps) want.push_back(solo(p, params));

    SchedulerOptions so;
    so.max_seqs = 8;
    so.max_batch_tokens = 64;
    so.ubatch = 16;
    so.spec = ngram();
    auto together_cache = make_cache(8 * 32 + 1);
    ASSERT_NE(together_cache, nullptr);
    const Outcome together = run_all(*together_cache, so, ps, params);
    expect_solo(together, want, "8 together");
    EXPECT_GT(together.metrics.spec.draft_tokens, 0u);
    EXPECT_GT(together.metrics.spec.accepted_tokens, 0u);
    EXPECT_EQ(together_cache->manager().pool().n_used(), 0);
    EXPECT_TRUE(together_cache->check_invariants().ok())
        << together_cache->check_invariants().to_string();

    const std::vector<std::vector<int32_t>> six(ps.begin(), ps.begin() + 6);
    const std::vector<SoloRun> want6(want.begin(), want.begin() + 6);
    so.max_seqs = 4;
    auto cache = make_cache(4 * 32 + 1);
    ASSERT_NE(cache, nullptr);
    const Outcome mixed = run_all(*cache, so, six, params, {1, 4});
    expect_solo(mixed, want6, "mixed batch");
    EXPECT_GT(mixed.metrics.spec.draft_tokens, 0u);
    EXPECT_GT(mixed.metrics.spec.accepted_tokens, 0u);
    EXPECT_EQ(cache->manager().pool().n_used(), 0);
    EXPECT_TRUE(cache->check_invariants().ok()) << cache->check_invariants().to_string();

    so.max_seqs = 1;  // each alone
    auto solo_cache = make_cache(4 * 32 + 1);
    ASSERT_NE(solo_cache, nullptr);
    const Outcome alone = run_all(*solo_cache, so, ps, params);
    expect_solo(alone, want, "one at a time");
    EXPECT_GT(alone.metrics.spec.accepted_tokens, 0u);
    EXPECT_EQ(solo_cache->manager().pool().n_used(), 0);
    EXPECT_TRUE(solo_cache->check_invariants().ok()) << solo_cache->check_invariants().to_string();
  }
};

TEST_F(SchedulerSpecTest, LlamaGreedyEqualsUnspeculated) {
  check_greedy_equality(24);
}

TEST_F(SchedulerSpecTest, Qwen3GreedyEqualsUnspeculated) {
  load("tiny-qwen3-f32.gguf");
  check_greedy_equality(20);
}

TEST_F(SchedulerSpecTest, MoeGreedyEqualsUnspeculated) {
  load(kRefModels + "tiny-qwen3moe-f32.gguf");
  check_greedy_equality(20);
}

TEST_F(SchedulerSpecTest, SlidingWindowGreedyEqualsUnspeculated) {
  load(kRefModels + "tiny-gemma3-f32.gguf");
  check_greedy_equality(24);
}

// The prefix cache after a speculating run holds exactly the hashes (and
// published exactly the KV events) of a run without speculation: no block
// of a rejected or unverified draft was ever hashed.
TEST_F(SchedulerSpecTest, PrefixCacheEqualsUnspeculatedRun) {
  const auto ps = repeating_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 30;
  SchedulerOptions so;
  so.max_seqs = 3;
  so.max_batch_tokens = 64;
  so.ubatch = 16;
  auto plain_cache = make_cache(6 * 32 + 1);
  ASSERT_NE(plain_cache, nullptr);
  const Outcome plain = run_all(*plain_cache, so, ps, params);
  so.spec = ngram(6);
  auto spec_cache = make_cache(6 * 32 + 1);
  ASSERT_NE(spec_cache, nullptr);
  const Outcome spec = run_all(*spec_cache, so, ps, params);
  EXPECT_GT(spec.metrics.spec.accepted_tokens, 0u);
  EXPECT_LT(spec.metrics.spec.accepted_tokens, spec.metrics.spec.draft_tokens);  // rejections too
  EXPECT_LT(spec.metrics.steps, plain.metrics.steps);  // accepted drafts save steps
  for (size_t i = 0; i < ps.size(); ++i) {
    std::lock_guard<std::mutex> a(plain.got[i]->mu), b(spec.got[i]->mu);
    EXPECT_EQ(spec.got[i]->tokens, plain.got[i]->tokens) << i;
  }
  EXPECT_EQ(hashed(*spec_cache), hashed(*plain_cache));
  EXPECT_FALSE(spec.events.empty());
  EXPECT_EQ(spec.events, plain.events);
  EXPECT_EQ(spec_cache->manager().pool().n_used(), 0);
  EXPECT_EQ(spec_cache->manager().pool().n_free(), plain_cache->manager().pool().n_free());
  EXPECT_TRUE(spec_cache->check_invariants().ok());
  // The per-position counts add up to the accepted tokens.
  uint64_t sum = 0;
  for (uint64_t v : spec.metrics.spec.accepted_per_pos) sum += v;
  EXPECT_EQ(sum, spec.metrics.spec.accepted_tokens);
  EXPECT_EQ(plain.metrics.spec.draft_tokens, 0u);
}

// A seeded sampled request draws the same tokens as without speculation:
// each draw is the one a plain step makes (same logits, penalties, RNG
// state), so the output law is the target's exactly.
TEST_F(SchedulerSpecTest, SeededSamplingEqualsUnspeculated) {
  const auto ps = repeating_prompts();
  SamplingParams params;
  params.temperature = 0.7f;
  params.top_k = 20;
  params.repetition_penalty = 1.1f;
  params.max_tokens = 24;
  std::vector<SoloRun> want;
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < ps.size(); ++i) {
    SamplingParams p = params;
    p.seed = 1000 + i;
    want.push_back(solo(ps[i], p));
  }
  SchedulerOptions so;
  so.max_seqs = 6;
  so.spec = ngram();
  auto cache = make_cache(6 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
  ASSERT_TRUE(sched.start().ok());
  std::vector<std::unique_ptr<Collected>> got;
  for (size_t i = 0; i < ps.size(); ++i) {
    got.push_back(std::make_unique<Collected>());
    GenerationRequest req;
    req.prompt = ps[i];
    req.params = params;
    req.params.seed = 1000 + i;
    ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
  }
  sched.wait_idle();
  for (size_t i = 0; i < ps.size(); ++i) {
    std::lock_guard<std::mutex> lock(got[i]->mu);
    expect_equal(*got[i], want[i], 0, "sampled prompt " + std::to_string(i));
  }
  EXPECT_GT(sched.metrics().spec.draft_tokens, 0u);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
}

// Grammar-constrained, sampled, two choices forked from one prompt: the
// mask and the matcher see each accepted token in order, so every choice
// equals the same request run without speculation, token for token, and
// follows the grammar (whose repeating output the n-grams predict).
TEST_F(SchedulerSpecTest, GrammarSampledChoicesEqualUnspeculated) {
  auto grammar = grammar::compile_gbnf(
      "root ::= \"x=\" item (\", \" item){6,24} \".\"\n"
      "item ::= \"ab\" | \"cd\"\n");
  ASSERT_TRUE(grammar.ok()) << grammar.status().to_string();
  const std::regex want("x=(ab|cd)(, (ab|cd)){6,24}\\.");
  auto run = [&](const SpeculativeOptions& spec, ServingMetrics::Snapshot* m) {
    std::vector<std::unique_ptr<Collected>> got;
    auto cache = make_cache(4 * 32 + 1);
    EXPECT_NE(cache, nullptr);
    if (cache == nullptr) return got;
    SchedulerOptions so;
    so.max_seqs = 4;
    so.spec = spec;
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    EXPECT_TRUE(sched.start().ok());
    const auto ps = repeating_prompts();
    for (int i = 0; i < 2; ++i) {
      GenerationRequest req;
      req.prompt = ps[static_cast<size_t>(i)];
      req.params.seed = 11 + static_cast<uint64_t>(i);
      req.params.temperature = 1.0f;
      req.params.max_tokens = 80;
      req.n = 2;
      req.grammar = *grammar;
      got.push_back(std::make_unique<Collected>(2));
      EXPECT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
    }
    sched.wait_idle();
    *m = sched.metrics();
    EXPECT_EQ(cache->manager().pool().n_used(), 0);
    EXPECT_TRUE(cache->check_invariants().ok());
    return got;
  };
  ServingMetrics::Snapshot plain_m, spec_m;
  const auto plain = run(SpeculativeOptions{}, &plain_m);
  const auto spec = run(ngram(6), &spec_m);
  ASSERT_EQ(plain.size(), spec.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    std::lock_guard<std::mutex> a(plain[i]->mu), b(spec[i]->mu);
    ASSERT_TRUE(spec[i]->result.status.ok()) << spec[i]->result.status.to_string();
    for (size_t c = 0; c < 2; ++c) {
      EXPECT_EQ(spec[i]->tokens[c], plain[i]->tokens[c]) << i << "/" << c;
      EXPECT_EQ(spec[i]->text[c], plain[i]->text[c]);
      EXPECT_TRUE(std::regex_match(spec[i]->text[c], want)) << "'" << spec[i]->text[c] << "'";
    }
  }
  EXPECT_GT(spec_m.spec.accepted_tokens, 0u);
}

// A stop string that falls inside an accepted run of drafts cuts the output
// where a plain run cuts it.
TEST_F(SchedulerSpecTest, StopStringInsideAcceptedDrafts) {
  const auto ps = repeating_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 32;
  const SoloRun full = solo(ps[0], params);
  ASSERT_GT(full.text.size(), 12u);
  // Three ASCII characters from the second half of the text.
  size_t at = full.text.size() / 2;
  while (at + 3 <= full.text.size() &&
         !std::all_of(full.text.begin() + static_cast<std::ptrdiff_t>(at),
                      full.text.begin() + static_cast<std::ptrdiff_t>(at + 3),
                      [](char ch) { return ch > ' ' && ch < 127; }))
    ++at;
  ASSERT_LE(at + 3, full.text.size()) << full.text;
  params.stop = {full.text.substr(at, 3)};
  const SoloRun want = solo(ps[0], params);
  ASSERT_EQ(want.stop, StopReason::kStopString);

  SchedulerOptions so;
  so.max_seqs = 2;
  so.spec = ngram(8);
  auto cache = make_cache(4 * 32 + 1);
  ASSERT_NE(cache, nullptr);
  const Outcome o = run_all(*cache, so, {ps[0]}, params);
  expect_solo(o, {want}, "stop string");
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

// A pool too small for every sequence's drafts: the step runs without them,
// then preempts; outputs still equal solo runs and nothing leaks.
TEST_F(SchedulerSpecTest, SmallPoolDropsDraftsAndStillMatches) {
  const auto ps = repeating_prompts();
  SamplingParams params = greedy_;
  params.max_tokens = 24;
  std::vector<SoloRun> want;
  for (const auto& p : ps) want.push_back(solo(p, params));
  SchedulerOptions so;
  so.max_seqs = 6;
  so.max_batch_tokens = 64;
  so.ubatch = 16;
  so.spec = ngram(8);
  auto cache = make_cache(20);  // 19 usable blocks of 8 for 6 sequences of ~45 positions
  ASSERT_NE(cache, nullptr);
  const Outcome o = run_all(*cache, so, ps, params);
  expect_solo(o, want, "small pool");
  EXPECT_GT(o.metrics.preemptions, 0u);
  EXPECT_EQ(cache->manager().pool().n_used(), 0);
  EXPECT_TRUE(cache->check_invariants().ok());
}

}  // namespace scheduler_spec_test
}  // namespace folio
