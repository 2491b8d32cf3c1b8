// The MoE router's reference (kMoeRoute, backend/cpu/ref/moe_route.cc):
// hand-worked routes (softmax weights renormalised and scaled, a selection
// bias that picks experts without weighting them, DeepSeek V3's expert
// groups scored by their two largest values), and on random logits the
// unfused path the model ran before the op existed: soft_max and top_k on
// the reference kernels, then the chosen probabilities gathered and
// renormalised (sum in double, clamped at 2^-14), bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backend/ref_test_util.h"

namespace folio::reftest {
namespace ref_moe_route_test {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Route {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Route route(const std::vector<float>& logits, int64_t x, const std::vector<float>& bias,
            const MoeRouteParams& p) {
  const int64_t n = static_cast<int64_t>(logits.size()) / x;
  Tensor l(DType::F32, {x, n}), b(DType::F32, {x}), ids(DType::I32, {p.k, n}),
      w(DType::F32, {p.k, n});
  set_f32(l, logits);
  Op op = make_op(OpKind::kMoeRoute, {&l}, ids, p);
  if (!bias.empty()) {
    set_f32(b, bias);
    op.src[1] = b.v;
  }
  op.dst2 = w.v;
  EXPECT_TRUE(validate_op(op).ok()) << validate_op(op).to_string();
  EXPECT_TRUE(run_ref(op, "moe_route.ref").ok());
  return {ids.ints(), w.floats()};
}

TEST(RefMoeRoute, SoftmaxRenormalisedAndScaled) {
  // p = 0.1, 0.2, 0.3, 0.4; the two largest renormalised: 4/7, 3/7; times 2.
  const std::vector<float> l = {std::log(1.0f), std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  const Route r = route(l, 4, {}, {MoeGating::kSoftmax, 2, 1, 1, true, 2.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{3, 2}));
  EXPECT_NEAR(r.weights[0], 8.0f / 7.0f, 1e-6f);
  EXPECT_NEAR(r.weights[1], 6.0f / 7.0f, 1e-6f);
  // Without renormalisation the weights are the probabilities.
  const Route plain = route(l, 4, {}, {MoeGating::kSoftmax, 2, 1, 1, false, 1.0f});
  EXPECT_NEAR(plain.weights[0], 0.4f, 1e-6f);
  EXPECT_NEAR(plain.weights[1], 0.3f, 1e-6f);
}

TEST(RefMoeRoute, SelectionBiasPicksButDoesNotWeigh) {
  // Equal logits: sigmoid 0.5 everywhere; the bias picks experts 3 then 1,
  // whose weights stay 0.5 (renormalised: 0.5 each).
  const Route r = route({0, 0, 0, 0}, 4, {0.0f, 0.1f, 0.0f, 0.2f},
                        {MoeGating::kSigmoid, 2, 1, 1, false, 1.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(r.weights, (std::vector<float>{0.5f, 0.5f}));
}

TEST(RefMoeRoute, SoftmaxOfTheChosenLogits) {
  // gpt-oss: top 2 logits by value (ln 3, ln 1), weights their softmax: 3/4, 1/4.
  const Route r = route({std::log(1.0f), -5.0f, std::log(3.0f)}, 3, {},
                        {MoeGating::kSoftmaxWeight, 2, 1, 1, false, 1.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0}));
  EXPECT_NEAR(r.weights[0], 0.75f, 1e-6f);
  EXPECT_NEAR(r.weights[1], 0.25f, 1e-6f);
}

// Expert groups, with the logits themselves as selection values
// (kSoftmaxWeight) and k = every expert the kept groups hold.
std::vector<int32_t> grouped(const std::vector<float>& sel, int64_t x, int groups, int used) {
  const int k = static_cast<int>(x / groups) * used;
  return route(sel, x, {}, {MoeGating::kSoftmaxWeight, k, groups, used, false, 1.0f}).ids;
}

TEST(RefMoeRoute, GroupsScoreTheirTwoLargestValues) {
  // 8 experts in 4 groups of 2; scores 1.0, 1.1, 0.85, 0.5 -> groups 1 and 0.
  EXPECT_EQ(grouped({0.1f, 0.9f, 0.5f, 0.6f, 0.8f, 0.05f, 0.3f, 0.2f}, 8, 4, 2),
            (std::vector<int32_t>{1, 3, 2, 0}));
  // 6 experts in 2 groups of 3: group 0's two best sum to 1.0, group 1's to
  // 0.9 (all three: 1.2), so group 0 wins.
  EXPECT_EQ(grouped({0.5f, 0.5f, 0.0f, 0.6f, 0.3f, 0.3f}, 6, 2, 1),
            (std::vector<int32_t>{0, 1, 2}));
  // Negative values (a selection bias may push them below 0): scores -3,
  // 0.5, -3: group 1 alone.
  EXPECT_EQ(grouped({-1.0f, -2.0f, 0.25f, 0.25f, -4.0f, 1.0f}, 6, 3, 1),
            (std::vector<int32_t>{2, 3}));
  // A tie between groups goes to the lower one.
  EXPECT_EQ(grouped({0.5f, 0.5f, 0.25f, 0.75f}, 4, 2, 1), (std::vector<int32_t>{0, 1}));
  // Each token chooses its own groups.
  EXPECT_EQ(grouped({0.9f, 0.8f, 0.1f, 0.2f, 0.1f, 0.2f, 0.9f, 0.8f}, 4, 2, 1),
            (std::vector<int32_t>{0, 1, 2, 3}));
  // An expert outside the kept groups is never chosen: scores -0.4, 5.0,
  // 0.7 keep groups 1 and 2, so expert 0 (0.6) loses to expert 5 (0.4).
  const Route r = route({0.6f, -1.0f, 5.0f, 0.0f, 0.3f, 0.4f}, 6, {},
                        {MoeGating::kSoftmaxWeight, 2, 3, 2, false, 1.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 5}));
}

TEST(RefMoeRoute, EqualsSoftmaxTopKAndTheGatherItReplaces) {
  const int64_t x = 128, n = 5;
  const int k = 8;
  std::mt19937 rng(7);
  Tensor l(DType::F32, {x, n}), probs(DType::F32, {x, n}), ids(DType::I32, {k, n});
  fill_uniform(l, rng, -4.0f, 4.0f);
  ASSERT_TRUE(run_ref(make_op(OpKind::kSoftMax, {&l}, probs, SoftMaxParams{}), "soft_max.ref").ok());
  ASSERT_TRUE(run_ref(make_op(OpKind::kTopK, {&probs}, ids, TopKParams{k}), "top_k.ref").ok());
  std::vector<float> want(static_cast<size_t>(k * n));
  for (int64_t t = 0; t < n; ++t) {
    double sum = 0.0;
    for (int u = 0; u < k; ++u) {
      want[t * k + u] = probs.f()[t * x + ids.i()[t * k + u]];
      sum += want[t * k + u];
    }
    const float s = std::max(static_cast<float>(sum), 6.103515625e-5f);
    for (int u = 0; u < k; ++u) want[t * k + u] = want[t * k + u] / s * 2.5f;
  }
  const Route r = route(l.floats(), x, {}, {MoeGating::kSoftmax, k, 1, 1, true, 2.5f});
  EXPECT_EQ(r.ids, ids.ints());
  EXPECT_EQ(r.weights, want);
}

TEST(RefMoeRoute, RejectsBadParameters) {
  Tensor l(DType::F32, {8, 2}), ids(DType::I32, {3, 2}), w(DType::F32, {3, 2});
  auto op = [&](MoeRouteParams p) {
    Op o = make_op(OpKind::kMoeRoute, {&l}, ids, p);
    o.dst2 = w.v;
    return validate_op(o);
  };
  EXPECT_TRUE(op({MoeGating::kSoftmax, 3, 1, 1, true, 1.0f}).ok());
  EXPECT_FALSE(op({MoeGating::kSoftmax, 9, 1, 1, true, 1.0f}).ok());   // k > experts
  EXPECT_FALSE(op({MoeGating::kSoftmax, 3, 3, 1, true, 1.0f}).ok());   // 3 groups do not divide 8
  EXPECT_FALSE(op({MoeGating::kSoftmax, 3, 4, 5, true, 1.0f}).ok());   // 5 of 4 groups
  EXPECT_FALSE(op({MoeGating::kSoftmax, 3, 4, 1, true, 1.0f}).ok());   // one group of 2 < k
  EXPECT_FALSE(op({MoeGating::kSoftmax, 3, 1, 1, true, kInf}).ok());   // scale
}

}  // namespace ref_moe_route_test
}  // namespace folio::reftest
