// deepseek2 (multi-head latent attention in the absorbed form, a latent-row
// cache, expert groups) against an independent NumPy forward in the
// expanded form (scripts/gen_deepseek2_expanded.py: per-head keys and values
// decompressed from the latent vectors, float64; llama.cpp agrees with it
// within 2.6e-5 on F32 twins of these files, --llama-bin): tests/model/refdata/deepseek2/
// moe (4 experts, top 2), groups (8 experts in 4 groups, 2 used: the
// groups change the experts of 219 of its 338 routed tokens) and lite
// (DeepSeek-V2-Lite's layout: 26 blocks, one attn_q, no q_lora_rank) and
// yarn (YaRN rope with DeepSeek's yarn_log_multiplier: its q.k scale). F32 K/V within
// 1e-3 of the largest reference logit, the same greedy tokens, on the
// contiguous and the paged cache; F16 K/V within 1e-2; on the CPU and fully
// offloaded to the Vulkan device (and Q8_0 latent rows of DeepSeek's
// width, device vs CPU, on llama.cpp's saver file); groups' F32 twin also
// against llama.cpp's own logits (deepseek2/llamacpp). The cache holds one
// latent row per token and layer (K only), and paged logits equal the
// contiguous ones bit for bit on either.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "backend/buffer_type.h"
#include "cache/kv_cache.h"
#include "llamacpp_parity.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace deepseek2_test {

std::string base(const std::string& name) {
  return local_refdata_dir() + "/deepseek2/" + name;
}

float largest_logit(const std::string& b) {
  Result<NpyF32> ref = read_npy(b + ".prefill.npy");
  if (!ref.ok()) return 0.0f;
  float m = 0.0f;
  for (float v : ref->data) m = std::max(m, std::fabs(v));
  return m;
}

// 128 positions of one sequence, blocks of 16, in `device`'s memory
// (nullptr: host memory).
cache::KvCacheOptions cache_options(bool paged, DType type, Backend* device = nullptr) {
  cache::KvCacheOptions o = testing::cache_options(type, 128, 1, paged, device);
  o.block_size = 16;
  o.n_blocks = paged ? 16 : 0;
  return o;
}

