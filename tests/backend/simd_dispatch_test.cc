// Runtime dispatch: the CPU backend runs the highest kernel tier that the
// ISA limit (FOLIO_ISA / --isa, here set_isa_limit) and the machine allow,
// for every tier this machine has; results under each limit agree with the
// reference; ops without optimised kernels fall back to the reference.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "quant/quant.h"

namespace folio {
namespace simd_dispatch_test {

// Sets the process-wide ISA limit for one scope.
class IsaLimit {
 public:
  explicit IsaLimit(Isa limit) { set_isa_limit(limit); }
  ~IsaLimit() { set_isa_limit(saved_); }

 private:
  Isa saved_ = active_isa();
};

struct MulMat {
  std::vector<uint8_t> w;
  std::vector<float> x, y;
  Op op;

  MulMat(DType wt, int64_t k, int64_t n, int64_t m) {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> wf(static_cast<size_t>(k * n));
    for (float& v : wf) v = dist(rng);
    w.resize(row_size(wt, k) * n);
    for (int64_t r = 0; r < n; ++r) {
      quant::quantize_row_ref(wt, wf.data() + r * k, w.data() + r * row_size(wt, k), k);
    }
    x.resize(static_cast<size_t>(k * m));
    for (float& v : x) v = dist(rng);
    y.assign(static_cast<size_t>(n * m), 0.0f);
    op.kind = OpKind::kMulMat;
    op.src[0] = TensorView::contiguous(w.data(), wt, {k, n});
    op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, m});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {n, m});
  }
};

// The kernel each limit should pick for mul_mat with weights `wt`.
std::string expected_kernel(Isa limit, DType wt) {
  if (limit == Isa::kScalar) return "mul_mat.ref";
  const bool int_dot = wt != DType::F32 && wt != DType::F16 && wt != DType::BF16;
  const bool avx512 = limit >= Isa::kAvx512 && (!int_dot || cpu_features().avx512vnni);
  return "mul_mat." + std::string(dtype_name(wt)) + (avx512 ? ".avx512" : ".avx2");
}

double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref += static_cast<double>(b[i]) * b[i];
  }
  return err / ref;
}

TEST(SimdDispatch, IsaLimitPicksTheTierAndResultsAgree) {
  const Isa machine = detected_isa();
  for (DType wt : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    MulMat ref_mm(wt, 512, 9, 3);
    ASSERT_TRUE(CpuBackend(CpuBackendOptions{Isa::kScalar, true, nullptr}).run(ref_mm.op).ok());
    for (Isa limit : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
      if (limit > machine) continue;
      IsaLimit scoped(limit);
      EXPECT_EQ(active_isa(), limit);
      CpuBackend backend;  // default options: everything the limit allows
      MulMat mm(wt, 512, 9, 3);
      EXPECT_EQ(backend.kernel_name(mm.op), expected_kernel(limit, wt))
          << "limit " << isa_name(limit) << ", " << dtype_name(wt);
      ASSERT_TRUE(backend.run(mm.op).ok());
      // Float weights: float accumulation; quantized: q8 activations.
      const double bound = wt == DType::F32 || wt == DType::F16 ? 1e-10 : 5e-4;
      EXPECT_LE(nmse(mm.y, ref_mm.y), bound) << isa_name(limit) << ", " << dtype_name(wt);
    }
  }
}

TEST(SimdDispatch, BackendOptionCapsBelowTheLimit) {
  if (detected_isa() < Isa::kAvx512) GTEST_SKIP() << "hardware: needs two SIMD tiers";
  IsaLimit scoped(Isa::kAmx);
  MulMat mm(DType::F32, 64, 4, 2);
  EXPECT_EQ(CpuBackend(CpuBackendOptions{Isa::kAvx2, false, nullptr}).kernel_name(mm.op),
            "mul_mat.f32.avx2");
  EXPECT_EQ(CpuBackend(CpuBackendOptions{Isa::kAvx512, false, nullptr}).kernel_name(mm.op),
            "mul_mat.f32.avx512");
  EXPECT_EQ(CpuBackend(CpuBackendOptions{Isa::kAvx512, true, nullptr}).kernel_name(mm.op),
            "mul_mat.ref");
}

TEST(SimdDispatch, UnsupportedVariantsFallBackToTheReference) {
  IsaLimit scoped(detected_isa());
  CpuBackend backend;
  // A weight type without SIMD kernels.
  MulMat q8k(DType::Q8_K, 256, 2, 1);
  EXPECT_EQ(backend.kernel_name(q8k.op), "mul_mat.ref");
  // A unary kind the SIMD kernels do not implement.
  std::vector<float> x(8, 0.5f), y(8);
  Op op;
  op.kind = OpKind::kUnary;
  op.params = UnaryParams{UnaryKind::kGeluErf};
  op.src[0] = TensorView::contiguous(x.data(), DType::F32, {8});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {8});
  EXPECT_EQ(backend.kernel_name(op), "unary.ref");
  op.params = UnaryParams{UnaryKind::kSilu};
  if (detected_isa() >= Isa::kAvx2) {
    EXPECT_NE(backend.kernel_name(op), "unary.ref");
  }
}

}  // namespace
}  // namespace folio
