// The AVX-512 F16 rows kernel (amx/mul_mat_f16_rows.cc) against its scalar
// reference, amx/f16_tile_model.h's dot_model, bit for bit: the shared
// tile-kernel shapes, every M from 1 to 40 with K tails and N not a
// multiple of 16, mul_mat_id, and data that reaches the flushing (F16
// denormal weights, denormal and tiny activations whose products and sums
// underflow, zeros of both signs, infinities). On AMX the same problems
// through the tile kernel give the same bits, and the two combined
// (mul_mat_f16_amx_combined) give a column the same bits alone, in 5 and
// in 40 columns. The same holds for the kernels of the F16_X16 layout
// (amx/mul_mat_f16_x16.cc), the ones the amx tier routes F16 weights to.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/amx_bf16_cases.h"
#include "backend/cpu/amx/f16_tile_model.h"
#include "backend/cpu/amx/kernels.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/cpu_features.h"

namespace folio {
namespace amx_f16_rows_test {

bool has_avx512() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.f16c;
}

bool has_amx_bf16() {
  return active_isa() == Isa::kAmx && cpu_features().amx_bf16;
}

// Equal bits, or both NaN (a NaN's payload is not part of the contract).
bool same(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0 || (std::isnan(a) && std::isnan(b));
}

// F16 weights: mostly uniform in (-1, 1), some denormal, some zeros of
// either sign; `inf` adds an infinity now and then.
std::vector<uint16_t> wide_weights(int64_t count, std::mt19937& rng, bool inf) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> kind(0, 199), mant(1, 0x3ff);
  std::vector<uint16_t> w(static_cast<size_t>(count));
  for (uint16_t& v : w) {
    const int t = kind(rng);
    if (t < 10) {
      v = static_cast<uint16_t>(mant(rng) | (t % 2 ? 0x8000 : 0));  // denormal
    } else if (t < 12) {
      v = t == 10 ? 0 : 0x8000;
    } else if (t == 12 && inf) {
      v = 0x7c00;
    } else {
      v = f32_to_f16(u(rng));
    }
  }
  return w;
}

// Activations over 2^-140 .. 2^20 (f32 denormals included), with zeros of
// both signs: products and chain sums underflow and cancel.
std::vector<float> wide_activations(int64_t count, std::mt19937& rng, bool inf) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> e(-140, 20), kind(0, 99);
  std::vector<float> x(static_cast<size_t>(count));
  for (float& v : x) {
    const int t = kind(rng);
    v = t == 0 ? 0.0f : t == 1 ? -0.0f : t == 2 && inf ? -INFINITY : std::ldexp(u(rng), e(rng));
  }
  return x;
}

struct Problem {
  int64_t k, n, m;
  std::vector<uint16_t> w;  // [n, k] F16
  std::vector<float> x;     // [m, k]
};

Problem problem(int64_t k, int64_t n, int64_t m, std::mt19937& rng, bool wide, bool inf = false) {
  Problem p{k, n, m, {}, {}};
  p.w = wide ? wide_weights(k * n, rng, inf) : amx_bf16_cases::weights(DType::F16, k * n, rng);
  p.x = wide ? wide_activations(k * m, rng, inf) : amx_bf16_cases::activations(k * m, rng);
  return p;
}

// Activation row 0 near the bottom of the normal range: its products and
// chain sums are denormal, so every flush shows in the output.
void make_row_tiny(Problem& p, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int> tiny(-125, -110);
  for (int64_t i = 0; i < p.k; ++i) p.x[static_cast<size_t>(i)] = std::ldexp(u(rng), tiny(rng));
}

Op mul_mat_op(Problem& p, std::vector<float>& y) {
  y.assign(static_cast<size_t>(p.n * p.m), -7.0f);
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = TensorView::contiguous(p.w.data(), DType::F16, {p.k, p.n});
  op.src[1] = TensorView::contiguous(p.x.data(), DType::F32, {p.k, p.m});
  op.dst = TensorView::contiguous(y.data(), DType::F32, {p.n, p.m});
  return op;
}

// Outputs of y that differ from the model (the first three reported).
int64_t model_mismatches(const Problem& p, const std::vector<float>& y) {
  int64_t bad = 0;
  for (int64_t c = 0; c < p.m; ++c) {
    for (int64_t r = 0; r < p.n; ++r) {
      const float want = cpu::amx_f16::dot_model(p.w.data() + r * p.k, p.x.data() + c * p.k, p.k);
      const float got = y[static_cast<size_t>(c * p.n + r)];
      if (!same(want, got) && bad++ < 3) {
        ADD_FAILURE() << "K=" << p.k << " N=" << p.n << " M=" << p.m << " out(" << r << ", " << c
                      << ") = " << got << ", the model gives " << want;
      }
    }
  }
  return bad;
}

TEST(AmxF16Rows, MulMatIsTheModel) {
  if (!has_avx512()) GTEST_SKIP() << "hardware: no AVX-512 F/BW/VL/DQ";
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_f16_rows, DType::F16);
}

