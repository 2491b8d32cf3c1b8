// Expert groups (DeepSeek V3's group-limited routing, model/blocks/moe.cc's
// mask_expert_groups), against values worked out by hand: a group scores the
// sum of its two largest selection values (not of all of them), the best
// n_groups_used groups keep their values, every other expert gets -inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "model/blocks/blocks.h"

namespace folio::model {
namespace moe_groups_test {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> mask(std::vector<float> sel, int64_t n_expert, int groups, int used) {
  const int64_t n = static_cast<int64_t>(sel.size()) / n_expert;
  std::vector<float> out(sel.size(), 7.0f);
  const TensorView in = TensorView::contiguous(sel.data(), DType::F32, {n_expert, n, 1, 1});
  const TensorView dst = TensorView::contiguous(out.data(), DType::F32, {n_expert, n, 1, 1});
  mask_expert_groups(in, groups, used, dst);
  return out;
}

TEST(MoeGroups, KeepsTheBestGroupsByTheirTwoLargestValues) {
  // 8 experts in 4 groups of 2; scores 1.0, 1.1, 0.85, 0.5 -> groups 1 and 0.
  EXPECT_EQ(mask({0.1f, 0.9f, 0.5f, 0.6f, 0.8f, 0.05f, 0.3f, 0.2f}, 8, 4, 2),
            (std::vector<float>{0.1f, 0.9f, 0.5f, 0.6f, -kInf, -kInf, -kInf, -kInf}));
  // 6 experts in 2 groups of 3: group 0's two best sum to 1.0, group 1's to
  // 0.9 (all three: 1.2), so group 0 wins.
  EXPECT_EQ(mask({0.5f, 0.5f, 0.0f, 0.6f, 0.3f, 0.3f}, 6, 2, 1),
            (std::vector<float>{0.5f, 0.5f, 0.0f, -kInf, -kInf, -kInf}));
  // Negative values (a selection bias may push them below 0): scores -3,
  // 0.5, -3. A tie between groups goes to the lower one.
  EXPECT_EQ(mask({-1.0f, -2.0f, 0.25f, 0.25f, -4.0f, 1.0f}, 6, 3, 1),
            (std::vector<float>{-kInf, -kInf, 0.25f, 0.25f, -kInf, -kInf}));
  EXPECT_EQ(mask({0.5f, 0.5f, 0.25f, 0.75f}, 4, 2, 1),
            (std::vector<float>{0.5f, 0.5f, -kInf, -kInf}));
}

TEST(MoeGroups, EachTokenChoosesItsOwnGroups) {
  const std::vector<float> out = mask({0.9f, 0.8f, 0.1f, 0.2f,    // token 0: group 0
                                       0.1f, 0.2f, 0.9f, 0.8f},   // token 1: group 1
                                      4, 2, 1);
  EXPECT_EQ(out, (std::vector<float>{0.9f, 0.8f, -kInf, -kInf, -kInf, -kInf, 0.9f, 0.8f}));
}

}  // namespace moe_groups_test
}  // namespace folio::model
