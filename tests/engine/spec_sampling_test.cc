// The law of sampled output with speculation: on the tiny llama (512
// tokens, restricted to its 4 most likely by top-k, temperature 1), many
// seeded requests speculate, in the Scheduler (16 together) and in the
// Generator, with a proposer that drafts tokens of the support chosen
// without looking at their probabilities (most rejected, some accepted, at
// both draft positions); the first sampled token and the pairs (first,
// second) and (second, third) follow the target's own probabilities,
// computed from the model's logits: Pearson's chi-square stays below its
// 1e-4 tail. The second and third tokens are drawn while drafts are
// verified (row 0 and, after an accepted draft, row 1 of one forward), so a
// wrong acceptance rule (keeping every draft, say, or sampling an accepted
// draft's successor from a stale row) moves their law far past it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "sampler_test_util.h"
#include "scheduler_fixture.h"
#include "spec_cache_util.h"

namespace folio {
namespace spec_sampling_test {

using sampler_testing::chi_square_bound_1e4;
using sampler_testing::pooled_chi_square;
using spec_testing::expect_empty;
using spec_testing::spec_test_cache;
using testing_sched::Collected;
using testing_sched::SchedulerFixture;

constexpr int kTopK = 4;

// Drafts for the contexts it knows: a token of the context's support, the
// next in a rotation over the support shared by every proposal, so drafts
// are right about as often as a guess.
class RotatingProposer final : public StatelessProposer {
 public:
  using Supports = std::map<std::vector<int32_t>, std::vector<int32_t>>;
  RotatingProposer(std::shared_ptr<const Supports> supports,
                   std::shared_ptr<std::atomic<uint64_t>> turn)
      : supports_(std::move(supports)), turn_(std::move(turn)) {}

  void propose_one(std::span<const int32_t> tokens, int max_draft,
                   std::vector<int32_t>& out) const override {
    out.clear();
    std::vector<int32_t> context(tokens.begin(), tokens.end());
    while (static_cast<int>(out.size()) < max_draft) {
      const auto it = supports_->find(context);
      if (it == supports_->end()) return;
      const uint64_t t = turn_->fetch_add(1);
      out.push_back(it->second[static_cast<size_t>(t % it->second.size())]);
      context.push_back(out.back());
    }
  }

 private:
  std::shared_ptr<const Supports> supports_;  // context -> its top-k tokens
  std::shared_ptr<std::atomic<uint64_t>> turn_;
};

class SpecSamplingTest : public SchedulerFixture {
 protected:
  // The top-k tokens after `context` and their probabilities at temperature
  // 1 (what the sampler keeps), from one forward over the whole context.
  struct Support {
    std::vector<int32_t> tokens;  // [kTopK], most likely first
    std::vector<double> probs;    // [kTopK]
  };
  Support support(const std::vector<int32_t>& context) {
    Support s;
    auto c = spec_test_cache(*model_, cache::KvStorage::kContiguous, 1, 0, 0, 1);
    if (c == nullptr) return s;
    cache::Batch b;
    for (size_t i = 0; i < context.size(); ++i)
      b.add(context[i], static_cast<int32_t>(i), 0, i + 1 == context.size());
    auto logits = model_->forward(b, *c, *solo_ctx_);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    if (!logits.ok()) return s;
    const int64_t v = model_->config().n_vocab;
    const float* l = logits->row<const float>(0);
    std::vector<int32_t> order(static_cast<size_t>(v));
    for (int32_t i = 0; i < v; ++i) order[static_cast<size_t>(i)] = i;
    std::partial_sort(order.begin(), order.begin() + kTopK + 1, order.end(),
                      [&](int32_t a, int32_t b) { return l[a] > l[b]; });
    // No near tie at the edge of the support: forwards of other shapes
    // (the scheduler's) keep the same k tokens.
    EXPECT_GT(l[order[kTopK - 1]] - l[order[kTopK]], 1e-3f) << "a near tie at the top-k edge";
    order.resize(kTopK);
    std::vector<float> kept;
    for (const int32_t t : order) kept.push_back(l[t]);
    s.tokens = order;
    s.probs = sampler_testing::softmax(kept, 1.0);
    return s;
  }

