// Unit tests of the runtime pieces: the activation arena, the contiguous KV
// cache's plan/apply, Model::forward's input checks (a failed forward leaves
// the cache untouched), steady-state memory of the decode loop, the tensor
// list, and config details (gemma3 sliding-window layout, rope per layer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "backend/buffer_type.h"
#include "gguf/gguf_writer.h"
#include "model/arena.h"
#include "model/evaluate.h"
#include "synthetic_model.h"
#include "test_util.h"

namespace folio::model::testing {
namespace runtime_test {

std::unique_ptr<Model> synthetic(const SyntheticModel& s = SyntheticModel::llama()) {
  Result<gguf::GgufFile> f = s.build();
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  Result<std::unique_ptr<Model>> m = Model::from_gguf(std::move(f).value());
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(Arena, BumpsMarksAndConsolidates) {
  Arena a(&host_buffer_type(), 4096);
  Result<void*> p1 = a.alloc(100);
  Result<void*> p2 = a.alloc(100);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p1) % 64, 0u);
  EXPECT_EQ(static_cast<char*>(*p2) - static_cast<char*>(*p1), 128);
  const Arena::Mark m = a.mark();
  Result<void*> p3 = a.alloc(1000);
  a.release(m);
  Result<void*> p4 = a.alloc(1000);
  EXPECT_EQ(*p3, *p4);                 // released memory is reused
  Result<void*> big = a.alloc(10000);  // a second chunk; earlier views stay valid
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(a.n_chunks(), 2u);
  a.reset();  // consolidates into one chunk of the peak size on the next alloc
  ASSERT_TRUE(a.alloc(100).ok());
  EXPECT_EQ(a.n_chunks(), 1u);
  EXPECT_GE(a.capacity(), a.peak());
}

TEST(KvCache, PlanChecksPositionsSequencesAndCapacity) {
  std::unique_ptr<Model> m = synthetic();
  ASSERT_NE(m, nullptr);
  Result<std::unique_ptr<cache::KvCache>> c = m->make_cache({4, 2, DType::F32});
  ASSERT_TRUE(c.ok());
  cache::KvCache& cache = **c;
  cache::KvPlan plan;
  cache::Batch b;
  b.add(1, 0, 0, true);
  b.add(2, 0, 1, true);
  b.add(3, 1, 0, true);
  ASSERT_TRUE(cache.plan(b, plan).ok());
  EXPECT_EQ(plan.slots, (std::vector<int32_t>{0, 4, 1}));
  EXPECT_EQ(plan.kv_len, (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(cache.seq_len(0), 0);  // planning changes nothing
  cache.apply(plan);
  EXPECT_EQ(cache.seq_len(0), 2);
  EXPECT_EQ(cache.seq_len(1), 1);

  b.clear();
  b.add(1, 5, 0, true);  // a gap
  Status st = cache.plan(b, plan);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("position 5, expected 2"), std::string::npos) << st.to_string();
  b.clear();
  b.add(1, 0, 2, true);  // no such sequence
  EXPECT_EQ(cache.plan(b, plan).code(), StatusCode::kInvalidArgument);
  b.clear();
  for (int p = 2; p < 5; ++p) b.add(1, p, 0, true);  // 5 > n_ctx 4
  st = cache.plan(b, plan);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.to_string();
  EXPECT_EQ(cache.seq_len(0), 2);

  ASSERT_TRUE(cache.truncate(0, 1).ok());
  EXPECT_EQ(cache.seq_len(0), 1);
  EXPECT_FALSE(cache.truncate(0, 3).ok());
  cache.clear();
  EXPECT_EQ(cache.seq_len(1), 0);
}

TEST(KvCache, RejectsBadOptions) {
  std::unique_ptr<Model> m = synthetic();
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->make_cache({0, 1, DType::F32}).ok());
  EXPECT_FALSE(m->make_cache({16, 0, DType::F32}).ok());
  EXPECT_EQ(m->make_cache({16, 1, DType::Q4_0}).status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(m->make_cache({16, 1, DType::Q8_0}).ok());  // head_dim 64
}

TEST(Forward, RejectsBadBatchesAndLeavesTheCacheUnchanged) {
  std::unique_ptr<Model> m = synthetic();
  ASSERT_NE(m, nullptr);
  auto ctx = ForwardContext::cpu(1);
  auto cache = m->make_cache({8, 1, DType::F32});
  ASSERT_TRUE(cache.ok());
  cache::Batch b;
  EXPECT_EQ(m->forward(b, **cache, *ctx).status().code(), StatusCode::kInvalidArgument);  // empty
  b.add(1, 0, 0, true);
  b.add(64, 1, 0, true);  // n_vocab is 64
  Result<TensorView> r = m->forward(b, **cache, *ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("token id 64 at batch index 1"), std::string::npos)
      << r.status().to_string();
  EXPECT_EQ((*cache)->seq_len(0), 0);
  b.clear();
  for (int p = 0; p < 9; ++p) b.add(1, p, 0, true);  // over n_ctx
  EXPECT_EQ(m->forward(b, **cache, *ctx).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ((*cache)->seq_len(0), 0);

  // A batch without outputs still fills the cache.
  b.clear();
  b.add(1, 0, 0, false);
  b.add(2, 1, 0, false);
  Result<TensorView> none = m->forward(b, **cache, *ctx);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->ne[1], 0);
  EXPECT_EQ((*cache)->seq_len(0), 2);
}

TEST(Forward, LogitsOnlyForFlaggedTokensEqualFullLogits) {
  std::unique_ptr<Model> m = synthetic();
  ASSERT_NE(m, nullptr);
  auto ctx = ForwardContext::cpu(2);
  auto c1 = m->make_cache({8, 1, DType::F32});
  auto c2 = m->make_cache({8, 1, DType::F32});
  Result<std::vector<float>> all = eval_all(*m, **c1, *ctx, {5, 6, 7, 8});
  ASSERT_TRUE(all.ok());
  cache::Batch b;
  for (int i = 0; i < 4; ++i) b.add(5 + i, i, 0, i == 1 || i == 3);
  Result<TensorView> some = m->forward(b, **c2, *ctx);
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->ne[1], 2);
  EXPECT_EQ(0, std::memcmp(some->row<float>(0), all->data() + 1 * 64, 64 * 4));
  EXPECT_EQ(0, std::memcmp(some->row<float>(1), all->data() + 3 * 64, 64 * 4));
}

TEST(Forward, DecodeLoopReachesASteadyArena) {
  const std::string path = shared_models_dir() + "/tiny-qwen3-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.ok());
  auto ctx = ForwardContext::cpu(2);
  auto cache = (*m)->make_cache({64, 1, DType::F32});
  ASSERT_TRUE(eval_all(**m, **cache, *ctx, {1, 2, 3, 4, 5, 6, 7, 8}).ok());
  ASSERT_TRUE(eval_one(**m, **cache, *ctx, 9).ok());
  ASSERT_TRUE(eval_one(**m, **cache, *ctx, 10).ok());
  const size_t capacity = ctx->arena().capacity();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(eval_one(**m, **cache, *ctx, 11 + i).ok());
  EXPECT_EQ(ctx->arena().capacity(), capacity);  // no new activation memory per token
  EXPECT_EQ(ctx->arena().n_chunks(), 1u);
}

TEST(Forward, EvalSequenceInChunksEqualsOneBatch) {
  const std::string path = shared_models_dir() + "/tiny-llama-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  Result<std::unique_ptr<Model>> m = Model::load(path);
  ASSERT_TRUE(m.ok());
  auto ctx = ForwardContext::cpu(2);
  const std::vector<int32_t> ids = {507, 481, 283, 258, 479, 259, 269, 298, 258, 387};
  std::vector<float> one, chunked;
  for (int64_t nb : {int64_t{512}, int64_t{3}}) {
    auto cache = (*m)->make_cache({16, 1, DType::F32});
    std::vector<float>& out = nb == 512 ? one : chunked;
    Status st = eval_sequence(**m, **cache, *ctx, ids, nb, [&](int64_t, const float* r, int64_t n) {
      out.insert(out.end(), r, r + n * 512);
      return Status();
    });
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  ASSERT_EQ(one.size(), chunked.size());
  EXPECT_EQ(0, std::memcmp(one.data(), chunked.data(), one.size() * 4));  // rows are independent
  auto cache = (*m)->make_cache({4, 1, DType::F32});
  EXPECT_EQ(eval_sequence(**m, **cache, *ctx, ids, 4,
                          [](int64_t, const float*, int64_t) { return Status(); })
                .code(),
            StatusCode::kResourceExhausted);
  const std::vector<int32_t> bad = {1, 512};
  EXPECT_EQ(eval_sequence(**m, **cache, *ctx, bad, 4,
                          [](int64_t, const float*, int64_t) { return Status(); })
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(Weights, EveryTensorListedOnceWithItsConsumer) {
  std::unique_ptr<Model> m = synthetic();
  ASSERT_NE(m, nullptr);
  std::set<std::string> names;
  ModelWeights w;
  int mul_mat = 0;
  ASSERT_TRUE(for_each_tensor(m->config(), w, [&](const TensorSpec& s) {
                EXPECT_TRUE(names.insert(s.name).second) << s.name;
                mul_mat += s.consumer == OpKind::kMulMat;
                return Status();
              }).ok());
  // token_embd, rope_freqs, output_norm, output, 9 + 3 biases + bo per layer
  EXPECT_TRUE(names.count("rope_freqs.weight"));
  EXPECT_TRUE(names.count("blk.0.attn_output.bias"));
  EXPECT_EQ(mul_mat, 8);                   // output, q, k, v, o, gate, up, down
  EXPECT_EQ(m->placements().size(), 12u);  // every tensor of the synthetic file
  ASSERT_EQ(m->buffer_summary().size(), 1u);
  EXPECT_NE(m->buffer_summary()[0].find("CPU (mapped) buffer: 12 tensors"), std::string::npos)
      << m->buffer_summary()[0];
}

TEST(Config, Gemma3SlidingWindowLayoutAndRopePerLayer) {
  const std::string path = local_refdata_dir() + "/tiny-gemma3-f32.gguf";
  if (!file_exists(path)) FAIL() << "model missing: " << path;
  Result<gguf::GgufFile> f = gguf::GgufFile::open(path);
  ASSERT_TRUE(f.ok());
  Result<ModelConfig> c = ModelConfig::from_gguf(*f);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_swa, 16);
  for (int il = 0; il < 6; ++il) EXPECT_EQ(c->is_swa(il), il != 5) << il;
  EXPECT_EQ(c->rope_params(0).freq_base, 10000.0f);
  EXPECT_EQ(c->rope_params(5).freq_base, 1000000.0f);
  EXPECT_EQ(c->rope.mode, RopeMode::kNeox);
  EXPECT_FLOAT_EQ(c->kq_scale(), 0.125f);  // 1 / sqrt(head_dim 64)
  EXPECT_FLOAT_EQ(c->embd_scale, std::sqrt(128.0f));
  EXPECT_TRUE(c->post_norms && c->qk_norm);

  // A per-layer array pattern overrides the period.
  Result<gguf::GgufWriter> w = gguf::GgufWriter::from_file(*f);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->add("gemma3.attention.sliding_window_pattern",
                     gguf::Array::of_bools({true, false, true, false, true, false}))
                  .ok());
  Result<gguf::GgufFile> f2 = gguf::GgufFile::parse(w->to_bytes());
  ASSERT_TRUE(f2.ok());
  Result<ModelConfig> c2 = ModelConfig::from_gguf(*f2);
  ASSERT_TRUE(c2.ok()) << c2.status().to_string();
  for (int il = 0; il < 6; ++il) EXPECT_EQ(c2->is_swa(il), il % 2 == 0) << il;
}

TEST(Config, YarnAndLinearRopeScaling) {
  const std::string dir = local_refdata_dir();
  if (!file_exists(dir + "/tiny-llama-yarn-f32.gguf"))
    FAIL() << "model missing: tiny-llama-yarn-f32.gguf";
  Result<gguf::GgufFile> f = gguf::GgufFile::open(dir + "/tiny-llama-yarn-f32.gguf");
  ASSERT_TRUE(f.ok());
  Result<ModelConfig> c = ModelConfig::from_gguf(*f);
  ASSERT_TRUE(c.ok());
  const RopeParams p = c->rope_params(0);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kYarn);
  EXPECT_FLOAT_EQ(p.freq_scale, 0.25f);
  EXPECT_FLOAT_EQ(p.ext_factor, 1.0f);
  EXPECT_EQ(p.n_ctx_orig, 2048);
  if (!file_exists(dir + "/tiny-llama-rope-linear-f32.gguf"))
    FAIL() << "model missing: tiny-llama-rope-linear-f32.gguf";
  Result<gguf::GgufFile> g = gguf::GgufFile::open(dir + "/tiny-llama-rope-linear-f32.gguf");
  ASSERT_TRUE(g.ok());
  Result<ModelConfig> d = ModelConfig::from_gguf(*g);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rope.scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(d->rope_params(1).freq_scale, 0.5f);
  EXPECT_FLOAT_EQ(d->rope_params(1).ext_factor, 0.0f);
}

}  // namespace
}  // namespace folio::model::testing
