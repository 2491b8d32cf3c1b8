// SIMD mul_mat kernels (avx2/, avx512/) against an independent expectation:
// dequantized weights times the activations *as the kernel sees them*
// (rounded through the reference Q8_0 / Q8_K quantizer for quantized
// weights), summed in double. The integer paths are exact, so the bound is a
// float-rounding one (1e-5 of sum |w x|); one wrong code, scale or offset in
// a block is far above it. Shapes cover K tails (odd block counts, K % 16),
// row / column tile remainders, weight broadcast over batches and strided
// activation rows. Also: any thread count gives bit-identical outputs, and
// the SIMD activation quantizers write the reference quantizers' bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "quant/quant.h"
#include "simd_isas.h"

namespace folio {
namespace simd_mul_mat_test {

struct Shape {
  int64_t k, n, m;
  int64_t b2 = 1, b2w = 1;  // activation batches, weight batches (broadcast)
  int64_t x_pad = 0;        // extra floats between activation rows
};

// Owns the tensors of one mul_mat op.
class MatMulOp {
 public:
  MatMulOp(DType wtype, const Shape& s, uint32_t seed) : s_(s) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    w_ = TensorView::contiguous(nullptr, wtype, {s.k, s.n, s.b2w});
    w_bytes_.resize(w_.nbytes_contiguous());
    w_.data = w_bytes_.data();
    std::vector<float> row(static_cast<size_t>(s.k));
    for (int64_t r = 0; r < s.n * s.b2w; ++r) {
      for (float& v : row) v = dist(rng);
      quant::quantize_row_ref(wtype, row.data(), w_bytes_.data() + r * w_.nb[1], s.k);
    }
    // Activations with an optional gap between rows (non-contiguous view).
    const int64_t row_floats = s.k + s.x_pad;
    x_data_.resize(static_cast<size_t>(row_floats * s.m * s.b2));
    for (float& v : x_data_) v = dist(rng);
    x_ = TensorView::contiguous(x_data_.data(), DType::F32, {s.k, s.m, s.b2});
    x_.nb[1] = static_cast<size_t>(row_floats) * 4;
    x_.nb[2] = x_.nb[1] * static_cast<size_t>(s.m);
    x_.nb[3] = x_.nb[2] * static_cast<size_t>(s.b2);
    y_data_.assign(static_cast<size_t>(s.n * s.m * s.b2), 0.0f);
    y_ = TensorView::contiguous(y_data_.data(), DType::F32, {s.n, s.m, s.b2});
    op_.kind = OpKind::kMulMat;
    op_.src[0] = w_;
    op_.src[1] = x_;
    op_.dst = y_;
  }

  const Op& op() const { return op_; }
  const std::vector<float>& y() const { return y_data_; }

  // Expected outputs and the per-element bound (1e-5 * sum |w x| + 1e-6).
  void expected(std::vector<float>* want, std::vector<float>* tol) const {
    const DType wt = w_.dtype;
    const DType act = wt == DType::Q8_0 || wt == DType::Q4_0   ? DType::Q8_0
                      : wt == DType::Q4_K || wt == DType::Q6_K ? DType::Q8_K
                                                               : DType::F32;
    want->assign(y_data_.size(), 0.0f);
    tol->assign(y_data_.size(), 0.0f);
    std::vector<float> wrow(static_cast<size_t>(s_.k)), xrow(static_cast<size_t>(s_.k));
    std::vector<uint8_t> q(row_size(act, s_.k));
    for (int64_t b = 0; b < s_.b2; ++b) {
      for (int64_t im = 0; im < s_.m; ++im) {
        const float* xr = x_.row<const float>(im, b);
        if (act == DType::F32) {
          std::memcpy(xrow.data(), xr, xrow.size() * 4);
        } else {
          quant::quantize_row_ref(act, xr, q.data(), s_.k);
          quant::dequantize_row_ref(act, q.data(), xrow.data(), s_.k);
        }
        for (int64_t in = 0; in < s_.n; ++in) {
          quant::dequantize_row_ref(wt, w_.row(in, b / (s_.b2 / s_.b2w)), wrow.data(), s_.k);
          double sum = 0, mag = 0;
          for (int64_t i = 0; i < s_.k; ++i) {
            sum += static_cast<double>(wrow[i]) * xrow[i];
            mag += std::fabs(static_cast<double>(wrow[i]) * xrow[i]);
          }
          const size_t at = static_cast<size_t>((b * s_.m + im) * s_.n + in);
          (*want)[at] = static_cast<float>(sum);
          (*tol)[at] = static_cast<float>(1e-5 * mag + 1e-6);
        }
      }
    }
  }

