// Independent validation of the basic scalar reference kernels (the parity
// baseline): small hand-computed examples for every op, identities between
// ops (quantized mul_mat == mul_mat of the dequantized copy, mul_mat_id ==
// per-expert mul_mat, fused == unfused), error paths for bad ids. Rope has
// its own file (ref_rope_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backend/ref_test_util.h"

namespace folio::reftest {
namespace ref_basic_test {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------
// get_rows

TEST(RefGetRows, CopiesF32Rows) {
  Tensor table(DType::F32, {3, 4}), ids(DType::I32, {3}), dst(DType::F32, {3, 3});
  set_f32(table, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  set_i32(ids, {2, 0, 3});
  Op op = get_rows_op(table, ids, dst);
  ASSERT_TRUE(run_ref(op, "get_rows.ref").ok());
  EXPECT_EQ(dst.floats(), (std::vector<float>{20, 21, 22, 0, 1, 2, 30, 31, 32}));
}

TEST(RefGetRows, DequantizesEveryWeightType) {
  std::mt19937 rng(7);
  for (DType dt : kWeightTypes) {
    const int64_t k = block_size(dt) == 1 ? 64 : 2 * block_size(dt);
    Tensor table(dt, {k, 5}), ids(DType::I32, {2}), dst(DType::F32, {k, 2});
    fill_weight(table, rng);
    set_i32(ids, {4, 1});
    ASSERT_TRUE(run_ref(get_rows_op(table, ids, dst), "get_rows.ref").ok()) << dtype_name(dt);
    std::vector<float> want(static_cast<size_t>(k));
    quant::dequantize_row_ref(dt, table.v.row(4), want.data(), k);
    EXPECT_EQ(std::vector<float>(dst.f(), dst.f() + k), want) << dtype_name(dt);
    quant::dequantize_row_ref(dt, table.v.row(1), want.data(), k);
    EXPECT_EQ(std::vector<float>(dst.f() + k, dst.f() + 2 * k), want) << dtype_name(dt);
  }
}

TEST(RefGetRows, OutOfRangeIdIsAnErrorNamingIdAndIndex) {
  Tensor table(DType::F32, {2, 4}), ids(DType::I32, {3}), dst(DType::F32, {2, 3});
  set_i32(ids, {0, 4, 1});
  Status s = run_ref(get_rows_op(table, ids, dst), "get_rows.ref");
  ASSERT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("get_rows"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("id 4 at index 1"), std::string::npos) << s.message();
  set_i32(ids, {0, 1, -1});
  s = run_ref(get_rows_op(table, ids, dst), "get_rows.ref");
  ASSERT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("id -1 at index 2"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------------------
// mul_mat

TEST(RefMulMat, HandExample) {
  // W rows (n): [1 2 3], [-1 0 2]; X columns (m): [1 1 1], [2 0 -1].
  Tensor w(DType::F32, {3, 2}), x(DType::F32, {3, 2}), d(DType::F32, {2, 2});
  set_f32(w, {1, 2, 3, -1, 0, 2});
  set_f32(x, {1, 1, 1, 2, 0, -1});
  ASSERT_TRUE(run_ref(mul_mat_op(w, x, d), "mul_mat.ref").ok());
  // dst[n, m]: m=0: 6, 1; m=1: -1, -4.
  EXPECT_EQ(d.floats(), (std::vector<float>{6, 1, -1, -4}));
}

TEST(RefMulMat, AccumulatesInDouble) {
  // 1e8 + 1 - 1e8 in float order would lose the 1; the reference must not.
  Tensor w(DType::F32, {3, 1}), x(DType::F32, {3, 1}), d(DType::F32, {1, 1});
  set_f32(w, {1e8f, 1, -1e8f});
  set_f32(x, {1, 1, 1});
  ASSERT_TRUE(run_ref(mul_mat_op(w, x, d), "mul_mat.ref").ok());
  EXPECT_EQ(d.f()[0], 1.0f);
}

TEST(RefMulMat, BatchBroadcast) {
  // W batches: identity and 2 * identity ([2, 2, 2]); X has 4 batches in dim
  // 2 and 2 in dim 3 with W having 1 batch in dim 3: batches 0,1 use W0 and
  // 2,3 use W1.
  Tensor w(DType::F32, {2, 2, 2, 1}), x(DType::F32, {2, 3, 4, 2}), d(DType::F32, {2, 3, 4, 2});
  set_f32(w, {1, 0, 0, 1, 2, 0, 0, 2});
  std::mt19937 rng(1);
  fill_uniform(x, rng);
  ASSERT_TRUE(run_ref(mul_mat_op(w, x, d), "mul_mat.ref").ok());
  for (int64_t b3 = 0; b3 < 2; ++b3) {
    for (int64_t b2 = 0; b2 < 4; ++b2) {
      const float f = b2 < 2 ? 1.0f : 2.0f;
      for (int64_t m = 0; m < 3; ++m) {
        for (int64_t n = 0; n < 2; ++n) {
          EXPECT_EQ(*d.v.at<float>(n, m, b2, b3), f * *x.v.at<float>(n, m, b2, b3));
        }
      }
    }
  }
}

TEST(RefMulMat, QuantizedEqualsDequantizedCopy) {
  std::mt19937 rng(3);
  for (DType dt : kWeightTypes) {
    const int64_t k = 256, n = 5, m = 3;
    Tensor wq(dt, {k, n}), wf(DType::F32, {k, n}), x(DType::F32, {k, m});
    Tensor dq(DType::F32, {n, m}), df(DType::F32, {n, m});
    fill_weight(wq, rng);
    fill_uniform(x, rng);
    for (int64_t r = 0; r < n; ++r)
      quant::dequantize_row_ref(dt, wq.v.row(r), wf.v.row<float>(r), k);
    ASSERT_TRUE(run_ref(mul_mat_op(wq, x, dq), "mul_mat.ref").ok()) << dtype_name(dt);
    ASSERT_TRUE(run_ref(mul_mat_op(wf, x, df), "mul_mat.ref").ok());
    EXPECT_EQ(dq.floats(), df.floats()) << dtype_name(dt);
    double norm = 0;
    for (float v : df.floats()) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0) << dtype_name(dt) << ": all-zero weights test nothing";
  }
}

TEST(RefMulMat, StridedInputEqualsContiguous) {
  // X as a view of every other column of a wider buffer (nb[1] doubled).
  std::mt19937 rng(5);
  Tensor w(DType::Q8_0, {64, 4}), wide(DType::F32, {64, 6}), xc(DType::F32, {64, 3});
  Tensor d1(DType::F32, {4, 3}), d2(DType::F32, {4, 3});
  fill_weight(w, rng);
  fill_uniform(wide, rng);
  TensorView xs = wide.v;
  xs.ne[1] = 3;
  xs.nb[1] = 2 * wide.v.nb[1];
  for (int64_t m = 0; m < 3; ++m) {
    std::memcpy(xc.v.row(m), wide.v.row(2 * m), 64 * sizeof(float));
  }
  Op a = mul_mat_op(w, xc, d1);
  Op b = a;
  b.src[1] = xs;
  b.dst = d2.v;
  ASSERT_TRUE(run_ref(a, "mul_mat.ref").ok());
  ASSERT_TRUE(run_ref(b, "mul_mat.ref").ok());
  EXPECT_EQ(d1.floats(), d2.floats());
}

// ---------------------------------------------------------------------------
// mul_mat_id

// dst[:, u, t] must equal mul_mat(W[:, :, ids[u, t]], X[:, u % X1, t]).
void check_mul_mat_id(DType dt, int64_t x1) {
  std::mt19937 rng(11);
  const int64_t k = 256, n = 3, e = 4, n_used = 2, n_tok = 3;
  Tensor w(dt, {k, n, e}), x(DType::F32, {k, x1, n_tok}), ids(DType::I32, {n_used, n_tok});
  Tensor d(DType::F32, {n, n_used, n_tok});
  fill_weight(w, rng);
  fill_uniform(x, rng);
  set_i32(ids, {3, 0, 1, 1, 2, 3});
  ASSERT_TRUE(run_ref(mul_mat_id_op(w, x, ids, d), "mul_mat_id.ref").ok());
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t ex = ids.i()[t * n_used + u];
      TensorView we = w.v;  // expert slice [k, n]
      we.data = w.v.row(0, ex);
      we.ne[2] = 1;
      TensorView xu = x.v;  // column [k, 1]
      xu.data = x.v.row(u % x1, t);
      xu.ne[1] = 1;
      xu.ne[2] = 1;
      Tensor one(DType::F32, {n, 1});
      Op op = mul_mat_op(w, x, one);
      op.src[0] = we;
      op.src[1] = xu;
      ASSERT_TRUE(run_ref(op, "mul_mat.ref").ok());
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(*d.v.at<float>(i, u, t), one.f()[i])
            << dtype_name(dt) << " u=" << u << " t=" << t;
      }
    }
  }
}

TEST(RefMulMatId, EqualsPerExpertMulMat) {
  check_mul_mat_id(DType::F32, 2);
  check_mul_mat_id(DType::Q4_K, 2);
  check_mul_mat_id(DType::Q8_0, 1);  // one input shared by every chosen expert
}

TEST(RefMulMatId, OutOfRangeExpertIsAnError) {
  Tensor w(DType::F32, {32, 2, 3}), x(DType::F32, {32, 1, 2}), ids(DType::I32, {2, 2});
  Tensor d(DType::F32, {2, 2, 2});
  set_i32(ids, {0, 1, 2, 3});
  Status s = run_ref(mul_mat_id_op(w, x, ids, d), "mul_mat_id.ref");
  ASSERT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_NE(s.message().find("mul_mat_id"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("expert id 3 at ids[1, 1]"), std::string::npos) << s.message();
}

// ---------------------------------------------------------------------------
// add / mul / scale

TEST(RefBinary, AddMulBroadcast) {
  Tensor a(DType::F32, {3, 2, 2}), row(DType::F32, {3}), col(DType::F32, {1, 2}),
      d(DType::F32, {3, 2, 2});
  set_f32(a, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  set_f32(row, {10, 20, 30});
  set_f32(col, {2, -1});
  ASSERT_TRUE(run_ref(binary_op(OpKind::kAdd, a, row, d), "add.ref").ok());
  EXPECT_EQ(d.floats(), (std::vector<float>{11, 22, 33, 14, 25, 36, 17, 28, 39, 20, 31, 42}));
  ASSERT_TRUE(run_ref(binary_op(OpKind::kMul, a, col, d), "mul.ref").ok());
  EXPECT_EQ(d.floats(), (std::vector<float>{2, 4, 6, -4, -5, -6, 14, 16, 18, -10, -11, -12}));
  // In place: dst aliases src0.
  Op op = binary_op(OpKind::kAdd, a, row, d);
  op.dst = a.v;
  ASSERT_TRUE(run_ref(op, "add.ref").ok());
  EXPECT_EQ(a.f()[5], 36.0f);
}

TEST(RefBinary, Scale) {
  Tensor x(DType::F32, {4}), d(DType::F32, {4});
  set_f32(x, {0, 1, -2, 0.5f});
  Op op = unary_like(OpKind::kScale, x, d, ScaleParams{3.0f, -1.0f});
  ASSERT_TRUE(run_ref(op, "scale.ref").ok());
  EXPECT_EQ(d.floats(), (std::vector<float>{-1, 2, -7, 0.5f}));
}

// ---------------------------------------------------------------------------
// norms

TEST(RefNorm, RmsNormHandExample) {
  // Rows [1 2 3 4] (mean square 7.5) and [0 0 0 0] (stays 0), shape [4, 2].
  Tensor x(DType::F32, {4, 2}), w(DType::F32, {4}), d(DType::F32, {4, 2});
  set_f32(x, {1, 2, 3, 4, 0, 0, 0, 0});
  const float eps = 0.5f;
  ASSERT_TRUE(run_ref(unary_like(OpKind::kRmsNorm, x, d, RmsNormParams{eps}), "rms_norm.ref").ok());
  const double s = 1.0 / std::sqrt(7.5 + 0.5);  // = 1/sqrt(8)
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(d.f()[i], static_cast<float>((i + 1) * s));
  for (int i = 4; i < 8; ++i) EXPECT_EQ(d.f()[i], 0.0f);
  set_f32(w, {1, -1, 2, 0});
  Op op = unary_like(OpKind::kRmsNorm, x, d, RmsNormParams{eps});
  op.src[1] = w.v;
  ASSERT_TRUE(run_ref(op, "rms_norm.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], static_cast<float>(s));
  EXPECT_FLOAT_EQ(d.f()[1], static_cast<float>(-2 * s));
  EXPECT_FLOAT_EQ(d.f()[2], static_cast<float>(6 * s));
  EXPECT_EQ(d.f()[3], 0.0f);
}

TEST(RefNorm, AddRmsNormEqualsAddThenRmsNorm) {
  std::mt19937 rng(2);
  Tensor a(DType::F32, {40, 3}), b(DType::F32, {40, 3}), w(DType::F32, {40});
  Tensor d(DType::F32, {40, 3}), sum(DType::F32, {40, 3});
  Tensor d_ref(DType::F32, {40, 3}), sum_ref(DType::F32, {40, 3});
  fill_uniform(a, rng);
  fill_uniform(b, rng);
  fill_uniform(w, rng);
  Op fused = binary_op(OpKind::kAddRmsNorm, a, b, d);
  fused.dst2 = sum.v;
  fused.src[2] = w.v;
  fused.params = RmsNormParams{1e-5f};
  ASSERT_TRUE(run_ref(fused, "add_rms_norm.ref").ok());
  ASSERT_TRUE(run_ref(binary_op(OpKind::kAdd, a, b, sum_ref), "add.ref").ok());
  Op norm = unary_like(OpKind::kRmsNorm, sum_ref, d_ref, RmsNormParams{1e-5f});
  norm.src[1] = w.v;
  ASSERT_TRUE(run_ref(norm, "rms_norm.ref").ok());
  EXPECT_EQ(sum.floats(), sum_ref.floats());
  EXPECT_EQ(d.floats(), d_ref.floats());
  EXPECT_EQ(sum.f()[7], a.f()[7] + b.f()[7]);
  // In place: the new residual overwrites a.
  fused.dst2 = a.v;
  ASSERT_TRUE(run_ref(fused, "add_rms_norm.ref").ok());
  EXPECT_EQ(a.floats(), sum_ref.floats());
  EXPECT_EQ(d.floats(), d_ref.floats());
}

TEST(RefNorm, L2Norm) {
  Tensor x(DType::F32, {2, 2}), d(DType::F32, {2, 2});
  set_f32(x, {3, 4, 1e-8f, 0});
  ASSERT_TRUE(run_ref(unary_like(OpKind::kL2Norm, x, d, NormParams{1e-6f}), "l2_norm.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], 0.6f);
  EXPECT_FLOAT_EQ(d.f()[1], 0.8f);
  EXPECT_FLOAT_EQ(d.f()[2], 1e-2f);  // norm 1e-8 < eps: divided by eps
  EXPECT_EQ(d.f()[3], 0.0f);
}

TEST(RefNorm, LayerNormHandExample) {
  // Rows [1 2 3 4] (mean 2.5, variance 1.25) and [5 5 5 5] (variance 0: stays
  // 0, then the bias), shape [4, 2].
  Tensor x(DType::F32, {4, 2}), w(DType::F32, {4}), b(DType::F32, {4}), d(DType::F32, {4, 2});
  set_f32(x, {1, 2, 3, 4, 5, 5, 5, 5});
  const float eps = 0.75f;
  ASSERT_TRUE(run_ref(unary_like(OpKind::kNorm, x, d, NormParams{eps}), "norm.ref").ok());
  const double s = 1.0 / std::sqrt(1.25 + 0.75);  // = 1/sqrt(2)
  const double centered[4] = {-1.5, -0.5, 0.5, 1.5};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(d.f()[i], static_cast<float>(centered[i] * s));
  for (int i = 4; i < 8; ++i) EXPECT_EQ(d.f()[i], 0.0f);
  set_f32(w, {1, -1, 2, 0});
  set_f32(b, {0.5f, 0, -1, 3});
  Op op = unary_like(OpKind::kNorm, x, d, NormParams{eps});
  op.src[1] = w.v;
  op.src[2] = b.v;
  ASSERT_TRUE(run_ref(op, "norm.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], static_cast<float>(-1.5 * s + 0.5));
  EXPECT_FLOAT_EQ(d.f()[1], static_cast<float>(0.5 * s));
  EXPECT_FLOAT_EQ(d.f()[2], static_cast<float>(1.0 * s - 1.0));
  EXPECT_EQ(d.f()[3], 3.0f);
  EXPECT_EQ(d.floats()[4], 0.5f);  // constant row: only the bias
  // In place: dst may be the input.
  Op in_place = unary_like(OpKind::kNorm, x, x, NormParams{eps});
  ASSERT_TRUE(run_ref(in_place, "norm.ref").ok());
  EXPECT_FLOAT_EQ(x.f()[3], static_cast<float>(1.5 * s));
}

// ---------------------------------------------------------------------------
// soft_max

TEST(RefSoftMax, ScaleAndMaskWithFullyMaskedRow) {
  // x [3, 2, 2]; mask [3, 2] shared by both dim-2 slices: row 0 masks
  // position 2, row 1 masks everything.
  Tensor x(DType::F32, {3, 2, 2}), mask(DType::F32, {3, 2}), d(DType::F32, {3, 2, 2});
  set_f32(x, {2, 4, 6, 1, 1, 1, 0, 0, 8, 5, 6, 7});
  set_f32(mask, {0, 0, -kInf, -kInf, -kInf, -kInf});
  Op op = unary_like(OpKind::kSoftMax, x, d, SoftMaxParams{0.5f});
  op.src[1] = mask.v;
  ASSERT_TRUE(run_ref(op, "soft_max.ref").ok());
  // Row (0, 0): softmax(1, 2) over the first two, exact 0 for the masked one.
  const double e = std::exp(1.0);
  EXPECT_FLOAT_EQ(d.f()[0], static_cast<float>(1 / (1 + e)));
  EXPECT_FLOAT_EQ(d.f()[1], static_cast<float>(e / (1 + e)));
  EXPECT_EQ(d.f()[2], 0.0f);
  for (int i = 3; i < 6; ++i) EXPECT_EQ(d.f()[i], 0.0f);  // fully masked: zeros, not NaN
  EXPECT_FLOAT_EQ(d.f()[6], 0.5f);                        // softmax(0, 0) ignoring the 8
  EXPECT_FLOAT_EQ(d.f()[7], 0.5f);
  EXPECT_EQ(d.f()[8], 0.0f);
  // Without a mask: softmax(1, 1, 1) = 1/3 each.
  op.src[1] = TensorView{};
  ASSERT_TRUE(run_ref(op, "soft_max.ref").ok());
  for (int i = 3; i < 6; ++i) EXPECT_FLOAT_EQ(d.f()[i], 1.0f / 3);
  double total = 0;
  for (int i = 9; i < 12; ++i) total += d.f()[i];
  EXPECT_NEAR(total, 1.0, 1e-7);
}

// ---------------------------------------------------------------------------
// unary

float unary1(UnaryKind kind, float v) {
  Tensor x(DType::F32, {1}), d(DType::F32, {1});
  x.f()[0] = v;
  EXPECT_TRUE(run_ref(unary_like(OpKind::kUnary, x, d, UnaryParams{kind}), "unary.ref").ok());
  return d.f()[0];
}

TEST(RefUnary, HandValues) {
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSilu, 1.0f), 0.7310585786f);
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSilu, -2.0f), -2.0f / (1.0f + std::exp(2.0f)));
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kGelu, 1.0f), 0.8411919906f);     // tanh approximation
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kGeluErf, 1.0f), 0.8413447461f);  // exact
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSigmoid, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSigmoid, 2.0f), 1.0f / (1.0f + std::exp(-2.0f)));
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kExp, 1.0f), 2.718281828f);
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kTanh, 0.5f), 0.4621171573f);
  EXPECT_EQ(unary1(UnaryKind::kRelu, -1.5f), 0.0f);
  EXPECT_EQ(unary1(UnaryKind::kRelu, 1.5f), 1.5f);
  EXPECT_EQ(unary1(UnaryKind::kNeg, 1.5f), -1.5f);
  EXPECT_EQ(unary1(UnaryKind::kSilu, -1000.0f), 0.0f);  // no NaN from inf / inf
}

