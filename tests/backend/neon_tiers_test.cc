// The NEON tiers (64-bit ARM builds only; run under qemu-user by
// scripts/test-arm.sh): detection, kernel routing, and the promise that the
// two tiers differ only in how they compute the same integers. The parity
// harness compares both tiers with the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "core/aligned.h"
#include "core/cpu_features.h"
#include "quant/quant.h"

namespace folio {
namespace neon_tiers_test {

bool has_dotprod() {
  const Isa a = active_isa();
  return a == Isa::kNeonDotprod || a == Isa::kNeonI8mm;
}
bool has_i8mm() { return active_isa() == Isa::kNeonI8mm; }

struct Problem {
  DType t;
  int64_t k, n;
  AlignedPtr w;
  std::vector<float> x;

  Problem(DType t_, int64_t k_, int64_t n_, int64_t m, uint32_t seed) : t(t_), k(k_), n(n_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> wf(static_cast<size_t>(k));
    const size_t row = row_size(t, k);
    w = aligned_alloc_bytes(row * n);
    for (int64_t r = 0; r < n; ++r) {
      for (float& v : wf) v = u(rng);
      quant::quantize_row_ref(t, wf.data(), static_cast<char*>(w.get()) + r * row, k);
    }
    x.resize(static_cast<size_t>(k * m));
    for (float& v : x) v = u(rng);
  }

  Op op(std::vector<float>& y, int64_t first, int64_t count) {
    y.assign(static_cast<size_t>(n * count), 0.0f);
    Op o;
    o.kind = OpKind::kMulMat;
    o.src[0] = TensorView::contiguous(w.get(), t, {k, n});
    o.src[1] = TensorView::contiguous(x.data() + first * k, DType::F32, {k, count});
    o.dst = TensorView::contiguous(y.data(), DType::F32, {n, count});
    return o;
  }
};

// The NEON-tiled types with a reference quantizer (IQ4_NL has none: the
// parity harness covers it with random codes).
constexpr DType kQuant[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,  DType::Q5_1,
                            DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4, DType::NVFP4};

TEST(NeonTiers, DetectedFromHwcap) {
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(f.neon) << f.to_string();
  const Isa want = !f.dotprod ? Isa::kNeon : f.i8mm ? Isa::kNeonI8mm : Isa::kNeonDotprod;
  EXPECT_EQ(detected_isa(), want) << f.to_string();
  EXPECT_FALSE(f.avx2);
  // An ARM machine is on no rung of the x86 ladder.
  EXPECT_LT(active_isa(), Isa::kAvx2);
}

TEST(NeonTiers, RoutesEachOpToItsTier) {
  CpuBackend neon(CpuBackendOptions{Isa::kNeon, false, nullptr});
  for (DType t : kQuant) {
    Problem p(t, 256, 4, 1, 1);
    std::vector<float> y;
    EXPECT_EQ(neon.kernel_name(p.op(y, 0, 1)), "mul_mat.quant.neon") << dtype_name(t);
  }
  Problem f16(DType::F16, 64, 4, 1, 1);
  std::vector<float> y;
  EXPECT_EQ(neon.kernel_name(f16.op(y, 0, 1)), "mul_mat.float.neon");
  // No integer tile: dequantized per block, against F32 activations.
  Problem q3(DType::Q8_0, 256, 4, 1, 1);
  Op q3_op = q3.op(y, 0, 1);
  // Routing only (the bytes are never read; Q3_K has no reference quantizer).
  q3_op.src[0] = TensorView::contiguous(q3.w.get(), DType::Q3_K, {256, 4});
  EXPECT_EQ(neon.kernel_name(q3_op), "mul_mat.float.neon");
  if (!has_dotprod()) return;  // the cortex-a72 run: the neon tier alone
  CpuBackend dot(CpuBackendOptions{Isa::kNeonDotprod, false, nullptr});
  Problem q4(DType::Q4_0, 64, 4, 1, 1);
  EXPECT_EQ(dot.kernel_name(q4.op(y, 0, 1)), "mul_mat.quant.neon_dotprod");
  EXPECT_EQ(dot.kernel_name(f16.op(y, 0, 1)), "mul_mat.float.neon");
  if (!has_i8mm()) return;
  CpuBackend mmla(CpuBackendOptions{Isa::kNeonI8mm, false, nullptr});
  EXPECT_EQ(mmla.kernel_name(q4.op(y, 0, 1)), "mul_mat.quant.neon_i8mm");
  EXPECT_EQ(mmla.kernel_name(f16.op(y, 0, 1)), "mul_mat.float.neon");
}

// The neon tier runs on a CPU without the dot-product instructions (the
// cortex-a72 run: an SDOT in its code would be an illegal instruction) and
// matches the reference.
TEST(NeonTiers, NeonTierMatchesTheReference) {
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  CpuBackend neon(CpuBackendOptions{Isa::kNeon, false, nullptr});
  for (DType t : kQuant) {
    Problem p(t, 512, 37, 3, 7);
    std::vector<float> a, b;
    ASSERT_TRUE(neon.run(p.op(a, 0, 3)).ok());
    ASSERT_TRUE(ref.run(p.op(b, 0, 3)).ok());
    double err = 0, norm = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err += (a[i] - b[i]) * (a[i] - b[i]);
      norm += b[i] * b[i];
    }
    EXPECT_LT(err / norm, 5e-4) << dtype_name(t);
  }
}

// SDOT and the widening multiply give the same integers, and the tiles the
// same float steps: the two tiers' outputs are the same bits, for decode and
// prefill shapes (tile remainders included) and whatever the batch around a
// row.
TEST(NeonTiers, DotprodTierGivesTheBitsOfTheNeonTier) {
  if (!has_dotprod()) GTEST_SKIP() << "hardware: no dot-product instructions (FEAT_DotProd)";
  CpuBackend neon(CpuBackendOptions{Isa::kNeon, false, nullptr});
  CpuBackend dot(CpuBackendOptions{Isa::kNeonDotprod, false, nullptr});
  for (DType t : kQuant) {
    Problem p(t, 512, 37, 13, 5);
    std::vector<float> all, a, b;
    ASSERT_TRUE(dot.run(p.op(all, 0, 13)).ok());
    for (int64_t m : {1, 2, 13}) {
      ASSERT_TRUE(neon.run(p.op(a, 0, m)).ok());
      ASSERT_TRUE(dot.run(p.op(b, 0, m)).ok());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(t) << " m " << m;
      EXPECT_EQ(0, std::memcmp(b.data(), all.data(), b.size() * 4)) << dtype_name(t) << " m " << m;
    }
  }
}

// SMMLA gives the integers SDOT gives: the i8mm tier's outputs are the
// dotprod tier's bits, for full 2 x 2 tiles (m even), a lone activation row
// and odd weight row counts (the tiles without SMMLA), in mul_mat and in
// mul_mat_id (whose expert groups tile the same way).
TEST(NeonTiers, I8mmTierGivesTheBitsOfTheDotprodTier) {
  if (!has_i8mm()) GTEST_SKIP() << "hardware: no 8-bit matrix multiply (FEAT_I8MM)";
  CpuBackend dot(CpuBackendOptions{Isa::kNeonDotprod, false, nullptr});
  CpuBackend mmla(CpuBackendOptions{Isa::kNeonI8mm, false, nullptr});
  for (DType t : kQuant) {
    for (int64_t n : {int64_t{37}, int64_t{16}}) {
      Problem p(t, 512, n, 13, 9);
      for (int64_t m : {1, 2, 13}) {
        std::vector<float> a, b;
        ASSERT_TRUE(dot.run(p.op(a, 0, m)).ok());
        const Op o = p.op(b, 0, m);
        EXPECT_EQ(mmla.kernel_name(o), "mul_mat.quant.neon_i8mm");
        ASSERT_TRUE(mmla.run(o).ok());
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4))
            << dtype_name(t) << " n " << n << " m " << m;
      }
    }
  }
}