TEST(AmxF16Rows, MulMatIdIsTheModel) {
  if (!has_avx512()) GTEST_SKIP() << "hardware: no AVX-512 F/BW/VL/DQ";
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16_rows, DType::F16);
}

// Every M from 1 to 40, K with and without a tail, N not a multiple of 16,
// on data that reaches the flushing; the caller's MXCSR controls (DAZ, FTZ,
// rounding, masks: all but the sticky status flags) come back as they were.
TEST(AmxF16Rows, EveryBatchSizeIsTheModelOnWideData) {
  if (!has_avx512()) GTEST_SKIP() << "hardware: no AVX-512 F/BW/VL/DQ";
  std::mt19937 rng(71);
  constexpr unsigned kControls = ~0x3fu;
  const unsigned csr = _mm_getcsr() & kControls;
  for (int64_t m = 1; m <= 40; ++m) {
    const int64_t k = m % 3 == 0 ? 96 : 61 + 16 * (m % 4);
    const int64_t n = 16 + m % 19;
    Problem p = problem(k, n, m, rng, /*wide=*/true, /*inf=*/m % 8 == 5);
    make_row_tiny(p, rng);
    std::vector<float> y;
    ASSERT_TRUE(cpu::mul_mat_f16_rows(mul_mat_op(p, y), KernelContext{}).ok());
    EXPECT_EQ(model_mismatches(p, y), 0) << "M=" << m;
  }
  EXPECT_EQ(_mm_getcsr() & kControls, csr);
}

// K = 0 gives zeros; an all-zero activation row gives +0.
TEST(AmxF16Rows, EmptyAndZeroRows) {
  if (!has_avx512()) GTEST_SKIP() << "hardware: no AVX-512 F/BW/VL/DQ";
  std::mt19937 rng(73);
  Problem p = problem(64, 20, 3, rng, false);
  std::fill(p.x.begin() + 64, p.x.begin() + 128, -0.0f);
  std::vector<float> y;
  ASSERT_TRUE(cpu::mul_mat_f16_rows(mul_mat_op(p, y), KernelContext{}).ok());
  EXPECT_EQ(model_mismatches(p, y), 0);
  Problem e{0, 5, 2, {0}, {0.0f}};
  std::vector<float> z(10, 3.0f);
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = TensorView::contiguous(e.w.data(), DType::F16, {0, 5});
  op.src[1] = TensorView::contiguous(e.x.data(), DType::F32, {0, 2});
  op.dst = TensorView::contiguous(z.data(), DType::F32, {5, 2});
  ASSERT_TRUE(cpu::mul_mat_f16_rows(op, KernelContext{}).ok());
  for (float v : z) EXPECT_TRUE(same(v, 0.0f)) << v;
}

// The real tiles and the rows kernel agree bit for bit, wide data included.
TEST(AmxF16Rows, TheTilesGiveTheSameBits) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(79);
  for (int64_t m : {1, 2, 7, 15, 16, 17, 32, 33, 40}) {
    for (bool wide : {false, true}) {
      Problem p = problem(m % 2 ? 1100 : 256, 37, m, rng, wide);
      if (wide) make_row_tiny(p, rng);
      std::vector<float> tiles, rows;
      ASSERT_TRUE(cpu::mul_mat_f16_amx(mul_mat_op(p, tiles), KernelContext{}).ok());
      ASSERT_TRUE(cpu::mul_mat_f16_rows(mul_mat_op(p, rows), KernelContext{}).ok());
      int64_t bad = 0;
      for (size_t i = 0; i < rows.size(); ++i) bad += !same(tiles[i], rows[i]);
      EXPECT_EQ(bad, 0) << "M=" << m << (wide ? " wide" : "");
    }
  }
}

// mul_mat_f16_amx_combined (rows kernel below kF16AmxMinRows, tiles from
// there) gives a column the same bits alone, in 5 columns and in 40, and
// mul_mat_id the model's bits. The amx tier does not register it: plain
// F16 weights stay on the AVX-512 kernel at every batch size (the AMX
// buffer type holds them as F16_X16, below).
TEST(AmxF16Rows, CombinedIsBatchInvariant) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(83);
  Problem p40 = problem(300, 45, 40, rng, /*wide=*/true);
  std::vector<float> y40;
  ASSERT_TRUE(cpu::mul_mat_f16_amx_combined(mul_mat_op(p40, y40), KernelContext{}).ok());
  EXPECT_EQ(model_mismatches(p40, y40), 0);
  for (int64_t m : {1, 5}) {
    Problem p{p40.k, p40.n, m, p40.w, std::vector<float>(p40.x.begin(), p40.x.begin() + m * p40.k)};
    std::vector<float> y;
    ASSERT_TRUE(cpu::mul_mat_f16_amx_combined(mul_mat_op(p, y), KernelContext{}).ok());
    EXPECT_EQ(std::memcmp(y.data(), y40.data(), y.size() * 4), 0) << "M=" << m;
  }
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16_amx_combined, DType::F16);
  CpuBackend amx(CpuBackendOptions{Isa::kAmx, false, nullptr});
  std::vector<float> y;
  EXPECT_EQ(amx.kernel_name(mul_mat_op(p40, y)), "mul_mat.f16.avx512");
}