TEST(RefUnary, SoftplusFollowsGgmlThreshold) {
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSoftplus, 0.0f), 0.6931471806f);  // ln 2
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSoftplus, 1.0f), 1.3132616875f);
  EXPECT_FLOAT_EQ(unary1(UnaryKind::kSoftplus, -30.0f), 9.357623e-14f);  // ~ e^x, not 0
  // Above 20 softplus is the identity: no overflow of e^x, exact x.
  EXPECT_EQ(unary1(UnaryKind::kSoftplus, 20.5f), 20.5f);
  EXPECT_EQ(unary1(UnaryKind::kSoftplus, 100.0f), 100.0f);
  EXPECT_EQ(unary1(UnaryKind::kSoftplus, 1e30f), 1e30f);
  // At the threshold itself log(1 + e^20) = 20 + 2e-9 rounds to 20.
  EXPECT_EQ(unary1(UnaryKind::kSoftplus, 20.0f), 20.0f);
}

// ---------------------------------------------------------------------------
// glu

TEST(RefGlu, SplitAndFusedForms) {
  const std::vector<float> g = {1, -2, 0.5f}, u = {2, 3, -4};
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  std::vector<float> want(3);
  for (int i = 0; i < 3; ++i) want[i] = static_cast<float>(silu(g[i]) * u[i]);

  Tensor gate(DType::F32, {3}), up(DType::F32, {3}), d(DType::F32, {3});
  set_f32(gate, g);
  set_f32(up, u);
  Op split = binary_op(OpKind::kGlu, gate, up, d);
  split.params = GluParams{GluKind::kSwiGlu, false};
  ASSERT_TRUE(run_ref(split, "glu.ref").ok());
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(d.f()[i], want[i]);

  Tensor fused(DType::F32, {6}), swapped(DType::F32, {6});
  set_f32(fused, {g[0], g[1], g[2], u[0], u[1], u[2]});
  set_f32(swapped, {u[0], u[1], u[2], g[0], g[1], g[2]});
  Tensor d2(DType::F32, {3});
  Op f = unary_like(OpKind::kGlu, fused, d2, GluParams{GluKind::kSwiGlu, false});
  ASSERT_TRUE(run_ref(f, "glu.ref").ok());
  EXPECT_EQ(d2.floats(), d.floats());
  f.src[0] = swapped.v;
  f.params = GluParams{GluKind::kSwiGlu, true};
  ASSERT_TRUE(run_ref(f, "glu.ref").ok());
  EXPECT_EQ(d2.floats(), d.floats());

  // geglu / geglu_erf use the gelu variants on the gate.
  split.params = GluParams{GluKind::kGeGlu, false};
  ASSERT_TRUE(run_ref(split, "glu.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], 0.8411919906f * 2);
  split.params = GluParams{GluKind::kGeGluErf, false};
  ASSERT_TRUE(run_ref(split, "glu.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], 0.8413447461f * 2);
}

// swiglu_oai: gate clamped above at the limit only, up on both sides, then
// g * sigmoid(alpha g) * (u + 1).
TEST(RefGlu, SwiGluOaiClamps) {
  const std::vector<float> g = {1.0f, 9.0f, -9.0f, 2.0f}, u = {0.5f, 1.0f, 3.0f, -8.0f};
  Tensor gate(DType::F32, {4}), up(DType::F32, {4}), d(DType::F32, {4});
  set_f32(gate, g);
  set_f32(up, u);
  Op op = binary_op(OpKind::kGlu, gate, up, d);
  op.params = GluParams{GluKind::kSwiGluOai, false};  // alpha 1.702, limit 7
  ASSERT_TRUE(run_ref(op, "glu.ref").ok());
  auto f = [](double gv, double uv) { return gv / (1 + std::exp(-1.702 * gv)) * (uv + 1); };
  EXPECT_FLOAT_EQ(d.f()[0], static_cast<float>(f(1.0, 0.5)));
  EXPECT_FLOAT_EQ(d.f()[1], static_cast<float>(f(7.0, 1.0)));   // gate 9 -> 7
  EXPECT_FLOAT_EQ(d.f()[2], static_cast<float>(f(-9.0, 3.0)));  // no lower clamp on gate
  EXPECT_FLOAT_EQ(d.f()[3], static_cast<float>(f(2.0, -7.0)));  // up -8 -> -7
  GluParams other{GluKind::kSwiGluOai, false};
  other.alpha = 1.0f;
  other.limit = 0.5f;
  op.params = other;
  ASSERT_TRUE(run_ref(op, "glu.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], static_cast<float>(0.5 / (1 + std::exp(-0.5)) * 1.5));
  // A negative limit is invalid.
  other.limit = -1.0f;
  op.params = other;
  EXPECT_FALSE(validate_op(op).ok());
}

// The fused 2-D products share their operand checks: each refuses a bad
// operand with a message that names it, and accepts the well-formed op.
TEST(RefFusedProducts, BadOperandsAreRefusedByName) {
  Tensor w(DType::F32, {8, 6}), x(DType::F32, {8, 3}), r(DType::F32, {6, 3}),
      half(DType::F32, {3, 3}), norm(DType::F32, {8}), w3(DType::F32, {8, 6, 2}),
      short_norm(DType::F32, {7}), i32(DType::I32, {8, 3}), gate(DType::F32, {1, 3}),
      gate_i32(DType::I32, {1, 3}), gate_short(DType::F32, {1, 2});
  // `base` changed by `change` is refused with a message naming `what`.
  auto expect_refused = [](Op op, const auto& change, const char* what) {
    change(op);
    const Status s = validate_op(op);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.to_string();
  };
  // w x x, with src[2] = `extra`, into `dst`.
  auto product = [&](OpKind kind, const TensorView& extra, const TensorView& dst, OpParams params) {
    Op op;
    op.kind = kind;
    op.src[0] = w.v;
    op.src[1] = x.v;
    op.src[2] = extra;
    op.dst = dst;
    op.params = std::move(params);
    return op;
  };
  GluParams oai{GluKind::kSwiGluOai, false};
  oai.limit = -1.0f;
  NormMulMatParams glu_mode;
  glu_mode.glu = true;
  NormMulMatParams glu_mode_oai = glu_mode;
  glu_mode_oai.glu_params = oai;

  const Op glu =
      product(OpKind::kMulMatGlu, TensorView{}, half.v, GluParams{GluKind::kSwiGlu, false});
  EXPECT_TRUE(validate_op(glu).ok()) << validate_op(glu).to_string();
  expect_refused(
      glu, [&](Op& o) { o.dst = r.v; }, "weight rows (gate and up) twice dst N");
  expect_refused(
      glu, [&](Op& o) { o.src[0] = w3.v; }, "weight must be 2-D");
  expect_refused(
      glu, [&](Op& o) { o.src[1] = i32.v; }, "input must be f32, got i32");
  expect_refused(
      glu, [&](Op& o) { o.params = oai; }, "swiglu_oai");

  const Op add = product(OpKind::kMulMatAdd, r.v, r.v, NoParams{});
  EXPECT_TRUE(validate_op(add).ok()) << validate_op(add).to_string();
  expect_refused(
      add, [](Op& o) { o.src[2] = TensorView{}; }, "missing residual");
  expect_refused(
      add, [&](Op& o) { o.dst = half.v; }, "dst N");
  expect_refused(
      add, [&](Op& o) { o.src[1] = norm.v; }, "dst M");
  Op gated = add;  // a gated shared expert's gate logits, one per column
  gated.src[3] = gate.v;
  EXPECT_TRUE(validate_op(gated).ok()) << validate_op(gated).to_string();
  expect_refused(
      gated, [&](Op& o) { o.src[3] = gate_i32.v; }, "gate must be f32");
  expect_refused(
      gated, [&](Op& o) { o.src[3] = r.v; }, "gate rows");
  expect_refused(
      gated, [&](Op& o) { o.src[3] = gate_short.v; }, "gate columns");

  const Op rms = product(OpKind::kRmsNormMulMat, norm.v, r.v, NormMulMatParams{});
  EXPECT_TRUE(validate_op(rms).ok()) << validate_op(rms).to_string();
  expect_refused(
      rms, [&](Op& o) { o.src[2] = short_norm.v; }, "norm weight length");
  expect_refused(
      rms, [&](Op& o) { o.src[2] = i32.v; }, "norm weight must be f32");
  // The GLU mode wants half the rows, and swiglu_oai's parameters checked.
  expect_refused(
      rms, [&](Op& o) { o.params = glu_mode; }, "dst N");
  const Op rms_glu = product(OpKind::kRmsNormMulMat, norm.v, half.v, glu_mode);
  EXPECT_TRUE(validate_op(rms_glu).ok()) << validate_op(rms_glu).to_string();
  expect_refused(
      rms_glu, [&](Op& o) { o.params = glu_mode_oai; }, "swiglu_oai");
}

// ---------------------------------------------------------------------------
// top_k / argsort

TEST(RefSort, TiesGoToTheLowerIndex) {
  Tensor x(DType::F32, {5, 2}), top(DType::I32, {3, 2}), all(DType::I32, {5, 2});
  set_f32(x, {1, 3, 3, 2, 3, /**/ -1, -1, -1, -1, -1});
  Op tk = unary_like(OpKind::kTopK, x, top, TopKParams{3});
  ASSERT_TRUE(run_ref(tk, "top_k.ref").ok());
  EXPECT_EQ(top.ints(), (std::vector<int32_t>{1, 2, 4, 0, 1, 2}));
  Op as = unary_like(OpKind::kArgsort, x, all, ArgsortParams{false});
  ASSERT_TRUE(run_ref(as, "argsort.ref").ok());
  EXPECT_EQ(all.ints(), (std::vector<int32_t>{0, 3, 1, 2, 4, 0, 1, 2, 3, 4}));
  as.params = ArgsortParams{true};
  ASSERT_TRUE(run_ref(as, "argsort.ref").ok());
  EXPECT_EQ(all.ints(), (std::vector<int32_t>{1, 2, 4, 3, 0, 0, 1, 2, 3, 4}));
}

TEST(RefSort, NanOrdersBelowEverything) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x(DType::F32, {4}), top(DType::I32, {2}), all(DType::I32, {4});
  set_f32(x, {nan, -kInf, 0.5f, nan});
  ASSERT_TRUE(run_ref(unary_like(OpKind::kTopK, x, top, TopKParams{2}), "top_k.ref").ok());
  EXPECT_EQ(top.ints(), (std::vector<int32_t>{2, 1}));
  ASSERT_TRUE(
      run_ref(unary_like(OpKind::kArgsort, x, all, ArgsortParams{false}), "argsort.ref").ok());
  EXPECT_EQ(all.ints(), (std::vector<int32_t>{0, 3, 1, 2}));
}

TEST(RefCpy, TransposesBitForBitAndRefusesOverlap) {
  // x [3, 2] into the transposing view of d [2, 3]: d[j, i] = x[i, j].
  std::vector<float> x = {1.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 4.0f, 5.0f, 6.0f};
  std::vector<float> d(6, 0.0f);
  Op op;
  op.kind = OpKind::kCpy;
  op.src[0] = TensorView::contiguous(x.data(), DType::F32, {3, 2});
  op.dst = TensorView::contiguous(d.data(), DType::F32, {3, 2});
  op.dst.nb = {2 * sizeof(float), sizeof(float), 6 * sizeof(float), 6 * sizeof(float)};
  ASSERT_TRUE(run_ref(op, "cpy.ref").ok());
  const std::vector<float> want = {1.0f, 4.0f, -0.0f, 5.0f, x[2], 6.0f};
  EXPECT_EQ(std::memcmp(d.data(), want.data(), sizeof(float) * 6), 0);
  // Input and output sharing bytes: invalid, nothing runs.
  Op bad = op;
  bad.dst.data = x.data() + 1;
  bad.dst.nb = op.src[0].nb;
  bad.dst.ne = {3, 1, 1, 1};
  bad.src[0].ne = {3, 1, 1, 1};
  EXPECT_EQ(validate_op(bad).code(), StatusCode::kInvalidArgument);
  // Strides that are not whole elements are refused.
  bad = op;
  bad.dst.nb[0] = 2;
  EXPECT_EQ(validate_op(bad).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace folio::reftest
