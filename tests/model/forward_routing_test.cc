// A forward routes each op once: one kernel selection per op run, also for
// the hybrid models' fused decode ops, which the model tries first and
// replaces by the unfused path where no backend selects a kernel for them.
#include <gtest/gtest.h>

#include <map>

#include "hybrid_test_util.h"
#include "vulkan_test_device.h"

namespace folio::model::testing {
namespace forward_routing_test {

// Delegates to `inner`, counting kernel selections and runs per op kind.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(Backend* inner) : inner_(inner) {}
  std::string name() const override { return "counting(" + inner_->name() + ")"; }
  KernelHandle select_kernel(const Op& op) const override {
    ++selections[op.kind];
    return inner_->select_kernel(op);
  }
  Status run_kernel(KernelHandle kernel, const Op& op) override {
    ++runs[op.kind];
    return inner_->run_kernel(kernel, op);
  }
  std::string kernel_name_of(KernelHandle kernel) const override {
    return inner_->kernel_name_of(kernel);
  }
  const BufferType& default_buffer_type() const override { return inner_->default_buffer_type(); }

  static uint64_t total(const std::map<OpKind, uint64_t>& m) {
    uint64_t n = 0;
    for (const auto& [kind, count] : m) n += count;
    return n;
  }
  static uint64_t of(const std::map<OpKind, uint64_t>& m, OpKind kind) {
    const auto it = m.find(kind);
    return it == m.end() ? 0 : it->second;
  }

  mutable std::map<OpKind, uint64_t> selections;
  std::map<OpKind, uint64_t> runs;

 private:
  Backend* inner_;
};

// Prefills 12 tokens of one sequence, then decodes 3 more, on `ctx`.
void prefill_and_decode(const Model& m, ForwardContext& ctx) {
  auto cache = test_cache(m, true, 1);
  Result<int> seq = cache->add_sequence();
  ASSERT_TRUE(seq.ok());
  const std::vector<int32_t> t = test_tokens(15, 3, m.config().n_vocab);
  ASSERT_TRUE(eval_all(m, *cache, ctx, {t.begin(), t.begin() + 12}, *seq).ok());
  for (int i = 12; i < 15; ++i) ASSERT_TRUE(eval_one(m, *cache, ctx, t[i], *seq).ok());
}

int recurrent_layers(const Model& m) {
  int n = 0;
  for (int l = 0; l < m.config().n_layer; ++l) n += m.config().is_recurrent(l) ? 1 : 0;
  return n;
}

TEST(ForwardRouting, EachOpIsSelectedOnce) {
  auto m = load_hybrid("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing: " << hybrid_model_path("tiny-qwen35");
  CpuBackend cpu;
  CountingBackend counting(&cpu);
  ForwardContext ctx({&counting});
  prefill_and_decode(*m, ctx);
  ASSERT_GT(ctx.ops_run(), 0u);
  EXPECT_EQ(CountingBackend::total(counting.selections), ctx.ops_run());
  EXPECT_EQ(CountingBackend::total(counting.runs), ctx.ops_run());
  // The 3 decode forwards ran the fused ops, one of each per recurrent layer.
  const auto fused = static_cast<uint64_t>(3 * recurrent_layers(*m));
  ASSERT_GT(fused, 0u);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmConvUpdate), fused);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kGatedDeltaNetUpdate), fused);
}

