// SIMD mul_mat / mul_mat_id kernels (avx2/, avx512/) for the weight types
// beyond simd_mul_mat_test.cc: Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, NVFP4 (Q8_0
// activation rows) and Q2_K, Q3_K, Q5_K, IQ4_XS (Q8_K activations).
//
// The expectation is independent of the kernels: reference-dequantized
// weights times the activations *as the kernel sees them* (rounded through
// the reference Q8_0 / Q8_K quantizer), summed in double. The integer paths
// are exact, so the bound is a float-rounding one (1e-5 of sum |w x|): one
// wrong code, bit, scale, minimum or offset in a block is far above it.
// Weights are random bytes with finite half scales (FP4: E8M0 exponents /
// UE4M3 scales of ordinary size, any UE4M3 byte), so every code, fifth /
// high bit, packed 6-bit scale and minimum value occurs (more than the
// quantizers produce); extreme rows (all bits set / clear against constant
// activations, i.e. the largest products) check that no i16 step saturates.
// Shapes cover K tails (odd block counts: the AVX-512 block pairs), row and
// column tile remainders, weight broadcast over batches and strided
// activation rows. Also: 1, 2 and 3 threads give bit-identical outputs, for
// mul_mat and mul_mat_id.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "simd_isas.h"

namespace folio {
namespace simd_mul_mat_more_test {

const DType kTypes[] = {DType::Q4_1, DType::Q5_0, DType::Q5_1,   DType::IQ4_NL, DType::Q2_K,
                        DType::Q3_K, DType::Q5_K, DType::IQ4_XS, DType::MXFP4,  DType::NVFP4};

bool super_block(DType t) {
  return block_size(t) == quant::kQKK;
}

bool fp4(DType t) {
  return t == DType::MXFP4 || t == DType::NVFP4;
}

// A row length of a few blocks of t (3 for 32-element blocks, 2 for NVFP4,
// 2 super-blocks).
int64_t short_k(DType t) {
  return super_block(t) ? 512 : t == DType::NVFP4 ? 128 : 96;
}

// The activation format the kernels quantize to for weight type t.
DType act_type(DType t) {
  return super_block(t) ? DType::Q8_K : DType::Q8_0;
}

// Byte offsets of a block's f16 scale fields: the multiplier d (first) and,
// where the format has one, the minimum / min-scale (second, else -1).
std::pair<int, int> half_fields(DType t) {
  switch (t) {
    case DType::Q4_1:
      return {offsetof(quant::BlockQ4_1, d), offsetof(quant::BlockQ4_1, m)};
    case DType::Q5_0:
      return {offsetof(quant::BlockQ5_0, d), -1};
    case DType::Q5_1:
      return {offsetof(quant::BlockQ5_1, d), offsetof(quant::BlockQ5_1, m)};
    case DType::IQ4_NL:
      return {offsetof(quant::BlockIQ4_NL, d), -1};
    case DType::Q2_K:
      return {offsetof(quant::BlockQ2_K, d), offsetof(quant::BlockQ2_K, dmin)};
    case DType::Q3_K:
      return {offsetof(quant::BlockQ3_K, d), -1};
    case DType::Q5_K:
      return {offsetof(quant::BlockQ5_K, d), offsetof(quant::BlockQ5_K, dmin)};
    case DType::IQ4_XS:
      return {offsetof(quant::BlockIQ4_XS, d), -1};
    default:
      ADD_FAILURE() << "no block layout for " << dtype_name(t);
      return {0, -1};
  }
}

void put_half(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Fills `bytes` (whole blocks of t) with `fill` (-1: random) and gives every
// block small finite half scales (minimums of either sign).
void fill_blocks(DType t, uint8_t* bytes, size_t n, int fill, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f), sign(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(fill < 0 ? byte(rng) : fill);
  if (fp4(t)) {
    // MXFP4: exponents 2^-12 .. 2^-2 (half-scales); NVFP4: any scale byte
    // (at most 240), 0x7F (a zero scale) included.
    std::uniform_int_distribution<int> e(115, 125);
    for (size_t b = 0; b < n / type_size(t); ++b) {
      uint8_t* blk = bytes + b * type_size(t);
      if (t == DType::MXFP4) blk[offsetof(quant::BlockMXFP4, e)] = static_cast<uint8_t>(e(rng));
    }
    return;
  }
  const auto [d_at, m_at] = half_fields(t);
  for (size_t b = 0; b < n / type_size(t); ++b) {
    uint8_t* blk = bytes + b * type_size(t);
    put_half(blk + d_at, scale(rng));
    if (m_at >= 0) put_half(blk + m_at, sign(rng) < 0 ? -scale(rng) : scale(rng));
  }
}

struct Shape {
  int64_t k, n, m;
  int64_t b2 = 1, b2w = 1;  // activation batches, weight batches (broadcast)
  int64_t x_pad = 0;        // extra floats between activation rows
};

// Owns the tensors of one mul_mat op. fill: weight bytes (-1: random);
// x_const: every activation equals it (NaN: uniform in [-1, 1]).
class MatMulOp {
 public:
  MatMulOp(DType wt, const Shape& s, uint32_t seed, int fill = -1, float x_const = NAN) : s_(s) {
    std::mt19937 rng(seed);
    w_ = TensorView::contiguous(nullptr, wt, {s.k, s.n, s.b2w});
    w_bytes_.resize(w_.nbytes_contiguous());
    w_.data = w_bytes_.data();
    fill_blocks(wt, w_bytes_.data(), w_bytes_.size(), fill, rng);
    const int64_t row_floats = s.k + s.x_pad;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    x_data_.resize(static_cast<size_t>(row_floats * s.m * s.b2));
    for (float& v : x_data_) v = std::isnan(x_const) ? dist(rng) : x_const;
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
    const DType act = act_type(w_.dtype);
    want->assign(y_data_.size(), 0.0f);
    tol->assign(y_data_.size(), 0.0f);
    std::vector<float> wrow(static_cast<size_t>(s_.k)), xrow(static_cast<size_t>(s_.k));
    std::vector<uint8_t> q(row_size(act, s_.k));
    for (int64_t b = 0; b < s_.b2; ++b) {
      for (int64_t im = 0; im < s_.m; ++im) {
        quant::quantize_row_ref(act, x_.row<const float>(im, b), q.data(), s_.k);
        quant::dequantize_row_ref(act, q.data(), xrow.data(), s_.k);
        for (int64_t in = 0; in < s_.n; ++in) {
          quant::dequantize_row_ref(w_.dtype, w_.row(in, b / (s_.b2 / s_.b2w)), wrow.data(), s_.k);
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

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(ch));
  return s;
}

// The SIMD tiers this machine can run, within the active limit (FOLIO_ISA).
using backend_testing::simd_isas;

// The integer-dot kernels need VNNI at the AVX-512 tier, else AVX2 runs them;
// the FP4 types have AVX2 kernels only (they serve the AVX-512 tier too).
std::string kernel_for(const char* op, DType wt, Isa isa) {
  const bool avx512 = isa >= Isa::kAvx512 && cpu_features().avx512vnni && !fp4(wt);
  return std::string(op) + "." + dtype_name(wt) + (avx512 ? ".avx512" : ".avx2");
}

std::vector<Shape> shapes_for(DType t) {
  if (super_block(t)) {
    return {{256, 1, 1}, {768, 7, 3}, {512, 9, 5, 2, 1}, {256, 5, 4, 2, 2, 24}, {1280, 3, 1}};
  }
  if (t == DType::NVFP4) {
    return {{64, 1, 1},           {192, 7, 3}, {256, 9, 5, 2, 1},
            {320, 5, 4, 2, 2, 8}, {64, 13, 1}, {640, 6, 1, 1, 1, 0}};
  }
  return {{32, 1, 1},           {96, 7, 3},  {256, 9, 5, 2, 1},
          {160, 5, 4, 2, 2, 8}, {64, 13, 1}, {640, 6, 1, 1, 1, 0}};
}

// Compares y with the expectation; reports at most 5 elements.
void expect_close(const MatMulOp& mm, const std::string& what) {
  std::vector<float> want, tol;
  mm.expected(&want, &tol);
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    if (!(std::fabs(mm.y()[i] - want[i]) <= tol[i])) {
      ++bad;
      ADD_FAILURE() << what << " element " << i << ": got " << mm.y()[i] << ", want " << want[i]
                    << " +- " << tol[i];
    }
  }
}

class SimdMulMatMore : public ::testing::TestWithParam<DType> {};

TEST_P(SimdMulMatMore, MatchesDoublePrecisionDot) {
  const DType wt = GetParam();
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  for (Isa isa : simd_isas()) {
    CpuBackend backend(CpuBackendOptions{isa, false, nullptr});
    uint32_t seed = 11;
    for (const Shape& s : shapes_for(wt)) {
      MatMulOp mm(wt, s, seed++);
      const std::string kname = backend.kernel_name(mm.op());
      ASSERT_EQ(kname, kernel_for("mul_mat", wt, isa));
      ASSERT_TRUE(backend.run(mm.op()).ok());
      expect_close(mm, kname + " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) +
                           " m=" + std::to_string(s.m) + " b2=" + std::to_string(s.b2));
    }
  }
}

// All weight bits set or clear (largest / smallest codes, every fifth or
// high bit, largest packed scales and minimums) against constant activations
// (every quant +-127): the largest i16 pair sums the kernels form.
TEST_P(SimdMulMatMore, ExtremeCodesDoNotSaturate) {
  const DType wt = GetParam();
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  const Shape s{short_k(wt), 5, 3};
  for (Isa isa : simd_isas()) {
    CpuBackend backend(CpuBackendOptions{isa, false, nullptr});
    for (int fill : {0x00, 0xFF, 0x88}) {
      for (float xc : {1.0f, -1.0f}) {
        MatMulOp mm(wt, s, 5, fill, xc);
        ASSERT_TRUE(backend.run(mm.op()).ok());
        expect_close(mm, backend.kernel_name(mm.op()) + " fill " + std::to_string(fill) + " x " +
                             std::to_string(xc));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, SimdMulMatMore, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return lower(dtype_name(i.param));
                         });

// No reduction is split across threads and the tile decomposition depends
// only on the shape: 1, 2 and 3 threads give the same bytes. The shape is
// above the driver's parallel threshold (2^18 multiply-adds), so the work is
// really split.
TEST(SimdMulMatMoreThreads, BitIdenticalForAnyThreadCount) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool2(2), pool3(3);
  const Shape s{1024, 67, 5, 2, 1};
  for (Isa isa : simd_isas()) {
    for (DType wt : kTypes) {
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

// mul_mat_id: experts W [K, N, E], X [K, 1, T] shared by the chosen experts.
struct MatMulIdOp {
  std::vector<uint8_t> w;
  std::vector<float> x, y;
  std::vector<int32_t> ids;
  Op op;

  MatMulIdOp(DType wt, int64_t k, int64_t n, int64_t n_exp, int64_t n_used, int64_t n_tok) {
    std::mt19937 rng(31);
    w.resize(row_size(wt, k) * n * n_exp);
    fill_blocks(wt, w.data(), w.size(), -1, rng);
    std::uniform_real_distribution<float> dist(-1, 1);
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

// Each (slot, token) output equals the expert's row dots with the token's
// quantized activations, within the float-rounding bound.
TEST(SimdMulMatMoreId, MatchesPerExpertDoublePrecisionDot) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  const int64_t n = 6, n_exp = 5, n_used = 3, n_tok = 4;
  for (Isa isa : simd_isas()) {
    for (DType wt : kTypes) {
      const int64_t k = short_k(wt);
      MatMulIdOp mm(wt, k, n, n_exp, n_used, n_tok);
      CpuBackend backend(CpuBackendOptions{isa, false, nullptr});
      ASSERT_EQ(backend.kernel_name(mm.op), kernel_for("mul_mat_id", wt, isa));
      ASSERT_TRUE(backend.run(mm.op).ok());
      const DType act = act_type(wt);
      std::vector<uint8_t> q(row_size(act, k));
      std::vector<float> xq(static_cast<size_t>(k)), wrow(static_cast<size_t>(k));
      for (int64_t t = 0; t < n_tok; ++t) {
        quant::quantize_row_ref(act, mm.x.data() + t * k, q.data(), k);
        quant::dequantize_row_ref(act, q.data(), xq.data(), k);
        for (int64_t u = 0; u < n_used; ++u) {
          const int64_t e = mm.ids[static_cast<size_t>(t * n_used + u)];
          for (int64_t r = 0; r < n; ++r) {
            quant::dequantize_row_ref(wt, mm.w.data() + (e * n + r) * row_size(wt, k), wrow.data(),
                                      k);
            double sum = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              sum += static_cast<double>(wrow[i]) * xq[i];
              mag += std::fabs(static_cast<double>(wrow[i]) * xq[i]);
            }
            EXPECT_NEAR(mm.y[static_cast<size_t>((t * n_used + u) * n + r)], sum, 1e-5 * mag + 1e-6)
                << dtype_name(wt) << " " << isa_name(isa) << " t=" << t << " u=" << u
                << " row=" << r;
          }
        }
      }
    }
  }
}

TEST(SimdMulMatMoreThreads, MulMatIdBitIdenticalForAnyThreadCount) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool2(2), pool3(3);
  for (Isa isa : simd_isas()) {
    for (DType wt : kTypes) {
      MatMulIdOp a(wt, 1024, 37, 8, 4, 9), b(wt, 1024, 37, 8, 4, 9), c(wt, 1024, 37, 8, 4, 9);
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, nullptr}).run(a.op).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool2}).run(b.op).ok());
      ASSERT_TRUE(CpuBackend(CpuBackendOptions{isa, false, &pool3}).run(c.op).ok());
      EXPECT_EQ(std::memcmp(a.y.data(), b.y.data(), a.y.size() * 4), 0) << dtype_name(wt);
      EXPECT_EQ(std::memcmp(a.y.data(), c.y.data(), a.y.size() * 4), 0) << dtype_name(wt);
    }
  }
}

}  // namespace
}  // namespace folio