// `name`.gguf on the CPU (vulkan false) or with its last `ngl` layers on
// the Vulkan device (-1: every layer and the output head; device set, the
// test skips without one).
#define LOAD_DEEPSEEK2_OR_SKIP(model, device, name, vulkan, ngl)        \
  Backend* device = nullptr;                                            \
  LoadOptions lo_##model;                                               \
  if (vulkan) {                                                         \
    FOLIO_VULKAN_OR_SKIP(vk);                                           \
    device = vk;                                                        \
    lo_##model.offload_type = &vk->default_buffer_type();               \
    lo_##model.offload_layers = ngl;                                    \
  }                                                                     \
  Result<std::unique_ptr<Model>> model = Model::load(name, lo_##model); \
  ASSERT_TRUE(model.ok()) << model.status().to_string()

struct Param {
  const char* name;
  bool paged;
  DType kv;
  bool vulkan = false;
  int ngl = -1;  // with vulkan: layers offloaded (-1: all and the head)
};

class Deepseek2Expanded : public ::testing::TestWithParam<Param> {};

TEST_P(Deepseek2Expanded, MatchesTheExpandedForm) {
  const Param& p = GetParam();
  const std::string b = base(p.name);
  for (const char* ext :
       {".gguf", ".prompt_tokens.txt", ".gen_tokens.txt", ".prefill.npy", ".decode.npy"}) {
    if (!file_exists(b + ext)) FAIL() << "reference file missing: " << b + ext;
  }
  LOAD_DEEPSEEK2_OR_SKIP(model, device, b + ".gguf", p.vulkan, p.ngl);
  Result<std::unique_ptr<cache::KvCache>> cache =
      (*model)->make_cache(cache_options(p.paged, p.kv, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  const float scale = largest_logit(b);
  ASSERT_GT(scale, 0.0f);
  const float tol = (p.kv == DType::F32 ? 1e-3f : 1e-2f) * scale;
  auto ctx = ForwardContext::with_device(device, 2);
  expect_llamacpp_parity(**model, **cache, *ctx, b, {tol, tol},
                         std::string(p.name) + (p.paged ? " paged " : " contiguous ") +
                             dtype_name(p.kv) + (p.vulkan ? " vulkan" : "") +
                             (p.ngl >= 0 ? " ngl " + std::to_string(p.ngl) : "") + " (tolerance " +
                             std::to_string(tol) + ")");
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(info.param.name) + (info.param.paged ? "_paged_" : "_contiguous_") +
         dtype_name(info.param.kv) + (info.param.vulkan ? "_vulkan" : "") +
         (info.param.ngl >= 0 ? "_ngl" + std::to_string(info.param.ngl) : "");
}

INSTANTIATE_TEST_SUITE_P(
    Files, Deepseek2Expanded,
    ::testing::Values(Param{"moe", false, DType::F32}, Param{"moe", true, DType::F32},
                      Param{"groups", false, DType::F32}, Param{"groups", true, DType::F32},
                      Param{"lite", false, DType::F32}, Param{"lite", true, DType::F32},
                      Param{"yarn", false, DType::F32}, Param{"yarn", true, DType::F32},
                      Param{"moe", true, DType::F16}, Param{"groups", true, DType::BF16}),
    param_name);

// The same files fully offloaded to the Vulkan device (dense-layer lead,
// MoE with expert groups, the lite layout (also with only its last 13 of
// 26 layers on the device), YaRN; F16 and BF16 latent rows
// as well; Q8_0 rows need widths in whole blocks of 32, which these rows of
// 80 are not: the parity harness's latent cases cover Q8_0 on the device).
INSTANTIATE_TEST_SUITE_P(Vulkan, Deepseek2Expanded,
                         ::testing::Values(Param{"moe", false, DType::F32, true},
                                           Param{"moe", true, DType::F32, true},
                                           Param{"groups", false, DType::F32, true},
                                           Param{"groups", true, DType::F32, true},
                                           Param{"lite", true, DType::F32, true},
                                           Param{"lite", true, DType::F32, true, 13},
                                           Param{"yarn", true, DType::F32, true},
                                           Param{"moe", true, DType::F16, true},
                                           Param{"groups", true, DType::BF16, true}),
                         param_name);

// groups' twin with F32 matrices (refdata/deepseek2/llamacpp, written by
// the generator's --llama-bin) against llama.cpp's own logits on it: the
// dense-layer lead and group-limited routing, F32 K/V within 1e-3 of the
// largest logit and llama.cpp's greedy tokens, contiguous and paged on the
// CPU, paged on the Vulkan device.
class Deepseek2LlamaCpp : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(Deepseek2LlamaCpp, GroupsMatchLlamaCpp) {
  const auto [paged, vulkan] = GetParam();
  const std::string b = base("llamacpp/groups-f32");
  LOAD_DEEPSEEK2_OR_SKIP(model, device, b + ".gguf", vulkan, -1);
  EXPECT_EQ((*model)->config().moe.n_groups, 4);
  Result<std::unique_ptr<cache::KvCache>> cache =
      (*model)->make_cache(cache_options(paged, DType::F32, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  const float tol = 1e-3f * largest_logit(b);
  ASSERT_GT(tol, 0.0f);
  auto ctx = ForwardContext::with_device(device, 2);
  expect_llamacpp_parity(
      **model, **cache, *ctx, b, {tol, tol},
      std::string("groups-f32 vs llama.cpp") + (paged ? " paged" : "") + (vulkan ? " vulkan" : ""));
}

INSTANTIATE_TEST_SUITE_P(Devices, Deepseek2LlamaCpp,
                         ::testing::Values(std::pair{false, false}, std::pair{true, false},
                                           std::pair{true, true}),
                         [](const ::testing::TestParamInfo<std::pair<bool, bool>>& i) {
                           return std::string(i.param.first ? "paged" : "contiguous") +
                                  (i.param.second ? "_vulkan" : "_cpu");
                         });

// One latent row (kv_lora_rank + rope dims) per token and layer, V read
// from it: the geometry, the cache's memory and its summary line.
TEST(Deepseek2, CacheHoldsLatentRows) {
  Result<std::unique_ptr<Model>> model = Model::load(base("moe") + ".gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ModelConfig& c = (*model)->config();
  EXPECT_TRUE(c.mla.enabled());
  EXPECT_EQ(c.mla.kv_lora_rank, 64);
  EXPECT_EQ(c.mla.q_lora_rank, 48);
  Result<std::unique_ptr<Model>> lite = Model::load(base("lite") + ".gguf");
  ASSERT_TRUE(lite.ok()) << lite.status().to_string();
  EXPECT_EQ((*lite)->config().mla.q_lora_rank, 0);  // 26 blocks: a lite file, one attn_q
  EXPECT_FALSE((*lite)->weights().layers[0].wq.empty());
  const cache::KvGeometry g = c.cache_geometry();
  ASSERT_EQ(g.n_layer(), 2);
  for (const cache::LayerGeometry& l : g.layers) {
    EXPECT_EQ(l.kv.n_kv_head, 1);
    EXPECT_EQ(l.kv.head_dim_k, 64 + 16);
    EXPECT_EQ(l.kv.head_dim_v, 64);
    EXPECT_TRUE(l.kv.v_in_k);
  }
  Result<std::unique_ptr<cache::KvCache>> cache =
      (*model)->make_cache(cache_options(true, DType::F16));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  // 2 layers x 80 values x 2 bytes = 320 bytes a token (the expanded form's
  // K and V of 2 heads would take 2 x 2 x (32 + 24) x 2 = 448).
  EXPECT_NE((*cache)->summary().find("0.31 KiB per token"), std::string::npos)
      << (*cache)->summary();
  EXPECT_LE((*cache)->bytes(), size_t{16} * 16 * 320 + 2 * 64);
}

// The same prompt through the paged cache (blocks of 16) and the contiguous
// one gives the same logits bit for bit, on the CPU and on the Vulkan device.
class Deepseek2Layouts : public ::testing::TestWithParam<bool> {};

TEST_P(Deepseek2Layouts, PagedEqualsContiguous) {
  LOAD_DEEPSEEK2_OR_SKIP(model, device, base("groups") + ".gguf", GetParam(), -1);
  Result<std::vector<int32_t>> prompt = read_ids(base("groups") + ".prompt_tokens.txt");
  ASSERT_TRUE(prompt.ok());
  std::vector<int32_t> longer = *prompt;  // past one block, into a second
  for (int32_t t : *prompt) longer.push_back(t);
  std::vector<std::vector<float>> logits;
  for (bool paged : {false, true}) {
    Result<std::unique_ptr<cache::KvCache>> cache =
        (*model)->make_cache(cache_options(paged, DType::F16, device));
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    auto ctx = ForwardContext::with_device(device, 2);
    Result<std::vector<float>> all = eval_all(**model, **cache, *ctx, longer);
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    Result<std::vector<float>> next = eval_one(**model, **cache, *ctx, 5);
    ASSERT_TRUE(next.ok()) << next.status().to_string();
    all->insert(all->end(), next->begin(), next->end());
    logits.push_back(std::move(all).value());
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Devices, Deepseek2Layouts, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return std::string(i.param ? "vulkan" : "cpu");
                         });

// Latent rows under prefix sharing and copy-on-write (blocks of 8): A holds
// 12 tokens (a full block and a partial one); B forks from A and both go on
// with different tokens, the first write copying the shared partial block
// (K rows only: V is read from them); C takes A's full block as a cached
// prefix and computes the rest. Every row equals the same computation on a
// fresh cache, bit for bit.
TEST(Deepseek2, ForksAndPrefixesShareLatentRows) {
  Result<std::unique_ptr<Model>> model = Model::load(base("groups") + ".gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  Result<std::vector<int32_t>> ids = read_ids(base("groups") + ".prompt_tokens.txt");
  ASSERT_TRUE(ids.ok());
  const std::vector<int32_t> p12(ids->begin(), ids->begin() + 12);
  cache::KvCacheOptions o = cache_options(true, DType::F16);
  o.block_size = 8;
  o.n_blocks = 16;
  o.n_seq = 3;
  auto ctx = ForwardContext::cpu(2);
  // The rows of `first` then of one token `next`, on a fresh cache.
  auto fresh = [&](const std::vector<int32_t>& first, int32_t next) {
    Result<std::unique_ptr<cache::KvCache>> c = m.make_cache(o);  // sequence 0 exists
    EXPECT_TRUE(c.ok());
    std::vector<float> rows = *eval_all(m, **c, *ctx, first);
    const std::vector<float> last = *eval_one(m, **c, *ctx, next);
    rows.insert(rows.end(), last.begin(), last.end());
    return rows;
  };
  const size_t nv = static_cast<size_t>(m.config().n_vocab);
  auto same = [&](const std::vector<float>& a, const float* b) {
    return std::memcmp(a.data() + a.size() - nv, b, nv * sizeof(float)) == 0;
  };

  Result<std::unique_ptr<cache::KvCache>> cache = m.make_cache(o);
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  cache::KvCache& c = **cache;
  const int a = *c.add_sequence();
  ASSERT_TRUE(eval_all(m, c, *ctx, p12, a).ok());
  Result<int> b = c.fork_sequence(a);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  Result<std::vector<float>> lb = eval_one(m, c, *ctx, 7, *b);  // copies the partial block
  ASSERT_TRUE(lb.ok()) << lb.status().to_string();
  Result<std::vector<float>> la = eval_one(m, c, *ctx, 9, a);
  ASSERT_TRUE(la.ok()) << la.status().to_string();
  EXPECT_TRUE(same(fresh(p12, 7), lb->data()));
  EXPECT_TRUE(same(fresh(p12, 9), la->data()));

  const int cs = *c.add_sequence();
  Result<int64_t> taken = c.take_cached_prefix(cs, p12);
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_EQ(*taken, 8);
  const std::vector<int32_t> rest(p12.begin() + 8, p12.end());
  Result<std::vector<float>> lc = eval_all(m, c, *ctx, rest, cs);
  ASSERT_TRUE(lc.ok()) << lc.status().to_string();
  // The reference: 8 tokens, then the other 4 in one batch, on a fresh cache.
  Result<std::unique_ptr<cache::KvCache>> ref = m.make_cache(o);
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE(eval_all(m, **ref, *ctx, std::vector<int32_t>(p12.begin(), p12.begin() + 8)).ok());
  Result<std::vector<float>> want = eval_all(m, **ref, *ctx, rest);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(lc->size(), want->size());
  EXPECT_EQ(std::memcmp(lc->data(), want->data(), lc->size() * sizeof(float)), 0);
}

// Offloaded to the Vulkan device, the cache holds the same latent rows (K
// only, in device memory) and its size per token is the CPU cache's.
TEST(Deepseek2, DeviceCacheHoldsLatentRows) {
  LOAD_DEEPSEEK2_OR_SKIP(model, device, base("moe") + ".gguf", true, -1);
  Result<std::unique_ptr<cache::KvCache>> cache =
      (*model)->make_cache(cache_options(true, DType::F16, device));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();
  EXPECT_NE((*cache)->summary().find("0.31 KiB per token"), std::string::npos)
      << (*cache)->summary();
  EXPECT_LE((*cache)->bytes(), size_t{16} * 16 * 320 + 2 * 64);
}

// Q8_0 latent rows at DeepSeek's width (llama.cpp's saver file: rows of
// 512 + 64, 18 blocks; V its first 16) on the device against the same cache
// on the CPU (llama.cpp has no Q8_0 reference here). set_rows quantizes
// alike on both, but a last-bit difference upstream can move a value across
// a rounding boundary, one step of a block's scale: the two must agree far
// better than Q8_0 agrees with F32 rows (the quantization's own effect) and
// within 2e-3 of the largest logit.
TEST(Deepseek2, DeviceQ8RowsMatchTheCpu) {
  const std::string path = local_refdata_dir() + "/llama-archs/deepseek2-moe.gguf";
  Result<std::vector<int32_t>> prompt =
      read_ids(local_refdata_dir() + "/llama-archs/deepseek2-moe.prompt_tokens.txt");
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  // Prompt and two decode steps: CPU Q8_0, device Q8_0, CPU F32.
  std::vector<std::vector<float>> logits;
  for (auto [vulkan, kv] : {std::pair{false, DType::Q8_0}, std::pair{true, DType::Q8_0},
                            std::pair{false, DType::F32}}) {
    LOAD_DEEPSEEK2_OR_SKIP(model, device, path, vulkan, -1);
    EXPECT_EQ((*model)->config().mla.kv_lora_rank, 512);
    Result<std::unique_ptr<cache::KvCache>> cache =
        (*model)->make_cache(cache_options(true, kv, device));
    ASSERT_TRUE(cache.ok()) << cache.status().to_string();
    auto ctx = ForwardContext::with_device(device, 2);
    Result<std::vector<float>> all = eval_all(**model, **cache, *ctx, *prompt);
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    for (int32_t t : {3, 17}) {
      Result<std::vector<float>> next = eval_one(**model, **cache, *ctx, t);
      ASSERT_TRUE(next.ok()) << next.status().to_string();
      all->insert(all->end(), next->begin(), next->end());
    }
    logits.push_back(std::move(all).value());
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_EQ(logits[0].size(), logits[2].size());
  float largest = 0.0f, device_diff = 0.0f, q8_diff = 0.0f;
  for (size_t i = 0; i < logits[0].size(); ++i) {
    largest = std::max(largest, std::fabs(logits[2][i]));
    device_diff = std::max(device_diff, std::fabs(logits[0][i] - logits[1][i]));
    q8_diff = std::max(q8_diff, std::fabs(logits[0][i] - logits[2][i]));
  }
  ASSERT_GT(largest, 0.0f);
  EXPECT_LE(device_diff, 2e-3f * largest) << "largest |logit| " << largest;
  EXPECT_LE(device_diff, 0.1f * q8_diff) << "Q8_0 vs F32 rows on the CPU: " << q8_diff;
  std::printf("[ deepseek2 ] Q8_0 rows: device vs CPU %.3g, Q8_0 vs F32 %.3g, largest %.3g\n",
              device_diff, q8_diff, largest);
}

#undef LOAD_DEEPSEEK2_OR_SKIP  // unity builds: not into the next file

}  // namespace deepseek2_test
}  // namespace folio::model::testing
