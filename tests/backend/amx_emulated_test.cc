// The AMX panels (amx/mul_mat_amx.cc, amx/packed_kquant_amx.cc) built with a
// scalar model of the tile instructions (amx_emulation/, the
// folio_amx_emulated library of tests/CMakeLists.txt), so that machines
// without AMX run everything around the tile products: the unpacking of
// each packed layout into tile bytes, the double-buffered pipeline, the
// groups of 16 rows and the last group of fewer (tiles configured with that
// many rows), the calls left to the tier below, the float steps.
// Like packed_weights_test's AmxTilesGiveTheBitsOfTheTierBelow, which runs
// the real instructions where the CPU has them, every layout must give the
// bits of the panel below AMX (AVX-512; Q4_1_X16: avx2_vnni), for mul_mat
// and mul_mat_id. The library is compiled for the AMX target (AVX-512 code
// around the emulated tiles), so the test needs AVX-512 VNNI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/amx_bf16_cases.h"
#include "backend/amx_emulation/backend/cpu/amx/tile_emulator.h"
#include "backend/cpu/cpu_buffer_types.h"
#include "backend/cpu/packed/packed_kernels.h"
#include "core/aligned.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/quant.h"
#include "quant/repack.h"

namespace folio::cpu {
// folio_amx_emulated's entry points (mul_mat_packed_amx and
// mul_mat_id_packed_amx and their _min_rows forms, renamed there).
Status mul_mat_packed_amx_emulated(const Op& op, const KernelContext& ctx);
Status mul_mat_id_packed_amx_emulated(const Op& op, const KernelContext& ctx);
Status mul_mat_packed_amx_min_rows_emulated(const Op& op, const KernelContext& ctx, int min_rows);
Status mul_mat_id_packed_amx_min_rows_emulated(const Op& op, const KernelContext& ctx,
                                               int min_rows);
// ... and mul_mat_bf16_amx / mul_mat_id_bf16_amx (amx/mul_mat_bf16_amx.cc).
Status mul_mat_bf16_amx_emulated(const Op& op, const KernelContext& ctx);
Status mul_mat_id_bf16_amx_emulated(const Op& op, const KernelContext& ctx);
// ... and mul_mat_f16_amx / mul_mat_id_f16_amx (the same file).
Status mul_mat_f16_amx_emulated(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16_amx_emulated(const Op& op, const KernelContext& ctx);
// ... and mul_mat_f16x16_amx / mul_mat_id_f16x16_amx (amx/mul_mat_f16_x16.cc).
Status mul_mat_f16x16_amx_emulated(const Op& op, const KernelContext& ctx);
Status mul_mat_id_f16x16_amx_emulated(const Op& op, const KernelContext& ctx);
}  // namespace folio::cpu

namespace folio {
namespace amx_emulated_test {

using cpu::amx_emulation::tile_products;

constexpr DType kSources[] = {DType::Q4_0, DType::Q4_1,   DType::Q5_0,  DType::Q5_1,
                              DType::Q8_0, DType::IQ4_NL, DType::MXFP4, DType::Q4_K,
                              DType::Q5_K, DType::Q6_K,   DType::IQ4_XS};

bool has_vnni() {
  return static_cast<int>(active_isa()) >= static_cast<int>(Isa::kAvx512) &&
         cpu_features().avx512vnni && cpu_features().vnni256();
}

// Rows of `t` (k elements each): through the reference quantizer, else
// (IQ4_NL, IQ4_XS) random codes and scales with a small f16 d first.
std::vector<uint8_t> weight_rows(DType t, int64_t k, int64_t rows, std::mt19937& rng) {
  const size_t row = row_size(t, k);
  std::vector<uint8_t> w(row * static_cast<size_t>(rows));
  if (quant::has_quantize(t)) {
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> f(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : f) v = u(rng);
      quant::quantize_row_ref(t, f.data(), w.data() + r * row, k);
    }
    return w;
  }
  std::uniform_real_distribution<float> d(0.001f, 0.01f);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < w.size(); b += type_size(t)) {
    const uint16_t h = f32_to_f16(d(rng));
    std::memcpy(w.data() + b, &h, 2);
  }
  return w;
}

// The packed copy of `plain` for `use`.
AlignedPtr pack(const WeightUse& use, const std::vector<uint8_t>& plain) {
  const PackedBufferType& type = amx_f16_buffer_type();
  AlignedPtr packed = aligned_alloc_bytes(type.weight_bytes(use));
  EXPECT_TRUE(type.store_weight(use, plain.data(), plain.size(), packed.get()).ok());
  return packed;
}

// amx_min_rows of the packed layout of `src`.
int amx_min_rows_of(DType src) {
  return cpu::amx_min_rows(*quant::packed_type_for(src));
}

Status below_amx(DType src, const Op& op) {
  const KernelContext ctx;
  if (op.kind == OpKind::kMulMatId) {
    return src == DType::Q4_1 ? cpu::mul_mat_id_packed_avx2_vnni(op, ctx)
                              : cpu::mul_mat_id_packed_avx512(op, ctx);
  }
  return src == DType::Q4_1 ? cpu::mul_mat_packed_avx2_vnni(op, ctx)
                            : cpu::mul_mat_packed_avx512(op, ctx);
}

// mul_mat: every row count from 1 to 40 with every panel call on the tiles
// (min_rows 1: one group of m < 16 rows, a full group and 1..15 rows, two
// full groups and 1..8 rows), then the kernel itself (amx_min_rows of the
// layout) at 16, 40, 150 and 160 rows.
TEST(AmxEmulated, MulMatGivesTheBitsOfTheTierBelow) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  std::mt19937 rng(17);
  std::vector<std::pair<int64_t, int>> runs;  // (rows, min_rows; 0: the kernel's)
  for (int64_t m = 1; m <= 40; ++m) runs.emplace_back(m, 1);
  for (int64_t m : {16, 40, 150, 160}) runs.emplace_back(m, 0);
  for (DType t : kSources) {
    const int64_t k = block_size(t) == 256 ? 768 : 640, n = 40;
    const int64_t products_before = tile_products.load();
    for (const auto& [m, min_rows] : runs) {
      const std::vector<uint8_t> plain = weight_rows(t, k, n, rng);
      const WeightUse use{"w", t, {k, n, 1, 1}, OpKind::kMulMat};
      const AlignedPtr packed = pack(use, plain);
      std::vector<float> x(static_cast<size_t>(k * m));
      std::uniform_real_distribution<float> u(-1, 1);
      for (float& v : x) v = u(rng);
      std::vector<float> a(static_cast<size_t>(n * m), -1), b(a.size(), -2);
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = amx_f16_buffer_type().weight_view(use, packed.get());
      op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, m});
      op.dst = TensorView::contiguous(a.data(), DType::F32, {n, m});
      const int64_t before = tile_products.load();
      ASSERT_TRUE((min_rows > 0
                       ? cpu::mul_mat_packed_amx_min_rows_emulated(op, KernelContext{}, min_rows)
                       : cpu::mul_mat_packed_amx_emulated(op, KernelContext{}))
                      .ok());
      if (min_rows > 0) {
        EXPECT_GT(tile_products.load(), before) << dtype_name(t) << " m=" << m << ": no tiles";
      }
      op.dst = TensorView::contiguous(b.data(), DType::F32, {n, m});
      ASSERT_TRUE(below_amx(t, op).ok());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4))
          << dtype_name(t) << " m=" << m << " min_rows=" << min_rows;
    }
    EXPECT_GT(tile_products.load(), products_before) << dtype_name(t) << ": no tile product ran";
  }
}

