// Generator (`folio run`, `chat`) with n-gram speculation, on a dense, a MoE
// and the hybrid tiny models (gated DeltaNet, Mamba-2, short conv): greedy
// and seeded sampled output equal the run without it, on a paged cache
// (which ends holding the blocks of the run without speculation) and a
// contiguous one, and paged == contiguous; a chat-like second call reuses
// the verified history. Hybrid caches get draft slots for their per-draft
// state snapshots. Drafts from a proposer that knows the output on the
// hybrids: scheduler_spec_hybrid_test.cc.
#include <gtest/gtest.h>

#include <cctype>

#include "cache/hybrid_kv_cache.h"
#include "cache/kv_cache.h"
#include "engine/generator.h"
#include "scheduler_fixture.h"
#include "spec_cache_util.h"

namespace folio {
namespace generator_spec_test {

using spec_testing::spec_test_cache;
using testing_sched::SchedulerFixture;

const std::string kRefModels = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/";

constexpr int kDraftMax = 5;

class GeneratorSpecTest : public SchedulerFixture,
                          public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override { load(GetParam()); }

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
      go.spec.draft_max = kDraftMax;
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

TEST_P(GeneratorSpecTest, OutputEqualsUnspeculated) {
  const std::vector<std::string> texts = {
      "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,",
      "the cat sat on the mat. the cat sat on the mat. the cat",
      "Once upon a time",
      "{\"name\": \"x\", \"value\": 1}, {\"name\": \"y\", \"value\": 2}, {\"name\":",
  };
  uint64_t drafted = 0, accepted = 0;
  for (const std::string& t : texts) {
    for (const bool sampled : {false, true}) {
      SamplingParams params = greedy_;
      if (sampled) {
        params.temperature = 0.8f;
        params.seed = 5;
      }
      params.max_tokens = 40;
      const auto prompt = tokenize(t);
      const std::string what = GetParam() + ": " + t + (sampled ? ", sampled" : ", greedy");
      // The run without speculation on a paged cache: what every run gives.
      auto ref_cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 0, 1);
      ASSERT_NE(ref_cache, nullptr);
      Generator ref(*model_, *tok_, *solo_ctx_, *ref_cache);
      const Run want = generate(ref, prompt, params, false);
      for (const cache::KvStorage storage :
           {cache::KvStorage::kPaged, cache::KvStorage::kContiguous}) {
        const std::string w =
            what + (storage == cache::KvStorage::kPaged ? ", paged" : ", contiguous");
        auto a = spec_test_cache(*model_, storage, 1, 33, 0, 1);
        auto b = spec_test_cache(*model_, storage, 1, 33, kDraftMax, 1);
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        Generator plain(*model_, *tok_, *solo_ctx_, *a);
        Generator spec(*model_, *tok_, *solo_ctx_, *b);
        const Run base = generate(plain, prompt, params, false);
        const Run got = generate(spec, prompt, params, true);
        EXPECT_EQ(base.tokens, want.tokens) << w;
        EXPECT_EQ(got.tokens, want.tokens) << w;
        EXPECT_EQ(got.text, want.text) << w;
        EXPECT_EQ(spec.history(), plain.history()) << w;
        EXPECT_EQ(b->seq_len(0), a->seq_len(0)) << w;
        drafted += got.spec.draft_tokens;
        accepted += got.spec.accepted_tokens;
        if (a->block_manager() != nullptr) {
          EXPECT_EQ(b->block_manager()->pool().n_used(), a->block_manager()->pool().n_used()) << w;
        }
        if (const auto* h = dynamic_cast<const cache::HybridKvCache*>(b.get())) {
          EXPECT_EQ(h->state_pool().n_held(), 1) << w;  // the sequence's own slot only
          EXPECT_TRUE(h->check_invariants().ok()) << w << ": " << h->check_invariants().to_string();
        }
        // A second turn continues from the verified history.
        std::vector<int32_t> next = spec.history();
        next.push_back(prompt.back());
        const Run want2 = generate(plain, next, params, false);
        const Run got2 = generate(spec, next, params, true);
        EXPECT_EQ(got2.tokens, want2.tokens) << w;
      }
    }
  }
  EXPECT_GT(drafted, 0u) << GetParam();
  EXPECT_GT(accepted, 0u) << GetParam();
}

// Drafts the run's known output from wherever the request's tokens end.
class KnownOutputProposer final : public StatelessProposer {
 public:
  explicit KnownOutputProposer(std::vector<int32_t> all) : all_(std::move(all)) {}
  void propose_one(std::span<const int32_t> tokens, int max_draft,
                   std::vector<int32_t>& out) const override {
    out.clear();
    for (size_t i = tokens.size(); i < all_.size() && static_cast<int>(out.size()) < max_draft;
         ++i) {
      out.push_back(all_[i]);
    }
  }

