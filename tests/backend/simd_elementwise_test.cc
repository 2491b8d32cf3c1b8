// SIMD element-wise, norm and softmax kernels (avx2/, avx512/) at the edges
// the parity cases do not reach: the vector exp over the whole float range
// (ulp error against exp in double, overflow, gradual underflow, +-inf,
// NaN), activations of huge and infinite inputs, softmax rows with -inf
// masks / a single visible key / nothing visible, and in-place use (dst
// aliasing an input) of every kernel that promises it, and bit-identical
// results for any thread count; and the same bytes on the AVX2 and AVX-512
// tiers for the kernels written once over the traits type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace folio {
namespace simd_elementwise_test {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class SimdElementwise : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (active_isa() < GetParam()) GTEST_SKIP() << "hardware: " << isa_name(GetParam()) << " not available";
  }
  CpuBackend simd_{CpuBackendOptions{GetParam(), false, nullptr}};
  CpuBackend ref_{CpuBackendOptions{Isa::kScalar, true, nullptr}};

  // Runs `op` on the SIMD backend, checking that a kernel of this tier ran.
  void run_simd(const Op& op) {
    const std::string k = simd_.kernel_name(op);
    EXPECT_NE(k.find(isa_name(GetParam())), std::string::npos) << k;
    ASSERT_TRUE(simd_.run(op).ok()) << op.describe();
  }
};

TensorView view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return TensorView::contiguous(v.data(), DType::F32, shape);
}

Op unary_op(UnaryKind kind, std::vector<float>& x, std::vector<float>& y) {
  Op op;
  op.kind = OpKind::kUnary;
  op.params = UnaryParams{kind};
  op.src[0] = view(x, {static_cast<int64_t>(x.size())});
  op.dst = view(y, {static_cast<int64_t>(y.size())});
  return op;
}

// Distance in units in the last place between two finite floats.
int64_t ulp_distance(float a, float b) {
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(ordered(a) - ordered(b));
}

TEST_P(SimdElementwise, ExpIsWithinTwoUlpEverywhere) {
  std::vector<float> x;
  for (float v = -110.0f; v <= 90.0f; v += 0.01337f) x.push_back(v);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-1e-6f, 1e-6f);
  for (int i = 0; i < 200; ++i) x.push_back(small(rng));
  for (float v :
       {0.0f, -0.0f, 88.72f, 88.73f, -87.33f, -103.97f, -104.0f, 1e30f, -1e30f, kInf, -kInf}) {
    x.push_back(v);
  }
  x.push_back(kNaN);
  std::vector<float> y(x.size());
  run_simd(unary_op(UnaryKind::kExp, x, y));
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(y[i], want) << "exp(" << x[i] << ")";
    } else if (want < std::numeric_limits<float>::min()) {
      // Subnormal results: absolute error of a couple of subnormal steps.
      EXPECT_LE(std::fabs(y[i] - want), 2 * std::numeric_limits<float>::denorm_min()) << x[i];
    } else {
      worst = std::max(worst, ulp_distance(y[i], want));
      EXPECT_LE(ulp_distance(y[i], want), 2)
          << "exp(" << x[i] << ") = " << y[i] << ", want " << want;
    }
  }
  RecordProperty("max_ulp", static_cast<int>(worst));
}

TEST_P(SimdElementwise, ActivationsOfExtremeInputsMatchTheReference) {
  std::vector<float> x = {-kInf,  -1e30f, -1e4f, -100.0f, -20.0f, -10.0f, -1e-20f, 0.0f,
                          1e-20f, 10.0f,  20.0f, 100.0f,  1e4f,   1e30f,  kInf,    kNaN};
  for (UnaryKind kind : {UnaryKind::kSilu, UnaryKind::kSigmoid, UnaryKind::kGelu}) {
    std::vector<float> got(x.size()), want(x.size());
    run_simd(unary_op(kind, x, got));
    ASSERT_TRUE(ref_.run(unary_op(kind, x, want)).ok());
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << unary_kind_name(kind) << "(" << x[i] << ")";
      } else if (std::isinf(want[i])) {
        EXPECT_EQ(got[i], want[i]) << unary_kind_name(kind) << "(" << x[i] << ")";
      } else {
        EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-30)
            << unary_kind_name(kind) << "(" << x[i] << ")";
      }
    }
  }
}

