// Several sequences in one batch give exactly the logits each gives alone.
//
// Exact (bit-for-bit), not within a tolerance: every op computes an output
// row from its own input row(s) in an order fixed by the inner dimensions
// only. The mul_mat kernels' tile decomposition never changes an output's
// accumulation order (backend/cpu/drivers/mul_mat_tiled.h), flash attention
// visits each token's own keys in ascending order, norms / rope / glu /
// mul_mat_id work per row. So neither the batch size, nor the interleaving of
// sequences, nor which rows are gathered as outputs may change a value.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace folio::model::testing {
namespace batch_test {

struct Run {
  std::vector<std::vector<float>> rows;  // logits per evaluated token, in feed order
};

// Alone: prompt as one batch, then `steps` greedy tokens one at a time.
Run run_alone(const Model& m, const std::vector<int32_t>& prompt, int steps) {
  auto ctx = ForwardContext::cpu(2);
  auto cache = m.make_cache({256, 1, DType::F32});
  EXPECT_TRUE(cache.ok());
  const int64_t nv = m.config().n_vocab;
  Run r;
  Result<std::vector<float>> pre = eval_all(m, **cache, *ctx, prompt);
  EXPECT_TRUE(pre.ok()) << pre.status().to_string();
  for (size_t i = 0; i < prompt.size(); ++i) {
    r.rows.emplace_back(pre->begin() + static_cast<int64_t>(i) * nv,
                        pre->begin() + static_cast<int64_t>(i + 1) * nv);
  }
  for (int s = 0; s < steps; ++s) {
    const int32_t next = argmax(r.rows.back().data(), nv);
    Result<std::vector<float>> row = eval_one(m, **cache, *ctx, next);
    EXPECT_TRUE(row.ok()) << row.status().to_string();
    r.rows.push_back(*row);
  }
  return r;
}

bool same_bits(const float* a, const std::vector<float>& b) {
  return std::memcmp(a, b.data(), b.size() * sizeof(float)) == 0;
}

void check_model(const std::string& path) {
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  Result<std::unique_ptr<Model>> model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  const int64_t nv = m.config().n_vocab;
  const std::vector<int32_t> a = {507, 481, 283, 258, 479, 259, 269, 298, 258, 387, 271};
  std::vector<int32_t> b;
  for (int i = 0; i < 40; ++i) b.push_back(static_cast<int32_t>((i * 37 + 11) % nv));
  constexpr int kSteps = 4;
  const Run ra = run_alone(m, a, kSteps);
  const Run rb = run_alone(m, b, kSteps);

  auto ctx = ForwardContext::cpu(2);
  auto cache = m.make_cache({256, 2, DType::F32});
  ASSERT_TRUE(cache.ok());
  // Prefill both, interleaved (a0 b0 a1 b1 ... then the rest of b); only
  // every third token and each sequence's last token are outputs, so the
  // output gather is exercised too.
  cache::Batch batch;
  std::vector<std::pair<int, size_t>> out_rows;  // (sequence, position) of each output
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (i < a.size()) {
      const bool out = i % 3 == 0 || i + 1 == a.size();
      batch.add(a[i], static_cast<int32_t>(i), 0, out);
      if (out) out_rows.emplace_back(0, i);
    }
    if (i < b.size()) {
      const bool out = i % 3 == 1 || i + 1 == b.size();
      batch.add(b[i], static_cast<int32_t>(i), 1, out);
      if (out) out_rows.emplace_back(1, i);
    }
  }
  Result<TensorView> logits = m.forward(batch, **cache, *ctx);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  ASSERT_EQ(logits->ne[1], static_cast<int64_t>(out_rows.size()));
  for (size_t j = 0; j < out_rows.size(); ++j) {
    const auto [seq, pos] = out_rows[j];
    const Run& alone = seq == 0 ? ra : rb;
    EXPECT_TRUE(same_bits(logits->row<const float>(static_cast<int64_t>(j)), alone.rows[pos]))
        << "prefill: sequence " << seq << " position " << pos;
  }
  // Decode both sequences together, one token each per batch (b first).
  for (int s = 0; s < kSteps; ++s) {
    const size_t ia = a.size() - 1 + static_cast<size_t>(s),
                 ib = b.size() - 1 + static_cast<size_t>(s);
    batch.clear();
    batch.add(argmax(rb.rows[ib].data(), nv), static_cast<int32_t>(ib + 1), 1, true);
    batch.add(argmax(ra.rows[ia].data(), nv), static_cast<int32_t>(ia + 1), 0, true);
    Result<TensorView> step = m.forward(batch, **cache, *ctx);
    ASSERT_TRUE(step.ok()) << step.status().to_string();
    EXPECT_TRUE(same_bits(step->row<const float>(0), rb.rows[ib + 1]))
        << "decode step " << s << " seq 1";
    EXPECT_TRUE(same_bits(step->row<const float>(1), ra.rows[ia + 1]))
        << "decode step " << s << " seq 0";
  }
}

TEST(MultiSequenceBatch, LlamaExactlyAsAlone) {
  check_model(shared_models_dir() + "/tiny-llama-f32.gguf");
}
TEST(MultiSequenceBatch, Qwen3ExactlyAsAlone) {
  check_model(shared_models_dir() + "/tiny-qwen3-f32.gguf");
}
TEST(MultiSequenceBatch, Qwen3MoeExactlyAsAlone) {
  check_model(local_refdata_dir() + "/tiny-qwen3moe-f32.gguf");
}
TEST(MultiSequenceBatch, Gemma3SlidingWindowExactlyAsAlone) {
  check_model(local_refdata_dir() + "/tiny-gemma3-f32.gguf");
}
TEST(MultiSequenceBatch, GptOssSinksSlidingWindowExactlyAsAlone) {
  check_model(local_refdata_dir() + "/tiny-gpt-oss-f32.gguf");
}
TEST(MultiSequenceBatch, Mistral3TemperatureExactlyAsAlone) {
  check_model(local_refdata_dir() + "/tiny-mistral3-f32.gguf");
}
TEST(MultiSequenceBatch, Glm4MoeSharedExpertExactlyAsAlone) {
  check_model(local_refdata_dir() + "/tiny-glm4moe-f32.gguf");
}

}  // namespace
}  // namespace folio::model::testing