TEST(ForwardRouting, RefusedFusedOpsAreAskedOnceThenRunUnfused) {
  auto m = load_hybrid("tiny-qwen35");
  if (m == nullptr) FAIL() << "model missing: " << hybrid_model_path("tiny-qwen35");
  CpuBackend cpu;
  RefusingBackend refusing(&cpu, {OpKind::kSsmConvUpdate, OpKind::kGatedDeltaNetUpdate});
  CountingBackend counting(&refusing);
  ForwardContext ctx({&counting});
  prefill_and_decode(*m, ctx);
  const auto fused = static_cast<uint64_t>(3 * recurrent_layers(*m));
  EXPECT_EQ(CountingBackend::of(counting.selections, OpKind::kSsmConvUpdate), fused);
  EXPECT_EQ(CountingBackend::of(counting.selections, OpKind::kGatedDeltaNetUpdate), fused);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmConvUpdate), 0u);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kGatedDeltaNetUpdate), 0u);
  // Every other selection ran exactly one op.
  EXPECT_EQ(CountingBackend::total(counting.runs), ctx.ops_run());
  EXPECT_EQ(CountingBackend::total(counting.selections), ctx.ops_run() + 2 * fused);
}

// Granite's Mamba-2 layers decode with the fused conv and scan updates, one
// of each per layer and decode forward; refused, the unfused path runs.
TEST(ForwardRouting, MambaDecodeRunsTheFusedScanUpdate) {
  auto m = load_hybrid("tiny-granitehybrid");
  if (m == nullptr) FAIL() << "model missing";
  const auto fused = static_cast<uint64_t>(3 * recurrent_layers(*m));
  ASSERT_GT(fused, 0u);
  {
    CpuBackend cpu;
    CountingBackend counting(&cpu);
    ForwardContext ctx({&counting});
    prefill_and_decode(*m, ctx);
    EXPECT_EQ(CountingBackend::total(counting.runs), ctx.ops_run());
    EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmConvUpdate), fused);
    EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmScanUpdate), fused);
  }
  CpuBackend cpu;
  RefusingBackend refusing(&cpu, {OpKind::kSsmScanUpdate});
  CountingBackend counting(&refusing);
  ForwardContext ctx({&counting});
  prefill_and_decode(*m, ctx);
  EXPECT_EQ(CountingBackend::of(counting.selections, OpKind::kSsmScanUpdate), fused);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmScanUpdate), 0u);
  EXPECT_EQ(CountingBackend::of(counting.runs, OpKind::kSsmConvUpdate), fused);
  // Per layer and decode forward: a gather, a plain scan, a scatter.
  EXPECT_EQ(CountingBackend::total(counting.selections), ctx.ops_run() + fused);
}

// A fused op whose state pool lives on a device runs there (or, where the
// device declines it, the unfused path runs there): never on the CPU, the
// context's other backend, which would copy the whole pool there and back
// per layer and step. The Mamba-2 decode's scan stays on the device.
TEST(ForwardRouting, FusedMamba2DecodeStaysOnTheDevice) {
  FOLIO_VULKAN_OR_SKIP(vk);
  Result<std::unique_ptr<Model>> loaded =
      load_offloaded(hybrid_model_path("tiny-granitehybrid"), vk);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const Model& m = **loaded;
  Result<std::unique_ptr<cache::KvCache>> cache =  // one contiguous sequence (id 0)
      m.make_cache(cache_options(DType::F32, 512, 1, /*paged=*/false, vk));
  ASSERT_TRUE(cache.ok()) << cache.status().to_string();

  CpuBackend cpu;
  CountingBackend host(&cpu);
  ForwardContext ctx({vk, &host});
  const std::vector<int32_t> t = test_tokens(15, 3, m.config().n_vocab);
  ASSERT_TRUE(eval_all(m, **cache, ctx, {t.begin(), t.begin() + 12}, 0).ok());
  for (int i = 12; i < 15; ++i) {
    Result<std::vector<float>> logits = eval_one(m, **cache, ctx, t[i], 0);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  }
  EXPECT_EQ(CountingBackend::of(host.selections, OpKind::kSsmScanUpdate), 0u);
  EXPECT_EQ(CountingBackend::of(host.runs, OpKind::kSsmScanUpdate), 0u);
  EXPECT_EQ(CountingBackend::of(host.runs, OpKind::kSsmScan), 0u);  // the plain scan: the device's
}

}  // namespace
}  // namespace folio::model::testing
