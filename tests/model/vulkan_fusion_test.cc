// The decode-step fusions on the Vulkan device are exact: a one-token step
// (which takes the fused path: the norm in the products that read it, the
// residual add in the product before, rope with the K/V cache write) gives
// the same logits, bit for bit, as the same sequence's token in a step of
// nine sequences (T = 9 > kFusedStepTokens: the unfused ops). Batch
// invariance holds per backend, so any difference is a fusion's. The dense
// pre-norm decoder fuses steps of up to 8 sequences too: its token in a step
// of eight equals both. For the dense llama (pre-norm
// decoder), gemma3 and gemma4 (sandwich norms: a block's post norm,
// residual add and next norm in one dispatch, or the post norm and the add
// alone where no norm follows (gemma4's FFN and per-layer-input ends, its
// MoE branches' sum; exaone4's post norms); GeGLU in the matvec's GLU
// epilogue), the
// hybrid qwen35 (DeltaNet and gated-attention layers, dense FFN), and
// MoE models, whose router is one op in both steps: qwen3next and gemma4's
// MoE (two experts per token, their weighted sum in one dispatch; qwen3next's
// gated shared expert scaled by its gate's sigmoid and added in its down
// product's epilogue), glm4moe (its ungated shared expert adding into the
// routed output in its down product) and qwen3moe; every layer, the head, the KV cache and the
// state pools on the device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cache/batch.h"
#include "cache/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace vulkan_fusion_test {

struct Token {
  int32_t id, seq;
};

constexpr int kSeqs = 9;  // sequences of the cache: one past the fused steps' 8

// Runs the steps (tokens of one step each, positions counted per sequence)
// on a fresh paged F32 cache of kSeqs sequences; returns sequence 0's
// logits row of every step.
std::vector<std::vector<float>> run_steps(const Model& m, Backend* device,
                                          const std::vector<std::vector<Token>>& steps) {
  Result<std::unique_ptr<cache::KvCache>> cache =
      m.make_cache(cache_options(DType::F32, 64, kSeqs, /*paged=*/true, device));
  EXPECT_TRUE(cache.ok()) << cache.status().to_string();
  if (!cache.ok()) return {};
  auto ctx = ForwardContext::with_device(device, 2);
  std::vector<std::vector<float>> rows;
  int32_t pos[kSeqs] = {};
  cache::Batch batch;
  for (const std::vector<Token>& step : steps) {
    batch.clear();
    for (const Token& t : step) batch.add(t.id, pos[t.seq]++, t.seq, true);
    Result<TensorView> logits = m.forward(batch, **cache, *ctx);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    if (!logits.ok()) return {};
    for (size_t i = 0; i < step.size(); ++i) {
      if (step[i].seq != 0) continue;
      const float* r = logits->row<const float>(static_cast<int64_t>(i));
      rows.emplace_back(r, r + logits->ne[0]);
    }
  }
  return rows;
}

void expect_fused_step_exact(const std::string& path, const char* arch) {
  FOLIO_VULKAN_OR_SKIP(device);
  Result<std::unique_ptr<Model>> model = load_offloaded(path, device);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  ASSERT_EQ(m.config().arch, arch);
  const int32_t tokens[] = {1, 42, 7, 99, 3};
  // Sequence 0 alone, among 8 (fused where the decoder fuses such steps)
  // and among 9 (unfused); the others' tokens differ per step.
  auto steps_of = [&](int n_seqs) {
    std::vector<std::vector<Token>> steps;
    for (size_t i = 0; i < std::size(tokens); ++i) {
      std::vector<Token> step{{tokens[i], 0}};
      for (int q = 1; q < n_seqs; ++q) {
        step.push_back({static_cast<int32_t>(11 + 5 * i + 3 * static_cast<size_t>(q)), q});
      }
      steps.push_back(step);
    }
    return steps;
  };
  const std::vector<std::vector<float>> a = run_steps(m, device, steps_of(1));
  const std::vector<std::vector<float>> b = run_steps(m, device, steps_of(kSeqs));
  const std::vector<std::vector<float>> c = run_steps(m, device, steps_of(8));
  ASSERT_EQ(a.size(), std::size(tokens));
  ASSERT_EQ(b.size(), a.size());
  ASSERT_EQ(c.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    ASSERT_EQ(c[i].size(), b[i].size());
    EXPECT_EQ(0, std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)))
        << arch << ": step " << i << " differs between the fused one-token step and T = 9";
    EXPECT_EQ(0, std::memcmp(c[i].data(), b[i].data(), c[i].size() * sizeof(float)))
        << arch << ": step " << i << " differs between a step of 8 sequences and T = 9";
  }
}

TEST(VulkanFusion, DenseLlamaOneTokenStepEqualsUnfused) {
  const std::string path = shared_models_dir() + "/tiny-llama-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "llama");
}

TEST(VulkanFusion, Gemma3OneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/tiny-gemma3-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "gemma3");
}

TEST(VulkanFusion, HybridQwen35OneTokenStepEqualsUnfused) {
  const std::string path = shared_models_dir() + "/tiny-qwen35-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "qwen35");
}

TEST(VulkanFusion, Qwen3MoeOneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/llama-archs/qwen3moe-moe.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "qwen3moe");
}

TEST(VulkanFusion, HybridQwen3NextMoeOneTokenStepEqualsUnfused) {
  const std::string path = shared_models_dir() + "/tiny-qwen3next-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "qwen3next");
}

TEST(VulkanFusion, Gemma4MoeOneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/tiny-gemma4-moe-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "gemma4");
}

TEST(VulkanFusion, Gemma4OneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/tiny-gemma4-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "gemma4");
}

TEST(VulkanFusion, Exaone4OneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/llama-archs/exaone4-dense.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "exaone4");
}

TEST(VulkanFusion, Glm4MoeOneTokenStepEqualsUnfused) {
  const std::string path = local_refdata_dir() + "/llama-archs/glm4moe-moe.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  expect_fused_step_exact(path, "glm4moe");
}

}  // namespace vulkan_fusion_test
}  // namespace folio::model::testing
