// OpProfile: totals per kernel and per op kind, merging, ordering; and a
// ForwardContext timing exactly the ops it runs into the profile it is given.
#include "model/op_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "model/forward_context.h"

namespace folio::model {
namespace op_profile_test {

using std::chrono::nanoseconds;

TEST(OpProfile, TotalsPerKernelAndPerKind) {
  OpProfile p;
  EXPECT_TRUE(p.empty());
  p.add("mul_mat.q4_0.avx512 [64, 64]", OpKind::kMulMat, nanoseconds(100));
  p.add("mul_mat.q4_0.avx512 [64, 256]", OpKind::kMulMat, nanoseconds(300));
  p.add("mul_mat.q4_0.avx512 [64, 64]", OpKind::kMulMat, nanoseconds(50));
  p.add("rms_norm.avx512", OpKind::kRmsNorm, nanoseconds(500));
  p.add("rope.avx512", OpKind::kRope, nanoseconds(7));
  EXPECT_FALSE(p.empty());
  EXPECT_DOUBLE_EQ(p.total_ns(), 957);

  const std::vector<OpProfileRow> k = p.by_kernel();
  ASSERT_EQ(k.size(), 4u);
  EXPECT_EQ(k[0].name, "rms_norm.avx512");
  EXPECT_EQ(k[1].name, "mul_mat.q4_0.avx512 [64, 256]");
  EXPECT_EQ(k[2].name, "mul_mat.q4_0.avx512 [64, 64]");
  EXPECT_EQ(k[2].count, 2u);
  EXPECT_DOUBLE_EQ(k[2].ns, 150);
  EXPECT_EQ(k[3].name, "rope.avx512");

  const std::vector<OpProfileRow> kinds = p.by_kind();
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].name, "rms_norm");
  EXPECT_EQ(kinds[1].name, "mul_mat");  // both shapes together
  EXPECT_EQ(kinds[1].count, 3u);
  EXPECT_DOUBLE_EQ(kinds[1].ns, 450);
  EXPECT_EQ(kinds[2].name, "rope");
  EXPECT_EQ(kinds[2].count, 1u);
}

TEST(OpProfile, MergeAddsAndClearEmpties) {
  OpProfile a, b;
  a.add("add.avx512", OpKind::kAdd, nanoseconds(10));
  b.add("add.avx512", OpKind::kAdd, nanoseconds(5));
  b.add("glu.avx512", OpKind::kGlu, nanoseconds(1));
  a.merge(b);
  const std::vector<OpProfileRow> k = a.by_kind();
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "add");
  EXPECT_EQ(k[0].count, 2u);
  EXPECT_DOUBLE_EQ(k[0].ns, 15);
  EXPECT_EQ(k[1].name, "glu");
  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a.by_kind().empty());
}

// Every op the context runs lands in the profile set, under its kind; none
// after the profile is unset.
TEST(OpProfile, ContextTimesEveryOpItRuns) {
  auto ctx = ForwardContext::cpu(2);
  std::vector<float> a(64, 1.0f), w(64, 2.0f);
  const TensorView x = TensorView::contiguous(a.data(), DType::F32, {64, 1, 1, 1});
  const TensorView g = TensorView::contiguous(w.data(), DType::F32, {64, 1, 1, 1});
  OpProfile p;
  OpProfile* const outer = ctx->set_profile(&p);  // FOLIO_PROFILE's, if set
  const uint64_t before = ctx->ops_run();
  ctx->begin();
  const TensorView n = ctx->rms_norm(x, g, 1e-6f);
  const TensorView s = ctx->add(n, x);
  (void)ctx->mul(s, g);
  ASSERT_TRUE(ctx->status().ok()) << ctx->status().to_string();
  const uint64_t ran = ctx->ops_run() - before;
  EXPECT_EQ(ctx->set_profile(outer), &p);
  (void)ctx->add(x, x);  // not profiled

  uint64_t calls = 0;
  std::vector<std::string> kinds;
  for (const OpProfileRow& r : p.by_kind()) {
    calls += r.count;
    kinds.push_back(r.name);
    EXPECT_GT(r.ns, 0) << r.name;
  }
  EXPECT_EQ(calls, ran);
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"add", "mul", "rms_norm"}));
}

}  // namespace op_profile_test
}  // namespace folio::model