 private:
  Shape s_;
  std::vector<uint8_t> w_bytes_;
  std::vector<float> x_data_, y_data_;
  TensorView w_, x_, y_;
  Op op_;
};

std::string dtype_lower(DType t) {
  std::string s = dtype_name(t);
  for (char& ch : s) ch = static_cast<char>(std::tolower(ch));
  return s;
}

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                              DType::Q4_0, DType::Q4_K, DType::Q6_K};

std::vector<Shape> shapes_for(DType t) {
  if (t == DType::Q4_K || t == DType::Q6_K) {
    return {{256, 1, 1}, {512, 7, 3}, {768, 9, 5, 2, 1}, {256, 4, 2, 1, 1, 24}};
  }
  if (t == DType::Q8_0 || t == DType::Q4_0) {
    return {{32, 1, 1}, {96, 7, 3}, {256, 9, 5, 2, 1}, {160, 5, 4, 2, 2, 8}, {64, 13, 1}};
  }
  return {{1, 1, 1}, {37, 6, 5}, {64, 9, 3, 2, 1}, {300, 5, 7, 3, 3, 5}, {16, 4, 4}};
}

// The SIMD tiers this machine can run, within the active limit (FOLIO_ISA).
using backend_testing::simd_isas;

class SimdMulMat : public ::testing::TestWithParam<DType> {};

TEST_P(SimdMulMat, MatchesDoublePrecisionDot) {
  const DType wt = GetParam();
  const std::vector<Isa> isas = simd_isas();
  if (isas.empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  for (Isa isa : isas) {
    CpuBackend backend(CpuBackendOptions{isa, false, nullptr});
    uint32_t seed = 7;
    for (const Shape& s : shapes_for(wt)) {
      MatMulOp mm(wt, s, seed++);
      const std::string kname = backend.kernel_name(mm.op());
      EXPECT_EQ(kname, "mul_mat." + std::string(dtype_name(wt)) + "." + isa_name(isa))
          << "wanted the SIMD kernel (VNNI missing falls back to avx2)";
      ASSERT_TRUE(backend.run(mm.op()).ok());
      std::vector<float> want, tol;
      mm.expected(&want, &tol);
      int bad = 0;
      for (size_t i = 0; i < want.size() && bad < 5; ++i) {
        if (!(std::fabs(mm.y()[i] - want[i]) <= tol[i])) {
          ++bad;
          ADD_FAILURE() << kname << " k=" << s.k << " n=" << s.n << " m=" << s.m << " b2=" << s.b2
                        << " element " << i << ": got " << mm.y()[i] << ", want " << want[i]
                        << " +- " << tol[i];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, SimdMulMat, ::testing::ValuesIn(kWeightTypes),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return dtype_lower(i.param);
                         });

// No reduction is split across threads and the tile decomposition depends
// only on the shape: 1, 2 and 3 threads give the same bytes. The shapes are
// above the driver's parallel threshold (2^18 multiply-adds), so the work is
// really split.
TEST(SimdMulMatThreads, BitIdenticalForAnyThreadCount) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool2(2), pool3(3);
  const Shape s{1024, 67, 5, 2, 1};
  for (Isa isa : simd_isas()) {
    for (DType wt : kWeightTypes) {
      MatMulOp a(wt, s, 99), b(wt, s, 99), c(wt, s, 99);
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, nullptr}).run(a.op()).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool2}).run(b.op()).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool3}).run(c.op()).ok());
      EXPECT_EQ(std::memcmp(a.y().data(), b.y().data(), a.y().size() * 4), 0)
          << dtype_name(wt) << " " << isa_name(isa) << ": 2 threads differ from 1";
      EXPECT_EQ(std::memcmp(a.y().data(), c.y().data(), a.y().size() * 4), 0)
          << dtype_name(wt) << " " << isa_name(isa) << ": 3 threads differ from 1";
    }
  }
}