// mul_mat_id: 6 experts, 3 used by each of 80 tokens (groups of about 40
// rows), by the kernel (amx_min_rows) and with every group on the tiles
// (min_rows 1), and of 7 tokens (groups of 1..7 rows) with min_rows 1.
TEST(AmxEmulated, MulMatIdGivesTheBitsOfTheTierBelow) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  std::mt19937 rng(23);
  const int64_t n = 21, n_exp = 6, n_used = 3;
  for (DType t : kSources) {
    for (const auto& [n_tok, min_rows] : {std::pair<int64_t, int>{80, 0}, {80, 1}, {7, 1}}) {
      const int64_t k = block_size(t) == 256 ? 512 : 320;
      const int64_t products_before = tile_products.load();
      const std::vector<uint8_t> plain = weight_rows(t, k, n * n_exp, rng);
      const WeightUse use{"w", t, {k, n, n_exp, 1}, OpKind::kMulMatId};
      const AlignedPtr packed = pack(use, plain);
      std::vector<float> x(static_cast<size_t>(k * n_tok));
      std::uniform_real_distribution<float> u(-1, 1);
      for (float& v : x) v = u(rng);
      std::vector<int32_t> ids(static_cast<size_t>(n_used * n_tok));
      std::vector<int32_t> all(static_cast<size_t>(n_exp));
      for (int64_t tk = 0; tk < n_tok; ++tk) {
        std::iota(all.begin(), all.end(), 0);
        std::shuffle(all.begin(), all.end(), rng);
        std::copy_n(all.begin(), n_used, ids.begin() + tk * n_used);
      }
      std::vector<float> a(static_cast<size_t>(n * n_used * n_tok), -1), b(a.size(), -2);
      Op op;
      op.kind = OpKind::kMulMatId;
      op.src[0] = amx_f16_buffer_type().weight_view(use, packed.get());
      op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, 1, n_tok});
      op.src[2] = TensorView::contiguous(ids.data(), DType::I32, {n_used, n_tok});
      op.dst = TensorView::contiguous(a.data(), DType::F32, {n, n_used, n_tok});
      ASSERT_TRUE((min_rows > 0
                       ? cpu::mul_mat_id_packed_amx_min_rows_emulated(op, KernelContext{}, min_rows)
                       : cpu::mul_mat_id_packed_amx_emulated(op, KernelContext{}))
                      .ok());
      op.dst = TensorView::contiguous(b.data(), DType::F32, {n, n_used, n_tok});
      ASSERT_TRUE(below_amx(t, op).ok());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4))
          << dtype_name(t) << " tokens=" << n_tok << " min_rows=" << min_rows;
      if (min_rows > 0 || amx_min_rows_of(t) <= 40) {
        EXPECT_GT(tile_products.load(), products_before)
            << dtype_name(t) << ": no tile product ran";
      }
    }
  }
}