 private:
  std::vector<int32_t> all_;  // prompt + the run's output
};

class GeneratorSpecCounts : public SchedulerFixture {
 protected:
  void SetUp() override { load("tiny-llama-f32.gguf"); }
};

// The run ends inside a verification, on a stop string that the sampled
// token completes, and that token is the draft it verifies: it counts as
// accepted, as the scheduler counts it (the same holds for an
// end-of-generation token, which the tiny model does not sample).
TEST_F(GeneratorSpecCounts, TheLastSampledTokenConfirmsItsDraft) {
  const auto prompt = tokenize("Once upon a time");
  SamplingParams params = greedy_;
  params.max_tokens = 12;
  auto ref_cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, 0, 1);
  ASSERT_NE(ref_cache, nullptr);
  Generator ref(*model_, *tok_, *solo_ctx_, *ref_cache);
  // The text of the first n output tokens, as the run streams it.
  auto text_of = [&](int n) {
    GenerateOptions plain;
    plain.n_predict = n;
    std::string text;
    auto r = ref.generate(prompt, params, plain, [&](std::string_view s) {
      text += s;
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return std::make_pair(text, r.ok() ? r->tokens : std::vector<int32_t>{});
  };
  const auto [text12, out12] = text_of(12);
  ASSERT_EQ(out12.size(), 12u);
  // Stop when the text of the first five output tokens is complete: the
  // fifth token (index 4) is the fourth draft of the first verification
  // (the first token comes from the prompt's logits, drafts 1..5 follow).
  const std::string stop = text_of(5).first;
  ASSERT_NE(stop, text_of(4).first) << "the fifth token adds no text";
  ASSERT_EQ(text12.find(stop), 0u);
  const std::vector<int32_t> first5(out12.begin(), out12.begin() + 5);
  params.stop = {stop};
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), out12.begin(), out12.end());
  GenerateOptions go;
  go.n_predict = -1;
  go.spec.type = SpecType::kNgram;  // any enabled type: `make` replaces the proposer
  go.spec.draft_max = kDraftMax;
  go.spec.min_accept = 0.0;
  go.spec.make = [all]() -> std::unique_ptr<DraftProposer> {
    return std::make_unique<KnownOutputProposer>(all);
  };
  auto cache = spec_test_cache(*model_, cache::KvStorage::kPaged, 1, 33, kDraftMax, 1);
  ASSERT_NE(cache, nullptr);
  Generator gen(*model_, *tok_, *solo_ctx_, *cache);
  auto got = gen.generate(prompt, params, go, [](std::string_view) { return true; });
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->stop, StopReason::kStopString);
  EXPECT_EQ(got->tokens, first5);
  EXPECT_EQ(got->spec.drafts, 1u);
  EXPECT_EQ(got->spec.draft_tokens, static_cast<uint64_t>(kDraftMax));
  EXPECT_EQ(got->spec.accepted_tokens, 4u);  // drafts of tokens 1..4, the last one sampled
}

INSTANTIATE_TEST_SUITE_P(
    Models, GeneratorSpecTest,
    ::testing::Values("tiny-llama-f32.gguf", kRefModels + "tiny-qwen3moe-f32.gguf",
                      "tiny-qwen35-f32.gguf", kRefModels + "tiny-granitehybrid-f32.gguf",
                      kRefModels + "tiny-nemotron-h-f32.gguf", kRefModels + "tiny-lfm2-f32.gguf"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      const std::string f = info.param.substr(info.param.rfind('/') + 1);
      std::string name;
      for (const char ch : f.substr(5, f.find("-f32") - 5)) {
        if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
      }
      return name;
    });

}  // namespace generator_spec_test
}  // namespace folio