// Float weights: the AVX2 kernels keep AVX-512's 16-lane accumulator per
// output (two ymm halves, the same zero-padded tail, the same reduction), so
// the tiers give the same bytes in every path: decode (M = 1), the tiles (M
// 2 .. 15, with remainders) and the strip panel (M >= 16), with K tails
// inside a 16-element step, past a 512-element panel chunk, and below 16.
TEST(SimdMulMatFloat, Avx2GivesTheBitsOfAvx512) {
  if (active_isa() < Isa::kAvx512) GTEST_SKIP() << "hardware: no AVX-512 on this machine";
  CpuBackend avx2(CpuBackendOptions{Isa::kAvx2, false, nullptr});
  CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
  const Shape shapes[] = {{1, 3, 1},    {15, 5, 1},   {16, 7, 2},     {37, 6, 3},
                          {300, 5, 7},  {520, 9, 8},  {1100, 20, 17}, {1029, 13, 40},
                          {4096, 6, 1}, {64, 9, 3, 2, 1}};
  for (DType wt : {DType::F32, DType::F16, DType::BF16}) {
    uint32_t seed = 41;
    for (const Shape& s : shapes) {
      MatMulOp a(wt, s, seed), b(wt, s, seed);
      ++seed;
      ASSERT_TRUE(avx2.run(a.op()).ok());
      ASSERT_TRUE(avx512.run(b.op()).ok());
      EXPECT_EQ(std::memcmp(a.y().data(), b.y().data(), a.y().size() * 4), 0)
          << dtype_name(wt) << " k=" << s.k << " n=" << s.n << " m=" << s.m;
    }
  }
}

// mul_mat_id: experts W [K, N, E], X [K, 1, T] shared by the chosen experts.
struct MatMulIdOp {
  std::vector<uint8_t> w;
  std::vector<float> x, y;
  std::vector<int32_t> ids;
  Op op;

  MatMulIdOp(DType wt, int64_t k, int64_t n, int64_t n_exp, int64_t n_used, int64_t n_tok) {
    std::mt19937 rng(31);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> row(static_cast<size_t>(k));
    w.resize(row_size(wt, k) * n * n_exp);
    for (int64_t r = 0; r < n * n_exp; ++r) {
      for (float& v : row) v = dist(rng);
      quant::quantize_row_ref(wt, row.data(), w.data() + r * row_size(wt, k), k);
    }
    x.resize(static_cast<size_t>(k * n_tok));
    for (float& v : x) v = dist(rng);
    for (int64_t t = 0; t < n_tok; ++t) {
      for (int64_t u = 0; u < n_used; ++u)
        ids.push_back(static_cast<int32_t>((t * 3 + u * 5) % n_exp));
    }
    y.assign(static_cast<size_t>(n * n_used * n_tok), 0.0f);
    op.kind = OpKind::kMulMatId;
    op.src[0] = TensorView::contiguous(w.data(), wt, {k, n, n_exp});
    op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, 1, n_tok});
    op.src[2] = TensorView::contiguous(ids.data(), DType::I32, {n_used, n_tok});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {n, n_used, n_tok});
  }
};

TEST(SimdMulMatThreads, MulMatIdBitIdenticalForAnyThreadCount) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool2(2), pool3(3);
  for (Isa isa : simd_isas()) {
    for (DType wt : {DType::F16, DType::Q8_0, DType::Q4_K}) {
      MatMulIdOp a(wt, 1024, 37, 8, 4, 9), b(wt, 1024, 37, 8, 4, 9), c(wt, 1024, 37, 8, 4, 9);
      CpuBackend one(CpuBackendOptions{isa, false, nullptr});
      EXPECT_NE(one.kernel_name(a.op).find(isa_name(isa)), std::string::npos);
      ASSERT_TRUE(one.run(a.op).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool2}).run(b.op).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool3}).run(c.op).ok());
      EXPECT_EQ(std::memcmp(a.y.data(), b.y.data(), a.y.size() * 4), 0) << dtype_name(wt);
      EXPECT_EQ(std::memcmp(a.y.data(), c.y.data(), a.y.size() * 4), 0) << dtype_name(wt);
    }
  }
}

TEST(SimdMulMatId, ExpertIdOutOfRangeIsAnErrorAndWritesNothing) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  for (Isa isa : simd_isas()) {
    MatMulIdOp mm(DType::Q8_0, 64, 4, 3, 2, 2);
    mm.ids[3] = 3;  // E = 3
    std::fill(mm.y.begin(), mm.y.end(), 7.0f);
    const Status s = CpuBackend(CpuBackendOptions{isa, false, nullptr}).run(mm.op);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.to_string();
    EXPECT_EQ(std::count(mm.y.begin(), mm.y.end(), 7.0f), static_cast<long>(mm.y.size()));
  }
}

