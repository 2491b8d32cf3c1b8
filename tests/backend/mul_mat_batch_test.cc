// mul_mat results must not depend on the batch a row is computed in: the
// optimised kernels pick tile shapes by the number of activation rows (the
// float and Q4_K / Q5_K / Q6_K kernels switch to a wide tile from 8 rows on),
// and continuous batching puts one sequence's token next to any number of
// others'. So each output column of an op with many activation rows must
// equal, bit for bit, the op run on that row alone, for every weight type
// and SIMD tier. The wide float tile is also checked against a
// double-precision dot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "quant/quant.h"
#include "simd_isas.h"

namespace folio {
namespace mul_mat_batch_test {

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                        DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K};

using backend_testing::simd_isas;

// W [k, n] of type wt (random rows, quantized by the reference), X [k, m].
struct Problem {
  int64_t k, n, m;
  DType wt;
  std::vector<uint8_t> w;
  std::vector<float> x;

  Problem(DType type, int64_t k_, int64_t n_, int64_t m_, uint32_t seed)
      : k(k_), n(n_), m(m_), wt(type) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(k));
    w.resize(row_size(wt, k) * static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
      for (float& v : row) v = dist(rng);
      quant::quantize_row_ref(wt, row.data(), w.data() + r * row_size(wt, k), k);
    }
    x.resize(static_cast<size_t>(k * m));
    for (float& v : x) v = dist(rng) * 3.0f;
  }

  // Y [n, rows] for activation rows [first, first + rows).
  std::vector<float> run(CpuBackend& backend, int64_t first, int64_t rows) {
    std::vector<float> y(static_cast<size_t>(n * rows), -1.0f);
    Op op;
    op.kind = OpKind::kMulMat;
    op.src[0] = TensorView::contiguous(w.data(), wt, {k, n});
    op.src[1] = TensorView::contiguous(x.data() + first * k, DType::F32, {k, rows});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {n, rows});
    const Status s = backend.run(op);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return y;
  }
};

int64_t k_for(DType t) {
  // A few super-blocks / blocks plus, for float types, a tail of 16.
  if (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K) return 768;
  if (is_quantized(t)) return 352;
  return 300;
}

TEST(MulMatBatch, EachRowAsIfAlone) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool(2);
  for (Isa isa : simd_isas()) {
    CpuBackend backend(CpuBackendOptions{isa, false, &pool});
    for (DType wt : kTypes) {
      // 19 activation rows and 29 weight rows: column and row remainders for
      // every tile shape in use (narrow and wide).
      Problem p(wt, k_for(wt), 29, 19, 5);
      const std::vector<float> all = p.run(backend, 0, p.m);
      const std::vector<float> first8 = p.run(backend, 0, 8);
      for (int64_t c = 0; c < p.m; ++c) {
        const std::vector<float> one = p.run(backend, c, 1);
        EXPECT_EQ(std::memcmp(one.data(), all.data() + c * p.n, one.size() * 4), 0)
            << dtype_name(wt) << " " << isa_name(isa) << ": row " << c
            << " differs between a batch of 19 and alone";
        if (c < 8) {
          EXPECT_EQ(std::memcmp(one.data(), first8.data() + c * p.n, one.size() * 4), 0)
              << dtype_name(wt) << " " << isa_name(isa) << ": row " << c
              << " differs between a batch of 8 and alone";
        }
      }
    }
  }
}

TEST(MulMatBatch, WideFloatTileMatchesDoubleDot) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  for (Isa isa : simd_isas()) {
    CpuBackend backend(CpuBackendOptions{isa, false, nullptr});
    for (DType wt : {DType::F32, DType::F16, DType::BF16}) {
      Problem p(wt, 300, 13, 21, 11);
      const std::vector<float> y = p.run(backend, 0, p.m);
      std::vector<float> wrow(static_cast<size_t>(p.k));
      int bad = 0;
      for (int64_t r = 0; r < p.n && bad < 5; ++r) {
        quant::dequantize_row_ref(wt, p.w.data() + r * row_size(wt, p.k), wrow.data(), p.k);
        for (int64_t c = 0; c < p.m && bad < 5; ++c) {
          double sum = 0, mag = 0;
          for (int64_t i = 0; i < p.k; ++i) {
            const double prod = static_cast<double>(wrow[i]) * p.x[c * p.k + i];
            sum += prod;
            mag += std::fabs(prod);
          }
          const float got = y[static_cast<size_t>(c * p.n + r)];
          if (!(std::fabs(got - sum) <= 1e-5 * mag + 1e-6)) {
            ++bad;
            ADD_FAILURE() << dtype_name(wt) << " " << isa_name(isa) << " out(" << r << ", " << c
                          << ") = " << got << ", want " << sum;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace folio