// The NEON activation quantizers write the reference's bytes: random rows,
// rows with exact .5 ties, zero blocks, a NaN, an infinity, a lone maximum
// of either sign.
TEST(NeonTiers, ActivationQuantizersGiveTheReferenceBytes) {
  constexpr int64_t k = 1024;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3, 3);
  for (int variant = 0; variant < 8; ++variant) {
    std::vector<float> x(k);
    for (float& v : x) v = u(rng);
    if (variant == 1) {
      for (int64_t i = 0; i < k; ++i) x[i] = 0.5f * static_cast<float>(i % 255 - 127);  // ties
    }
    if (variant == 2) std::fill(x.begin(), x.begin() + 300, 0.0f);  // zero blocks
    if (variant == 3) x[5] = std::numeric_limits<float>::quiet_NaN();
    if (variant == 4) x[40] = std::numeric_limits<float>::infinity();
    if (variant == 5) x[300] = -50.0f;
    if (variant == 6) {
      x[700] = 50.0f;
      x[701] = -50.0f;  // a tie for the maximum magnitude: the first wins
    }
    if (variant == 7) {
      for (float& v : x) v *= 1e-30f;  // tiny scales
    }
    for (cpu::ActFormat f : {cpu::ActFormat::kQ8_0, cpu::ActFormat::kQ8_K}) {
      const size_t bytes = cpu::act_row_bytes(f, k);
      std::vector<unsigned char> want(bytes, 0xAA), got(bytes, 0xAA);
      cpu::convert_act_row(f, x.data(), want.data(), k);
      if (f == cpu::ActFormat::kQ8_0) {
        cpu::quantize_act_q8_0_neon(x.data(), got.data(), k);
      } else {
        cpu::quantize_act_q8_k_neon(x.data(), got.data(), k);
      }
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes))
          << "variant " << variant << (f == cpu::ActFormat::kQ8_0 ? " q8_0" : " q8_K");
    }
  }
}

}  // namespace
}  // namespace folio