TEST_P(SimdElementwise, SoftmaxMaskedRows) {
  // Rows (ne0 = 19, a masked tail in both tiers): all visible, -inf here and
  // there, one visible key, nothing visible, huge logits.
  const int64_t n = 19, rows = 5;
  std::vector<float> x(n * rows), mask(n * rows, 0.0f);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (float& v : x) v = dist(rng);
  for (int64_t i = 0; i < n; i += 3) mask[1 * n + i] = -kInf;
  for (int64_t i = 0; i < n; ++i) mask[2 * n + i] = i == 7 ? 0.0f : -kInf;
  for (int64_t i = 0; i < n; ++i) mask[3 * n + i] = -kInf;
  for (int64_t i = 0; i < n; ++i) x[4 * n + i] = 1e30f * (i % 2 ? 1.0f : -1.0f);
  Op op;
  op.kind = OpKind::kSoftMax;
  op.params = SoftMaxParams{0.5f};
  op.src[0] = view(x, {n, rows});
  op.src[1] = view(mask, {n, rows});
  std::vector<float> got(x.size()), want(x.size());
  op.dst = view(want, {n, rows});
  ASSERT_TRUE(ref_.run(op).ok());
  op.dst = view(got, {n, rows});
  run_simd(op);
  for (int64_t i = 0; i < n * rows; ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-12)
        << "row " << i / n << " col " << i % n;
    if (want[i] == 0.0f) {
      EXPECT_EQ(got[i], 0.0f) << "masked keys give exact zeros";
    }
  }
  EXPECT_EQ(got[2 * n + 7], 1.0f);  // the only visible key

  // In place: dst aliases x.
  op.dst = op.src[0];
  run_simd(op);
  EXPECT_EQ(0, std::memcmp(x.data(), got.data(), x.size() * 4));
}

TEST_P(SimdElementwise, InPlaceNormsAndBinaryOps) {
  const int64_t n = 37, rows = 3;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2, 2);
  std::vector<float> a(n * rows), b(n * rows), w(n);
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  for (float& v : w) v = dist(rng);

  // rms_norm in place equals the out-of-place result.
  {
    std::vector<float> x = a, out(a.size());
    Op op;
    op.kind = OpKind::kRmsNorm;
    op.params = RmsNormParams{1e-6f};
    op.src[0] = view(x, {n, rows});
    op.src[1] = view(w, {n});
    op.dst = view(out, {n, rows});
    run_simd(op);
    op.dst = op.src[0];
    run_simd(op);
    EXPECT_EQ(0, std::memcmp(x.data(), out.data(), x.size() * 4));
  }
  // add_rms_norm writing the sum over a and the norm over b.
  {
    std::vector<float> x = a, y = b, sum(a.size()), out(a.size());
    Op op;
    op.kind = OpKind::kAddRmsNorm;
    op.params = RmsNormParams{1e-5f};
    op.src[0] = view(x, {n, rows});
    op.src[1] = view(y, {n, rows});
    op.src[2] = view(w, {n});
    op.dst = view(out, {n, rows});
    op.dst2 = view(sum, {n, rows});
    run_simd(op);
    op.dst2 = op.src[0];
    op.dst = op.src[1];
    run_simd(op);
    EXPECT_EQ(0, std::memcmp(x.data(), sum.data(), x.size() * 4));
    EXPECT_EQ(0, std::memcmp(y.data(), out.data(), y.size() * 4));
  }
  // add / mul in place, src1 a single column broadcast along rows: exact.
  for (OpKind kind : {OpKind::kAdd, OpKind::kMul}) {
    std::vector<float> x = a, col = {1.5f, -0.25f, 3.0f}, want(a.size());
    Op op;
    op.kind = kind;
    op.src[0] = view(x, {n, rows});
    op.src[1] = view(col, {1, rows});
    op.dst = view(want, {n, rows});
    ASSERT_TRUE(ref_.run(op).ok());
    op.dst = op.src[0];
    run_simd(op);
    EXPECT_EQ(0, std::memcmp(x.data(), want.data(), x.size() * 4)) << op_kind_name(kind);
  }
}