// The BF16 kernel (amx/mul_mat_bf16_amx.cc): every output is the tile
// model's dot (amx/bf16_tile_model.h), as amx_bf16_test.cc checks on the
// real instructions.
TEST(AmxEmulated, Bf16MulMatIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_bf16_amx_emulated);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

TEST(AmxEmulated, Bf16MulMatIdIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_bf16_amx_emulated);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

// The F16 weights on the same tiles: every output is amx_f16::dot_model
// (three tile products per step), as amx_bf16_test.cc checks on the real
// instructions.
TEST(AmxEmulated, F16MulMatIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_f16_amx_emulated, DType::F16);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

TEST(AmxEmulated, F16MulMatIdIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16_amx_emulated, DType::F16);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

// F16 weights in the F16_X16 layout (amx/mul_mat_f16_x16.cc: the rows
// kernel for one and two activation rows, the tiles from three; 5 and 16
// rows on the decode function's two-panel ring): every output is
// amx_f16::dot_model, as amx_f16_rows_test.cc checks on the real tiles.
TEST(AmxEmulated, F16X16MulMatIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_is_model(&cpu::mul_mat_f16x16_amx_emulated, DType::F16, true);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

TEST(AmxEmulated, F16X16MulMatIdIsTheModel) {
  if (!has_vnni()) GTEST_SKIP() << "hardware: no AVX-512 VNNI";
  const int64_t products_before = tile_products.load();
  amx_bf16_cases::expect_mul_mat_id_is_model(&cpu::mul_mat_id_f16x16_amx_emulated, DType::F16,
                                             true);
  EXPECT_GT(tile_products.load(), products_before) << "no tile product ran";
}

}  // namespace amx_emulated_test
}  // namespace folio