  // The law of the first three tokens, p(a) p(b | a) p(c | a, b) over the
  // supports, as marginals of the first token and of the two pairs, on an
  // axis of every token of every support; and the supports the proposer
  // drafts from.
  struct Law {
    std::map<int32_t, size_t> index;                        // token -> its place on the axis
    std::vector<double> first, first_second, second_third;  // [n], [n * n], [n * n]
    std::shared_ptr<RotatingProposer::Supports> supports;
  };
  Law law(const std::vector<int32_t>& prompt) {
    Law out;
    out.supports = std::make_shared<RotatingProposer::Supports>();
    struct Triple {
      int32_t a, b, c;
      double p;
    };
    std::vector<Triple> triples;
    const Support s1 = support(prompt);
    std::vector<int32_t> ctx = prompt;
    for (size_t i = 0; i < s1.tokens.size(); ++i) {
      ctx.push_back(s1.tokens[i]);
      const Support s2 = support(ctx);
      (*out.supports)[ctx] = s2.tokens;
      for (size_t j = 0; j < s2.tokens.size(); ++j) {
        ctx.push_back(s2.tokens[j]);
        const Support s3 = support(ctx);
        (*out.supports)[ctx] = s3.tokens;
        for (size_t k = 0; k < s3.tokens.size(); ++k) {
          triples.push_back(
              {s1.tokens[i], s2.tokens[j], s3.tokens[k], s1.probs[i] * s2.probs[j] * s3.probs[k]});
        }
        ctx.pop_back();
      }
      ctx.pop_back();
    }
    EXPECT_EQ(triples.size(), static_cast<size_t>(kTopK * kTopK * kTopK));
    for (const Triple& t : triples) {
      for (const int32_t x : {t.a, t.b, t.c}) out.index.emplace(x, out.index.size());
    }
    const size_t n = out.index.size();
    out.first.assign(n, 0.0);
    out.first_second.assign(n * n, 0.0);
    out.second_third.assign(n * n, 0.0);
    for (const Triple& t : triples) {
      const size_t a = out.index[t.a], b = out.index[t.b], c = out.index[t.c];
      out.first[a] += t.p;
      out.first_second[a * n + b] += t.p;
      out.second_third[b * n + c] += t.p;
    }
    return out;
  }

  static SamplingParams params() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = kTopK;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.max_tokens = 4;  // the step after the first token carries 2 drafts
    return p;
  }

  static SpeculativeOptions rotating(const Law& law) {
    SpeculativeOptions s;
    s.type = SpecType::kNgram;  // replaced by `make`
    s.draft_max = 2;
    s.draft_min = 1;
    s.max_batch = 16;
    s.min_accept = 0.0;
    auto turn = std::make_shared<std::atomic<uint64_t>>(0);
    s.make = [supports = law.supports, turn] {
      return std::make_unique<RotatingProposer>(supports, turn);
    };
    return s;
  }

  // Counts the first three tokens of every draw and compares them with the
  // law: Pearson's chi-square (cells expecting fewer than 5 draws pooled)
  // below its 1e-4 tail.
  void expect_law(const Law& law, const std::vector<std::vector<int32_t>>& draws,
                  const std::string& what) {
    const size_t n = law.index.size();
    std::vector<int64_t> first(n, 0), first_second(n * n, 0), second_third(n * n, 0);
    for (const std::vector<int32_t>& t : draws) {
      ASSERT_GE(t.size(), 3u) << what << ": a request ended early";
      ASSERT_TRUE(law.index.count(t[0]) && law.index.count(t[1]) && law.index.count(t[2]))
          << what << ": a token outside the support: " << t[0] << " " << t[1] << " " << t[2];
      const size_t a = law.index.at(t[0]), b = law.index.at(t[1]), c = law.index.at(t[2]);
      ++first[a];
      ++first_second[a * n + b];
      ++second_third[b * n + c];
    }
    struct Check {
      const char* name;
      const std::vector<int64_t>& counts;
      const std::vector<double>& probs;
    };
    const auto total = static_cast<int64_t>(draws.size());
    for (const Check& c : {Check{"first token", first, law.first},
                           Check{"(first, second)", first_second, law.first_second},
                           Check{"(second, third)", second_third, law.second_third}}) {
      int dof = 0;
      const double chi2 = pooled_chi_square(c.counts, c.probs, total, 5.0, &dof);
      EXPECT_GE(dof, 2) << what << ", " << c.name;
      std::printf("[ chi2     ] %-9s %-16s %8.2f, %2d degrees of freedom, 1e-4 tail above %.2f\n",
                  what.c_str(), c.name, chi2, dof, chi_square_bound_1e4(dof));
      EXPECT_LT(chi2, chi_square_bound_1e4(dof)) << what << ", " << c.name;
    }
  }

