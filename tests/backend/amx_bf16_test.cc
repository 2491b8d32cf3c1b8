// The AMX BF16 mul_mat (amx/mul_mat_bf16_amx.cc) on the real tile
// instructions: TDPBF16PS itself against the scalar model of
// amx/bf16_tile_model.h (random tiles over a wide exponent range, denormal
// products and accumulators), the kernel's every output against the model,
// its accuracy against the double reference, and the routing (every BF16
// mul_mat on this tier, decode included). The same for F16 weights on the
// tiles (amx/f16_tile_model.h: the exact split of every F16 value, the
// model's accuracy on any x86 CPU, the kernel against the model on AMX).
// amx_emulated_test.cc runs the same kernel cases on the model where the
// CPU has no AMX.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend/amx_bf16_cases.h"
#include "backend/cpu/amx/bf16_tile_model.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/amx/kernels.h"
#include "backend/cpu/amx/tiles.h"
#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/target.h"

namespace folio {
namespace amx_bf16_test {

using cpu::amx_bf16::act_to_bf16;
using cpu::amx_bf16::dpbf16ps;

bool has_amx_bf16() {
  return active_isa() == Isa::kAmx && cpu_features().amx_bf16;
}

// c (16 x 16 f32) after one TDPBF16PS of a (16 rows x 16 pairs) and b (16
// pair rows x 16 columns, VNNI order).
FOLIO_TARGET_AMX void tile_product(const uint16_t* a, const uint16_t* b, float* c) {
  cpu::amx::TileConfig cfg;
  for (int t = 0; t < 3; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  cpu::amx::memory_barrier();
  _tile_loadconfig(&cfg);
  _tile_loadd(2, c, 64);
  _tile_loadd(0, a, 64);
  _tile_loadd(1, b, 64);
  _tile_dpbf16ps(2, 0, 1);
  _tile_stored(2, c, 64);
  _tile_release();
  cpu::amx::memory_barrier();
}

// Values spread over 2^-80 .. 2^20 with both signs, some zero: products
// and sums that cancel, underflow to denormals and round at every step.
uint16_t wide_bf16(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> e(-80, 20), zero(0, 30);
  if (zero(rng) == 0) return 0;
  return act_to_bf16(std::ldexp(u(rng), e(rng)));
}

TEST(AmxBf16, TileProductIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(5);
  int64_t bad = 0, total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    alignas(64) uint16_t a[16 * 32], b[16 * 32];
    alignas(64) float c[256], want[256];
    const bool wide = trial % 2 == 1;
    std::uniform_real_distribution<float> u(-1, 1);
    for (int i = 0; i < 16 * 32; ++i) {
      a[i] = wide ? wide_bf16(rng) : act_to_bf16(u(rng));
      b[i] = wide ? wide_bf16(rng) : act_to_bf16(u(rng));
    }
    for (int i = 0; i < 256; ++i) {
      c[i] = trial % 3 == 0 ? 0.0f : wide ? cpu::amx_bf16::bf16_operand(wide_bf16(rng)) : u(rng);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 16; ++n) {
        uint16_t col[32];
        for (int p = 0; p < 16; ++p) {
          col[2 * p] = b[p * 32 + 2 * n];
          col[2 * p + 1] = b[p * 32 + 2 * n + 1];
        }
        want[m * 16 + n] = dpbf16ps(c[m * 16 + n], a + m * 32, col, 16);
      }
    }
    tile_product(a, b, c);
    for (int i = 0; i < 256; ++i) {
      ++total;
      if (std::memcmp(&c[i], &want[i], 4) != 0 && bad++ < 3) {
        ADD_FAILURE() << "trial " << trial << " element " << i << ": tile " << c[i] << ", model "
                      << want[i];
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << total;
}

TEST(AmxBf16, MulMatIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_bf16_amx);
}

TEST(AmxBf16, MulMatIdIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_bf16_amx);
}

// The accuracy contract: BF16 activations cost an NMSE near 2e-6 on
// uniform data against the double reference (f32 activations), within the
// BF16 mul_mat tolerance (5e-4) by far; and the AVX-512 kernel (f32
// activations) is much closer.
TEST(AmxBf16, NmseAgainstTheReference) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(47);
  const int64_t k = 4096, n = 64, m = 48;
  const std::vector<uint16_t> w = amx_bf16_cases::bf16_weights(k * n, rng);
  const std::vector<float> x = amx_bf16_cases::activations(k * m, rng);
  std::vector<float> y(static_cast<size_t>(n * m));
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = TensorView::contiguous(const_cast<uint16_t*>(w.data()), DType::BF16, {k, n});
  op.src[1] = TensorView::contiguous(const_cast<float*>(x.data()), DType::F32, {k, m});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {n, m});
  ASSERT_TRUE(cpu::mul_mat_bf16_amx(op, KernelContext{}).ok());
  double err = 0, ref = 0;
  for (int64_t c = 0; c < m; ++c) {
    for (int64_t r = 0; r < n; ++r) {
      double d = 0;
      for (int64_t i = 0; i < k; ++i) {
        d += static_cast<double>(bf16_to_f32(w[static_cast<size_t>(r * k + i)])) *
             x[static_cast<size_t>(c * k + i)];
      }
      const double e = y[static_cast<size_t>(c * n + r)] - d;
      err += e * e;
      ref += d * d;
    }
  }
  const double nmse = err / ref;
  EXPECT_LT(nmse, 1e-5);
  EXPECT_GT(nmse, 1e-9) << "the activations were not rounded to BF16";
}