// Rows that exercise the quantizers' corner cases, 576 values each (18
// blocks of 32: the AVX-512 Q8_0 quantizer does 16 blocks at once, then
// one at a time; Q8_K reads the first 512).
std::vector<std::vector<float>> quantizer_rows() {
  std::mt19937 rng(21);
  std::vector<std::vector<float>> rows;
  for (float scale : {1.0f, 1e-3f, 300.0f}) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> r(576);
    for (float& v : r) v = dist(rng);
    rows.push_back(r);
  }
  std::vector<float> ties(576);  // amax 127 -> scale 1: x * id lands on .5 exactly
  for (size_t i = 0; i < ties.size(); ++i)
    ties[i] = static_cast<float>(static_cast<int>(i % 64) - 32) + 0.5f;
  for (size_t i = 0; i < ties.size(); i += 32) ties[i] = 127.0f;
  ties[5] = 0.49999997f;
  ties[6] = -0.49999997f;
  rows.push_back(ties);
  std::vector<float> zeros(576, 0.0f);
  zeros[0] = -0.0f;
  rows.push_back(zeros);
  std::vector<float> neg(576, -1.0f);  // equal magnitudes: the first one decides (Q8_K)
  neg[300] = 1.0f;
  neg[1] = 1.0f;
  rows.push_back(neg);
  std::vector<float> special(576, 0.25f);
  special[3] = std::numeric_limits<float>::quiet_NaN();
  special[40] = std::numeric_limits<float>::infinity();
  special[300] = std::numeric_limits<float>::quiet_NaN();
  rows.push_back(special);
  // Each block its own magnitude: all zero, all NaN, subnormal (a scale
  // whose reciprocal overflows), around the f16 range's ends, one value
  // among zeros; the blocks of the 16-block batch and of the tail differ.
  std::vector<float> blocks(576);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const float magnitude[] = {0.0f, 0.0f, 1e-40f, 6e-8f, 65504.0f * 127.0f, 1e30f, 3.0f, 1.0f};
  for (int b = 0; b < 18; ++b) {
    for (int i = 0; i < 32; ++i) blocks[32 * b + i] = magnitude[b % 8] * unit(rng);
  }
  for (int i = 32; i < 64; ++i) blocks[i] = std::numeric_limits<float>::quiet_NaN();
  for (int i = 7 * 32; i < 8 * 32; ++i) blocks[i] = i == 7 * 32 + 9 ? -2.5f : 0.0f;
  for (int i = 17 * 32; i < 18 * 32; ++i) blocks[i] = i % 3 == 0 ? -1e-40f : 0.0f;
  rows.push_back(blocks);
  return rows;
}

TEST(SimdActivationQuantizers, SameBytesAsTheReference) {
  using cpu::ActFormat;
  struct Variant {
    const char* name;
    Isa isa;
    ActFormat format;
    cpu::ConvertRowFn fn;
  };
  const Variant variants[] = {
      {"q8_0 avx2", Isa::kAvx2, ActFormat::kQ8_0, cpu::quantize_act_q8_0_avx2},
      {"q8_K avx2", Isa::kAvx2, ActFormat::kQ8_K, cpu::quantize_act_q8_k_avx2},
      {"q8_0 avx512", Isa::kAvx512, ActFormat::kQ8_0, cpu::quantize_act_q8_0_avx512},
      {"q8_K avx512", Isa::kAvx512, ActFormat::kQ8_K, cpu::quantize_act_q8_k_avx512},
  };
  int checked = 0;
  for (const Variant& v : variants) {
    if (active_isa() < v.isa) continue;
    const int64_t k = v.format == ActFormat::kQ8_0 ? 576 : 512;  // Q8_K: whole super-blocks
    const size_t bytes = cpu::act_row_bytes(v.format, k);
    int row_index = 0;
    for (const auto& row : quantizer_rows()) {
      std::vector<uint8_t> want(bytes, 0xAA), got(bytes, 0xAA);
      cpu::convert_act_row(v.format, row.data(), want.data(), k);
      v.fn(row.data(), got.data(), k);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes)) << v.name << ", row " << row_index;
      ++row_index;
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "hardware: no SIMD tier available";
}

}  // namespace
}  // namespace folio