// Rows are split across threads with no shared reduction: 1, 2 and 3
// threads give the same bytes. [1000, 160] is above the kernels' parallel
// thresholds (2^16 / 2^15 elements), so the rows really are split.
TEST_P(SimdElementwise, BitIdenticalForAnyThreadCount) {
  const int64_t n = 1000, rows = 160;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(-3, 3);
  std::vector<float> a(n * rows), b(n * rows), w(n);
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  for (float& v : w) v = dist(rng);
  std::vector<Op> ops(5);
  ops[0].kind = OpKind::kRmsNorm;
  ops[0].params = RmsNormParams{1e-6f};
  ops[0].src[1] = view(w, {n});
  ops[1].kind = OpKind::kSoftMax;
  ops[1].params = SoftMaxParams{0.7f};
  ops[2].kind = OpKind::kGlu;
  ops[2].params = GluParams{GluKind::kSwiGlu, false};
  ops[2].src[1] = view(b, {n, rows});
  ops[3].kind = OpKind::kAdd;
  ops[3].src[1] = view(w, {n});
  ops[4].kind = OpKind::kUnary;
  ops[4].params = UnaryParams{UnaryKind::kGelu};
  ThreadPool pool2(2), pool3(3);
  for (Op& op : ops) {
    op.src[0] = view(a, {n, rows});
    std::vector<float> y1(a.size()), y2(a.size()), y3(a.size());
    op.dst = view(y1, {n, rows});
    run_simd(op);
    op.dst = view(y2, {n, rows});
    ASSERT_TRUE(CpuBackend(CpuBackendOptions{GetParam(), false, &pool2}).run(op).ok());
    op.dst = view(y3, {n, rows});
    ASSERT_TRUE(CpuBackend(CpuBackendOptions{GetParam(), false, &pool3}).run(op).ok());
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4)) << op_kind_name(op.kind);
    EXPECT_EQ(0, std::memcmp(y1.data(), y3.data(), y1.size() * 4)) << op_kind_name(op.kind);
  }
}

// The kernels written once over the traits type (backend/cpu/simd/) give
// the same bytes on every tier: AVX2 keeps AVX-512's 16 lanes in two halves
// and its reduction order. Row lengths around the 16- and 32-element steps
// and their tails.
TEST(SimdTiers, Avx2AndAvx512GiveTheSameBytes) {
  if (active_isa() < Isa::kAvx512) GTEST_SKIP() << "hardware: avx512 not available";
  CpuBackend avx2{CpuBackendOptions{Isa::kAvx2, false, nullptr}};
  CpuBackend avx512{CpuBackendOptions{Isa::kAvx512, false, nullptr}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (int64_t n : {1, 7, 15, 16, 17, 31, 32, 33, 47, 100, 4096}) {
    const int64_t rows = 3;
    std::vector<float> a(n * rows), b(n * rows), w(n);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    for (float& v : w) v = dist(rng);
    std::vector<Op> ops(8);
    ops[0].kind = OpKind::kRmsNorm;
    ops[0].params = RmsNormParams{1e-6f};
    ops[0].src[1] = view(w, {n});
    ops[1].kind = OpKind::kAddRmsNorm;
    ops[1].params = RmsNormParams{1e-5f};
    ops[1].src[1] = view(b, {n, rows});
    ops[1].src[2] = view(w, {n});
    ops[2].kind = OpKind::kSoftMax;
    ops[2].params = SoftMaxParams{0.7f};
    ops[3].kind = OpKind::kGlu;
    ops[3].params = GluParams{GluKind::kSwiGlu, false};
    ops[3].src[1] = view(b, {n, rows});
    ops[4].kind = OpKind::kGlu;
    ops[4].params = GluParams{GluKind::kSwiGluOai, false};
    ops[4].src[1] = view(b, {n, rows});
    ops[5].kind = OpKind::kUnary;
    ops[5].params = UnaryParams{UnaryKind::kGelu};
    ops[6].kind = OpKind::kScale;
    ops[6].params = ScaleParams{1.5f, -0.25f};
    ops[7].kind = OpKind::kMul;
    ops[7].src[1] = view(w, {n});
    for (Op& op : ops) {
      op.src[0] = view(a, {n, rows});
      std::vector<float> y1(a.size()), y2(a.size()), s1(a.size()), s2(a.size());
      EXPECT_NE(avx2.kernel_name(op).find("avx2"), std::string::npos) << avx2.kernel_name(op);
      EXPECT_NE(avx512.kernel_name(op).find("avx512"), std::string::npos);
      op.dst = view(y1, {n, rows});
      if (op.kind == OpKind::kAddRmsNorm) op.dst2 = view(s1, {n, rows});
      ASSERT_TRUE(avx2.run(op).ok()) << op.describe();
      op.dst = view(y2, {n, rows});
      if (op.kind == OpKind::kAddRmsNorm) op.dst2 = view(s2, {n, rows});
      ASSERT_TRUE(avx512.run(op).ok()) << op.describe();
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4))
          << op_kind_name(op.kind) << " n=" << n;
      EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), s1.size() * 4))
          << op_kind_name(op.kind) << " n=" << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, SimdElementwise, ::testing::Values(Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& i) { return isa_name(i.param); });

}  // namespace simd_elementwise_test
}  // namespace folio
