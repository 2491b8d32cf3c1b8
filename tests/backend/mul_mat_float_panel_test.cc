// The float mul_mat panel path (AVX-512, F16 / BF16 weights, 8+ activation
// rows: weights widened once per strip, K taken in chunks, activation rows in
// column blocks) must give each output bit for bit what the one-row path
// gives, and the same with one thread or two. The shapes cross every
// boundary of that path: K over several chunks with a K tail, activation
// rows over several column blocks with a partial tile, weight rows with a
// partial strip, and batch broadcast. A double-precision dot bounds the
// values themselves. Runs on every SIMD tier the machine has (on AVX2 it
// checks the same guarantee for that tier's tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "quant/quant.h"
#include "simd_isas.h"

namespace folio {
namespace mul_mat_float_panel_test {

using backend_testing::simd_isas;

// W [k, n, wb] of type wt, X [k, m, xb] (xb a multiple of wb: broadcast).
struct Problem {
  int64_t k, n, m, wb, xb;
  DType wt;
  std::vector<uint8_t> w;
  std::vector<float> x;

  Problem(DType type, int64_t k_, int64_t n_, int64_t m_, int64_t wb_, int64_t xb_, uint32_t seed)
      : k(k_), n(n_), m(m_), wb(wb_), xb(xb_), wt(type) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(k));
    const size_t rs = row_size(wt, k);
    w.resize(rs * static_cast<size_t>(n * wb));
    for (int64_t r = 0; r < n * wb; ++r) {
      for (float& v : row) v = dist(rng);
      quant::quantize_row_ref(wt, row.data(), w.data() + r * rs, k);
    }
    x.resize(static_cast<size_t>(k * m * xb));
    for (float& v : x) v = dist(rng) * 3.0f;
  }

  // Y [n, rows, xb] for activation rows [first, first + rows) of each batch.
  std::vector<float> run(CpuBackend& backend, int64_t first, int64_t rows) const {
    std::vector<float> xs(static_cast<size_t>(k * rows * xb));
    for (int64_t b = 0; b < xb; ++b) {
      std::memcpy(xs.data() + b * k * rows, x.data() + (b * m + first) * k,
                  static_cast<size_t>(k * rows) * 4);
    }
    std::vector<float> y(static_cast<size_t>(n * rows * xb), -1.0f);
    Op op;
    op.kind = OpKind::kMulMat;
    op.src[0] = TensorView::contiguous(const_cast<uint8_t*>(w.data()), wt, {k, n, wb});
    op.src[1] = TensorView::contiguous(xs.data(), DType::F32, {k, rows, xb});
    op.dst = TensorView::contiguous(y.data(), DType::F32, {n, rows, xb});
    const Status s = backend.run(op);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return y;
  }
};

struct Shape {
  int64_t k, n, m, wb, xb;
};

// K = 1100: chunks of 512 + 512 + 76 (a K tail of 12); 150 rows: two column
// blocks. K = 8200: 28-row column blocks, so 60 rows end with a block of a
// single tile (which widens and prefetches at once). 3 batches share each
// weight batch in the third shape. K = 70000: blocks of one tile throughout.
constexpr Shape kShapes[] = {
    {1100, 29, 150, 1, 1}, {8200, 13, 60, 1, 1}, {600, 17, 19, 2, 6}, {70000, 7, 17, 1, 1}};

TEST(MulMatFloatPanel, EachRowAsIfAloneAnyThreads) {
  if (simd_isas().empty()) GTEST_SKIP() << "hardware: no AVX2 on this machine (or FOLIO_ISA=scalar)";
  ThreadPool pool(2);
  for (Isa isa : simd_isas()) {
    CpuBackend one(CpuBackendOptions{isa, false, nullptr});
    CpuBackend two(CpuBackendOptions{isa, false, &pool});
    for (DType wt : {DType::F16, DType::BF16, DType::F32}) {
      for (const Shape& s : kShapes) {
        const Problem p(wt, s.k, s.n, s.m, s.wb, s.xb, 7);
        const std::vector<float> all1 = p.run(one, 0, p.m);
        const std::vector<float> all2 = p.run(two, 0, p.m);
        EXPECT_EQ(std::memcmp(all1.data(), all2.data(), all1.size() * 4), 0)
            << dtype_name(wt) << " " << isa_name(isa) << " K=" << s.k << ": 1 vs 2 threads";
        // Single rows (the M = 1 path) at the block edges and a few inside.
        for (int64_t c : {int64_t{0}, int64_t{1}, p.m / 2, p.m - 2, p.m - 1}) {
          const std::vector<float> alone = p.run(one, c, 1);
          for (int64_t b = 0; b < p.xb; ++b) {
            EXPECT_EQ(std::memcmp(alone.data() + b * p.n, all1.data() + (b * p.m + c) * p.n,
                                  static_cast<size_t>(p.n) * 4),
                      0)
                << dtype_name(wt) << " " << isa_name(isa) << " K=" << s.k << ": row " << c
                << " of batch " << b << " differs from the row alone";
          }
        }
        // Values: a double-precision dot on the widened weights.
        std::vector<float> wrow(static_cast<size_t>(p.k));
        const size_t rs = row_size(wt, p.k);
        int bad = 0;
        for (int64_t b = 0; b < p.xb && bad < 5; ++b) {
          const int64_t wb = b / (p.xb / p.wb);
          for (int64_t r = 0; r < p.n && bad < 5; ++r) {
            quant::dequantize_row_ref(wt, p.w.data() + (wb * p.n + r) * rs, wrow.data(), p.k);
            for (int64_t c = 0; c < p.m && bad < 5; c += 7) {
              double sum = 0, mag = 0;
              for (int64_t i = 0; i < p.k; ++i) {
                const double prod = static_cast<double>(wrow[i]) *
                                    p.x[static_cast<size_t>((b * p.m + c) * p.k + i)];
                sum += prod;
                mag += std::fabs(prod);
              }
              const float got = all1[static_cast<size_t>((b * p.m + c) * p.n + r)];
              if (!(std::fabs(got - sum) <= 1e-5 * mag + 1e-6)) {
                ++bad;
                ADD_FAILURE() << dtype_name(wt) << " " << isa_name(isa) << " K=" << s.k << " out("
                              << r << ", " << c << ", " << b << ") = " << got << ", want " << sum;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace folio
