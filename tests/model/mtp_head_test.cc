// MTP heads (model/mtp_head.h) on the tiny files carrying one MTP block:
// tiny-qwen35-mtp (its block full attention + dense FFN, its own
// shared_head_head), tiny-qwen35moe-mtp (routed experts + gated shared
// expert) and tiny-glm4moe (its block routed, the model's output head).
// The head's logits and output state for fixed tokens and hidden rows
// match references made outside folio (scripts/gen_mtp_refs.py):
// llama.cpp's MTP graph for the qwen35 files (llama.cpp runs no glm4moe
// head) and a float64 NumPy head for all; fed in one forward or in two (its K/V cache
// carries the first positions), with a paged or a contiguous cache. The
// blocks load only when asked: a file without them, or a load that does
// not ask, places exactly the tensors it placed before. On the Vulkan
// device the head matches the NumPy one too. A forward keeping
// the final hidden states computes the same logits as one that does not.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model/hidden_states.h"
#include "model/model.h"
#include "model/mtp_head.h"
#include "test_util.h"
#include "vulkan_test_device.h"

namespace folio::model {
namespace mtp_head_test {

using testing::max_abs_diff;
using testing::NpyF32;
using testing::read_ids;
using testing::read_npy;

const std::string kRef = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/";

std::unique_ptr<Model> load(const std::string& path, bool mtp) {
  LoadOptions lo;
  lo.load_mtp = mtp;
  auto m = Model::load(path, lo);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<cache::KvCache> head_cache(const MtpHead& h, cache::KvStorage storage) {
  cache::KvCacheOptions o;
  o.storage = storage;
  o.type = DType::F32;
  o.block_size = 8;
  o.n_ctx = 64;
  o.n_seq = 1;
  o.n_blocks = 20;
  o.max_seqs = 1;
  o.prefix_caching = false;
  auto c = h.make_cache(o);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

class MtpHeadTest : public ::testing::TestWithParam<std::string> {};

// Runs the fixed input through the head in forwards of `split` and
// `n - split` positions; returns logits and states, [n][...] row-major.
void run_head(const MtpHead& head, cache::KvCache& cache, const std::vector<int32_t>& tokens,
              const NpyF32& hidden, int64_t split, std::vector<float>* logits,
              std::vector<float>* states, Backend* device = nullptr) {
  auto ctx = ForwardContext::with_device(device, 2);
  const int64_t n = static_cast<int64_t>(tokens.size()), e = head.n_embd();
  for (const auto& [from, to] : {std::pair<int64_t, int64_t>{0, split}, {split, n}}) {
    if (from == to) continue;
    cache::Batch b;
    for (int64_t p = from; p < to; ++p) b.add(tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), 0, true);
    std::span<const float> h(hidden.row(from), static_cast<size_t>((to - from) * e));
    auto r = head.forward(b, h, cache, *ctx);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (int64_t i = 0; i < to - from; ++i) {
      const float* l = r->logits.row<const float>(i);
      const float* g = r->hidden.row<const float>(i);
      logits->insert(logits->end(), l, l + head.n_vocab());
      states->insert(states->end(), g, g + e);
    }
  }
}

TEST_P(MtpHeadTest, LogitsMatchReferences) {
  const std::string name = GetParam();
  auto m = load(kRef + name + "-f32.gguf", true);
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->has_mtp());
  auto head = MtpHead::create(*m);
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  auto tokens = read_ids(kRef + name + ".mtp.tokens.txt");
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  auto hidden = read_npy(kRef + name + ".mtp.hidden.npy");
  ASSERT_TRUE(hidden.ok()) << hidden.status().to_string();
  std::vector<std::pair<std::string, std::string>> refs = {
      {"NumPy", ".mtp.logits.npy"}, {"llama.cpp", ".mtp.llama_logits.npy"}};
  const int64_t n = static_cast<int64_t>(tokens->size()), v = (*head)->n_vocab(),
                e = (*head)->n_embd();
  int n_refs = 0;
  for (const cache::KvStorage storage : {cache::KvStorage::kPaged, cache::KvStorage::kContiguous}) {
    for (const int64_t split : {n, int64_t{2}}) {
      auto cache = head_cache(**head, storage);
      ASSERT_NE(cache, nullptr);
      std::vector<float> logits, states;
      run_head(**head, *cache, *tokens, *hidden, split, &logits, &states);
      ASSERT_EQ(static_cast<int64_t>(logits.size()), n * v);
      for (const auto& [who, suffix] : refs) {
        const std::string path = kRef + name + suffix;
        if (!testing::file_exists(path)) continue;
        ++n_refs;
        auto want = read_npy(path);
        ASSERT_TRUE(want.ok()) << want.status().to_string();
        ASSERT_EQ(want->rows(), n);
        auto want_g = read_npy(kRef + name + (who == "NumPy" ? ".mtp.hidden_out.npy"
                                                               : ".mtp.llama_hidden_out.npy"));
        ASSERT_TRUE(want_g.ok()) << want_g.status().to_string();
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_LT(max_abs_diff(logits.data() + i * v, want->row(i), v), 1e-3f)
              << name << " vs " << who << ", row " << i << ", split " << split;
          EXPECT_EQ(testing::argmax(logits.data() + i * v, v), testing::argmax(want->row(i), v))
              << name << " vs " << who << ", row " << i;
          EXPECT_LT(max_abs_diff(states.data() + i * e, want_g->row(i), e), 1e-4f)
              << name << " state vs " << who << ", row " << i;
        }
      }
    }
  }
  EXPECT_GT(n_refs, 0);
}

// The same on the Vulkan device (every tensor offloaded, the head's K/V in
// host memory as `--spec mtp` keeps it), against the NumPy head.
TEST_P(MtpHeadTest, LogitsOnVulkanMatchReferences) {
  FOLIO_VULKAN_OR_SKIP(device);
  const std::string name = GetParam();
  LoadOptions lo;
  lo.load_mtp = true;
  lo.offload_type = &device->default_buffer_type();
  lo.offload_layers = -1;
  auto m = Model::load(kRef + name + "-f32.gguf", lo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto head = MtpHead::create(**m);
  ASSERT_TRUE(head.ok()) << head.status().to_string();
  auto tokens = read_ids(kRef + name + ".mtp.tokens.txt");
  auto hidden = read_npy(kRef + name + ".mtp.hidden.npy");
  auto want = read_npy(kRef + name + ".mtp.logits.npy");
  ASSERT_TRUE(tokens.ok() && hidden.ok() && want.ok());
  const int64_t n = static_cast<int64_t>(tokens->size()), v = (*head)->n_vocab();
  auto cache = head_cache(**head, cache::KvStorage::kPaged);
  ASSERT_NE(cache, nullptr);
  std::vector<float> logits, states;
  run_head(**head, *cache, *tokens, *hidden, 2, &logits, &states, device);
  ASSERT_EQ(static_cast<int64_t>(logits.size()), n * v);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LT(max_abs_diff(logits.data() + i * v, want->row(i), v), 1e-3f) << name << ", row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, MtpHeadTest,
                         ::testing::Values("tiny-qwen35-mtp", "tiny-qwen35moe-mtp", "tiny-glm4moe"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param.substr(5);  // past "tiny-"
                           return n.substr(0, n.find('-'));
                         });

std::set<std::string> placed(const Model& m) {
  std::set<std::string> s;
  for (const TensorPlacement& p : m.placements()) s.insert(p.name);
  return s;
}

// The MTP blocks load only when asked; a file without them loads the same
// tensors either way, and its head is refused.
TEST(MtpLoad, BlocksLoadOnlyWhenAsked) {
  auto with = load(kRef + "tiny-qwen35-mtp-f32.gguf", true);
  auto without = load(kRef + "tiny-qwen35-mtp-f32.gguf", false);
  ASSERT_NE(with, nullptr);
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(with->config().n_layer, 2);
  EXPECT_EQ(with->config().nextn.n_layer, 1);
  EXPECT_FALSE(without->has_mtp());
  const std::set<std::string> a = placed(*with), b = placed(*without);
  for (const std::string& n : b) EXPECT_EQ(n.find("blk.2."), std::string::npos) << n;
  size_t extra = 0;
  for (const std::string& n : a) {
    if (b.count(n) == 0) {
      EXPECT_EQ(n.rfind("blk.2.", 0), 0u) << n;
      ++extra;
    }
  }
  EXPECT_EQ(extra, a.size() - b.size());
  EXPECT_GT(extra, 0u);
  EXPECT_EQ(placed(*load(kRef + "tiny-glm4moe-f32.gguf", false)).count("blk.3.nextn.eh_proj.weight"), 0u);

  const std::string plain = testing::shared_models_dir() + "/tiny-qwen35-f32.gguf";
  auto p1 = load(plain, true), p0 = load(plain, false);
  ASSERT_NE(p1, nullptr);
  ASSERT_NE(p0, nullptr);
  EXPECT_EQ(placed(*p1), placed(*p0));
  EXPECT_FALSE(p1->has_mtp());
  auto h = MtpHead::create(*p1);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("no MTP blocks"), std::string::npos) << h.status().to_string();
}

// Keeping the final hidden states (every row through the last layer, their
// rows recorded) changes no logit; the rows are those of every position.
TEST(MtpLoad, KeptHiddenStatesChangeNoLogit) {
  for (const std::string file : {"tiny-qwen35-mtp-f32.gguf", "tiny-glm4moe-f32.gguf"}) {
    auto m = load(kRef + file, true);
    ASSERT_NE(m, nullptr);
    const std::vector<int32_t> prompt = testing::layout_test_prompt(m->config().n_vocab);
    cache::KvCacheOptions o;
    o.type = DType::F32;
    o.n_ctx = 64;
    o.n_seq = 1;
    o.max_seqs = 1;
    std::vector<float> plain, kept;
    HiddenStates sink(m->config().n_embd);
    for (const bool keep : {false, true}) {
      auto cache = m->make_cache(o);
      ASSERT_TRUE(cache.ok()) << cache.status().to_string();
      auto ctx = ForwardContext::cpu(2);
      if (keep) ctx->set_hidden_sink(&sink);
      cache::Batch b;
      for (size_t i = 0; i < prompt.size(); ++i)
        b.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size() || i == 3);
      auto r = m->forward(b, **cache, *ctx);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      std::vector<float>& out = keep ? kept : plain;
      out.assign(r->row<const float>(0), r->row<const float>(0) + 2 * m->config().n_vocab);
    }
    EXPECT_EQ(plain, kept) << file;
    EXPECT_EQ(sink.n_rows(), static_cast<int64_t>(prompt.size())) << file;
    for (size_t p = 0; p < prompt.size(); ++p) EXPECT_NE(sink.row(0, static_cast<int64_t>(p)), nullptr);
    EXPECT_EQ(sink.row(0, static_cast<int64_t>(prompt.size())), nullptr);
    sink.drop_before(0, 5);
    EXPECT_EQ(sink.n_rows(), static_cast<int64_t>(prompt.size()) - 5) << file;
    EXPECT_EQ(sink.row(0, 4), nullptr);
  }
}

}  // namespace mtp_head_test
}  // namespace folio::model