  // Drafts were verified at both positions, accepted and rejected.
  static void expect_verified(const SpeculationCounts& s, int64_t draws, const std::string& what) {
    EXPECT_GT(s.accepted_tokens, static_cast<uint64_t>(draws / 10)) << what;
    EXPECT_LT(s.accepted_tokens, s.draft_tokens / 2) << what;
    ASSERT_GE(s.accepted_per_pos.size(), 2u) << what;
    EXPECT_GT(s.accepted_per_pos[1], 0u) << what;
  }
};

constexpr int64_t kDraws = 3000;

// The Scheduler (serve, batch): many seeded requests, 16 decoding together,
// every one speculating.
TEST_F(SpecSamplingTest, SchedulerFirstTokensAndPairsFollowTheTargetsLaw) {
  const std::vector<int32_t> prompt = tokenize("Once upon a time");
  const Law target = law(prompt);
  SchedulerOptions so;
  so.max_seqs = 16;
  so.max_batch_tokens = 128;
  so.max_waiting = kDraws;  // every request queued before the step thread starts
  so.spec = rotating(target);
  auto cache = make_cache(16 * 4 + 1);
  ASSERT_NE(cache, nullptr);
  std::vector<std::unique_ptr<Collected>> got;
  ServingMetrics::Snapshot m;
  {
    Scheduler sched(*model_, *tok_, *ctx_, *cache, so);
    for (int64_t i = 0; i < kDraws; ++i) {
      got.push_back(std::make_unique<Collected>());
      GenerationRequest req;
      req.prompt = prompt;
      req.params = params();
      req.params.seed = 7000 + static_cast<uint64_t>(i);
      ASSERT_TRUE(sched.submit(req, got.back()->callbacks()).ok());
    }
    ASSERT_TRUE(sched.start().ok());
    sched.wait_idle();
    m = sched.metrics();
  }
  expect_empty(*cache, "target cache");
  expect_verified(m.spec, kDraws, "Scheduler");
  std::vector<std::vector<int32_t>> draws;
  for (const auto& g : got) {
    std::lock_guard<std::mutex> lock(g->mu);
    draws.push_back(g->tokens[0]);
  }
  expect_law(target, draws, "Scheduler");
}

// The Generator (run, chat): one seeded run after another in one cache.
TEST_F(SpecSamplingTest, GeneratorFirstTokensAndPairsFollowTheTargetsLaw) {
  const std::vector<int32_t> prompt = tokenize("Once upon a time");
  const Law target = law(prompt);
  auto cache = spec_test_cache(*model_, cache::KvStorage::kContiguous, 1, 0, 0, 1);
  ASSERT_NE(cache, nullptr);
  Generator gen(*model_, *tok_, *solo_ctx_, *cache);
  GenerateOptions go;
  go.n_predict = -1;
  go.spec = rotating(target);
  SpeculationCounts total;
  std::vector<std::vector<int32_t>> draws;
  for (int64_t i = 0; i < kDraws; ++i) {
    SamplingParams p = params();
    p.seed = 9000 + static_cast<uint64_t>(i);
    auto r = gen.generate(prompt, p, go, [](std::string_view) { return true; });
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    draws.push_back(r->tokens);
    total.drafts += r->spec.drafts;
    total.draft_tokens += r->spec.draft_tokens;
    total.accepted_tokens += r->spec.accepted_tokens;
    total.accepted_per_pos.resize(
        std::max(total.accepted_per_pos.size(), r->spec.accepted_per_pos.size()));
    for (size_t k = 0; k < r->spec.accepted_per_pos.size(); ++k)
      total.accepted_per_pos[k] += r->spec.accepted_per_pos[k];
  }
  expect_verified(total, kDraws, "Generator");
  expect_law(target, draws, "Generator");
}

}  // namespace spec_sampling_test
}  // namespace folio