// --- The F16_X16 layout's kernels (amx/mul_mat_f16_x16.cc) -----------------
//
// The AMX buffer type holds F16 weights as F16_X16 on CPUs with AMX-BF16;
// its kernels (a rows kernel for one and two activation rows, the tiles from
// three) must give the model's bits at every batch size, as the plain-row
// kernels above do.

// p's weight packed into F16_X16 (in store).
Op packed_op(Problem& p, std::vector<float>& y, std::vector<uint8_t>& store) {
  Op op = mul_mat_op(p, y);
  op.src[0] = amx_bf16_cases::packed_f16(p.w, p.k, p.n, 1, store);
  return op;
}

TEST(AmxF16X16, MulMatIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_f16x16_amx, DType::F16, true);
}

TEST(AmxF16X16, MulMatIdIsTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16x16_amx, DType::F16, true);
}

// Every M from 1 to 40 (the rows kernel, the tiles' groups of 16 and the
// last group of fewer), K tails, N not a multiple of 16, data that reaches
// the flushing; the caller's MXCSR controls come back as they were.
TEST(AmxF16X16, EveryBatchSizeIsTheModelOnWideData) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(89);
  constexpr unsigned kControls = ~0x3fu;
  const unsigned csr = _mm_getcsr() & kControls;
  for (int64_t m = 1; m <= 40; ++m) {
    const int64_t k = m % 3 == 0 ? 96 : m % 5 == 0 ? 700 : 61 + 16 * (m % 4);
    const int64_t n = 16 + m % 19;
    Problem p = problem(k, n, m, rng, /*wide=*/true, /*inf=*/m % 8 == 5);
    make_row_tiny(p, rng);
    std::vector<float> y;
    std::vector<uint8_t> store;
    ASSERT_TRUE(cpu::mul_mat_f16x16_amx(packed_op(p, y, store), KernelContext{}).ok());
    EXPECT_EQ(model_mismatches(p, y), 0) << "M=" << m;
  }
  EXPECT_EQ(_mm_getcsr() & kControls, csr);
}

// One to sixteen activation rows against 1 to 9 panels: decode steps four,
// then two panels at once for one row (each group's last panel full or
// partial), a panel at a time for two; the tiles' ring two panels at once
// from three rows (the last pair or single panel full or partial); every
// output the model's.
TEST(AmxF16X16, DecodePanelGroupsAreTheModel) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(97);
  for (int64_t m : {1, 2, 3, 8, 16}) {
    for (int64_t n : {16, 29, 32, 48, 61, 64, 77, 96, 131, 144}) {
      Problem p = problem(m % 2 == 1 ? 700 : 96, n, m, rng, /*wide=*/true);
      make_row_tiny(p, rng);
      std::vector<float> y;
      std::vector<uint8_t> store;
      ASSERT_TRUE(cpu::mul_mat_f16x16_amx(packed_op(p, y, store), KernelContext{}).ok());
      EXPECT_EQ(model_mismatches(p, y), 0) << "M=" << m << " N=" << n;
    }
  }
}

// A column has the same bits alone, in 5 columns and in 40 (one and two
// threads), and the CPU backend's amx tier routes F16_X16 here at every
// batch size.
TEST(AmxF16X16, BatchInvariantAndRouted) {
  if (!has_amx_bf16()) GTEST_SKIP() << "hardware: no AMX-BF16 (or the OS refused the tile state)";
  std::mt19937 rng(97);
  Problem p40 = problem(1100, 45, 40, rng, /*wide=*/true);
  std::vector<float> y40;
  std::vector<uint8_t> store;
  ASSERT_TRUE(cpu::mul_mat_f16x16_amx(packed_op(p40, y40, store), KernelContext{}).ok());
  EXPECT_EQ(model_mismatches(p40, y40), 0);
  CpuBackend amx(CpuBackendOptions{Isa::kAmx, false, nullptr});
  for (int64_t m : {1, 2, 5}) {
    Problem p{p40.k, p40.n, m, p40.w, std::vector<float>(p40.x.begin(), p40.x.begin() + m * p40.k)};
    std::vector<float> y;
    const Op op = packed_op(p, y, store);
    ASSERT_TRUE(cpu::mul_mat_f16x16_amx(op, KernelContext{}).ok());
    EXPECT_EQ(std::memcmp(y.data(), y40.data(), y.size() * 4), 0) << "M=" << m;
    EXPECT_EQ(amx.kernel_name(op), "mul_mat.f16x16.amx") << "M=" << m;
  }
}

}  // namespace amx_f16_rows_test
}  // namespace folio
