// Generator (`folio run`, `chat`) with n-gram speculation: greedy and
// seeded sampled output equal the run without it, on a paged cache (whose
// prefix cache ends with the same hashes) and a contiguous one; a chat-like
// second call reuses the verified history. Hybrid caches:
// scheduler_spec_hybrid_test.cc.
#include <gtest/gtest.h>

#include "cache/paged_kv_cache.h"
#include "engine/generator.h"
#include "scheduler_fixture.h"

namespace folio {
namespace generator_spec_test {

using testing_sched::SchedulerFixture;

class GeneratorSpecTest : public SchedulerFixture {
 protected:
  struct Run {
    std::vector<int32_t> tokens;
    std::string text;
    SpeculationCounts spec;
  };
  Run generate(Generator& gen, const std::vector<int32_t>& prompt, const SamplingParams& params,
               bool speculate) {
    GenerateOptions go;
    go.n_predict = -1;
    if (speculate) {
      go.spec.type = SpecType::kNgram;
      go.spec.ngram_min = 1;
      go.spec.ngram_max = 3;
      go.spec.draft_max = 5;
      go.spec.min_accept = 0.0;
    }
    Run out;
    auto r = gen.generate(prompt, params, go, [&](std::string_view s) {
      out.text += s;
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return out;
    out.tokens = r->tokens;
    out.spec = r->spec;
    return out;
  }
};

TEST_F(GeneratorSpecTest, OutputEqualsUnspeculated) {
  const std::vector<std::string> texts = {
      "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,",
      "the cat sat on the mat. the cat sat on the mat. the cat",
      "Once upon a time",
  };
  uint64_t accepted = 0;
  for (const bool paged : {true, false}) {
    for (const std::string& t : texts) {
      for (const bool sampled : {false, true}) {
        SamplingParams params = greedy_;
        if (sampled) {
          params.temperature = 0.8f;
          params.seed = 5;
        }
        params.max_tokens = 40;
        const auto prompt = tokenize(t);
        std::unique_ptr<cache::KvCache> a, b;
        if (paged) {
          a = make_cache(0, 1);
          b = make_cache(0, 1);
        } else {
          cache::KvCacheOptions o;
          o.n_ctx = 256;
          a = std::move(model_->make_cache(o)).value();
          b = std::move(model_->make_cache(o)).value();
        }
        Generator plain(*model_, *tok_, *solo_ctx_, *a);
        Generator spec(*model_, *tok_, *solo_ctx_, *b);
        const Run want = generate(plain, prompt, params, false);
        const Run got = generate(spec, prompt, params, true);
        EXPECT_EQ(got.tokens, want.tokens) << t << " paged " << paged << " sampled " << sampled;
        EXPECT_EQ(got.text, want.text) << t;
        EXPECT_EQ(spec.history(), plain.history()) << t;
        EXPECT_EQ(b->seq_len(0), a->seq_len(0)) << t;
        accepted += got.spec.accepted_tokens;
        if (paged) {
          auto& pa = static_cast<cache::PagedKvCache&>(*a);
          auto& pb = static_cast<cache::PagedKvCache&>(*b);
          EXPECT_EQ(pb.manager().pool().n_used(), pa.manager().pool().n_used());
          EXPECT_TRUE(pb.check_invariants().ok()) << pb.check_invariants().to_string();
        }
        // A second turn continues from the verified history.
        std::vector<int32_t> next = spec.history();
        next.push_back(prompt.back());
        const Run want2 = generate(plain, next, params, false);
        const Run got2 = generate(spec, next, params, true);
        EXPECT_EQ(got2.tokens, want2.tokens) << t;
      }
    }
  }
  EXPECT_GT(accepted, 0u);
}

}  // namespace generator_spec_test
}  // namespace folio