// Every BF16 mul_mat goes to the tiles on this tier (one activation row
// too), and below it to the AVX-512 kernel.
TEST(AmxBf16, RoutesEveryBatchSize) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  CpuBackend amx(CpuBackendOptions{Isa::kAmx, false, nullptr});
  CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
  std::vector<uint16_t> w(64 * 32);
  std::vector<float> x(64 * 512), y(32 * 512);
  for (int64_t m : {1, 2, 16, 512}) {
    Op op;
    op.kind = OpKind::kMulMat;
    op.src[0] = TensorView::contiguous(w.data(), DType::BF16, {64, 32});
    op.src[1] = TensorView::contiguous(x.data(), DType::F32, {64, m});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {32, m});
    EXPECT_EQ(amx.kernel_name(op), "mul_mat.bf16.amx") << m;
    EXPECT_EQ(avx512.kernel_name(op), "mul_mat.bf16.avx512") << m;
  }
}

// Every finite F16 value is exactly the sum of its two BF16 parts; an
// infinity or a NaN leaves a NaN remainder.
TEST(AmxF16, WeightSplitIsExact) {
  int64_t bad = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const cpu::amx_f16::Split s = cpu::amx_f16::split_weight(static_cast<uint16_t>(h));
    const float hi = bf16_to_f32(s.hi), lo = bf16_to_f32(s.lo);
    if (!std::isfinite(f)) {
      bad += !std::isnan(lo);
    } else {
      // Both parts are normal BF16 (or zero): the tile reads them as they are.
      bad += hi + lo != f || cpu::amx_bf16::bf16_operand(s.lo) != lo ||
             cpu::amx_bf16::bf16_operand(s.hi) != hi;
    }
  }
  EXPECT_EQ(bad, 0);
}

// An activation's two BF16 parts leave at most 2^-16 of it (normal range).
TEST(AmxF16, ActivationSplitLeavesLittle) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> e(-60, 60);
  for (int i = 0; i < 100000; ++i) {
    const float x = std::ldexp(u(rng), e(rng));
    const cpu::amx_f16::Split s = cpu::amx_f16::split_activation(x);
    const double rest = static_cast<double>(x) - bf16_to_f32(s.hi) - bf16_to_f32(s.lo);
    ASSERT_LE(std::fabs(rest), std::ldexp(std::fabs(static_cast<double>(x)), -16)) << x;
  }
  const cpu::amx_f16::Split inf = cpu::amx_f16::split_activation(INFINITY);
  EXPECT_TRUE(std::isinf(bf16_to_f32(inf.hi)) && inf.lo == 0);
}

// NMSE of the model (the kernel's exact outputs) against the double
// reference, F16 weights and f32 activations, on any x86 CPU: near 1e-11,
// far inside the F16 mul_mat tolerance (1e-5) and below what F16-rounded
// activations (llama.cpp's F16 path) cost, which is checked alongside.
TEST(AmxF16, ModelNmseAgainstTheReference) {
  std::mt19937 rng(53);
  const int64_t k = 1024, n = 32, m = 16;
  const std::vector<uint16_t> w = amx_bf16_cases::weights(DType::F16, k * n, rng);
  const std::vector<float> x = amx_bf16_cases::activations(k * m, rng);
  double err = 0, err_f16 = 0, ref = 0;
  for (int64_t c = 0; c < m; ++c) {
    for (int64_t r = 0; r < n; ++r) {
      double d = 0, d_f16 = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double wv = f16_to_f32(w[static_cast<size_t>(r * k + i)]);
        const float xv = x[static_cast<size_t>(c * k + i)];
        d += wv * xv;
        d_f16 += wv * f16_to_f32(f32_to_f16(xv));
      }
      const double e =
          cpu::amx_f16::dot_model(w.data() + r * k, x.data() + c * k, k) - d;
      err += e * e;
      err_f16 += (d_f16 - d) * (d_f16 - d);
      ref += d * d;
    }
  }
  EXPECT_LT(err / ref, 1e-9);
  EXPECT_LT(err / ref, err_f16 / ref / 100) << "not below F16 activations' cost";
  std::printf("[ nmse ] F16 tile model %.3g, F16-rounded activations %.3g\n", err / ref,
              err_f16 / ref);
}

TEST(AmxF16, MulMatIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_f16_amx, DType::F16);
}

// The kernel on the tiles against the double reference (f32 activations):
// the model's accuracy, as the real instructions give it.
TEST(AmxF16, NmseAgainstTheReference) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(59);
  const int64_t k = 4096, n = 64, m = 48;
  const std::vector<uint16_t> w = amx_bf16_cases::weights(DType::F16, k * n, rng);
  const std::vector<float> x = amx_bf16_cases::activations(k * m, rng);
  std::vector<float> y(static_cast<size_t>(n * m));
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = TensorView::contiguous(const_cast<uint16_t*>(w.data()), DType::F16, {k, n});
  op.src[1] = TensorView::contiguous(const_cast<float*>(x.data()), DType::F32, {k, m});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {n, m});
  ASSERT_TRUE(cpu::mul_mat_f16_amx(op, KernelContext{}).ok());
  double err = 0, ref = 0;
  for (int64_t c = 0; c < m; ++c) {
    for (int64_t r = 0; r < n; ++r) {
      double d = 0;
      for (int64_t i = 0; i < k; ++i) {
        d += static_cast<double>(f16_to_f32(w[static_cast<size_t>(r * k + i)])) *
             x[static_cast<size_t>(c * k + i)];
      }
      const double e = y[static_cast<size_t>(c * n + r)] - d;
      err += e * e;
      ref += d * d;
    }
  }
  EXPECT_LT(err / ref, 1e-9);
  std::printf("[ nmse ] F16 tiles vs the double reference: %.3g\n", err / ref);
}

TEST(AmxF16, MulMatIdIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16_amx, DType::F16);
}

}  // namespace amx_bf16_test
}  // namespace folio
