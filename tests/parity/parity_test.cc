// Every parity case as its own GoogleTest test (and so its own ctest entry).
#include <gtest/gtest.h>

#include <regex>

#include "parity/harness.h"
#include "vulkan_test_device.h"

namespace folio::parity {
namespace parity_test {

CaseList& cases() {
  static CaseList c = all_cases();
  return c;
}

const std::vector<std::unique_ptr<Backend>>& backends() {
  static auto b = make_backends();
  return b;
}

class Parity : public ::testing::TestWithParam<size_t> {};

TEST_P(Parity, MatchesReference) {
  OpCase& c = *cases()[GetParam()];
  CaseResult r = run_test(c, backends());
  std::string detail;
  for (const auto& line : r.lines) detail += "  " + line + "\n";
  EXPECT_TRUE(r.ok) << c.name() << "\n" << detail;
}

// Perf-only cases are left out (folio-test-ops perf runs them).
std::vector<size_t> indices() {
  std::vector<size_t> v;
  for (size_t i = 0; i < cases().size(); ++i) {
    if (!cases()[i]->perf_only) v.push_back(i);
  }
  return v;
}

std::string case_test_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string n = std::to_string(info.param) + "_" + cases()[info.param]->name();
  return std::regex_replace(n, std::regex("[^A-Za-z0-9]+"), "_");
}

INSTANTIATE_TEST_SUITE_P(Ops, Parity, ::testing::ValuesIn(indices()), case_test_name);

// The same cases on the Vulkan device against the reference (cases its
// kernels decline pass here: the harness prints them as `not supported`).
struct VulkanBackends {
  std::vector<std::unique_ptr<Backend>> backends;  // empty: no device (see why)
  std::string why;
};

const VulkanBackends& vulkan_backends() {
  static VulkanBackends* v = [] {
    auto* r = new VulkanBackends();
    Result<std::vector<std::unique_ptr<Backend>>> b = make_backends("vulkan");
    if (b.ok()) r->backends = std::move(b).value();
    else r->why = b.status().message();
    return r;
  }();
  return *v;
}

class VulkanParity : public ::testing::TestWithParam<size_t> {};

TEST_P(VulkanParity, MatchesReference) {
  const VulkanBackends& vb = vulkan_backends();
  if (vb.backends.empty()) {
    if (testing::vulkan_required()) FAIL() << "FOLIO_REQUIRE_VULKAN is set: " << vb.why;
    GTEST_SKIP() << "hardware: no Vulkan device (" << vb.why << ")";
  }
  OpCase& c = *cases()[GetParam()];
  CaseResult r = run_test(c, vb.backends);
  std::string detail;
  for (const auto& line : r.lines) detail += "  " + line + "\n";
  EXPECT_TRUE(r.ok) << c.name() << "\n" << detail;
}

INSTANTIATE_TEST_SUITE_P(Ops, VulkanParity, ::testing::ValuesIn(indices()), case_test_name);

TEST(ParityHarness, HasCasesForEveryOp) {
  std::vector<bool> seen(static_cast<size_t>(OpKind::kCount), false);
  for (const auto& c : cases()) seen[static_cast<size_t>(c->op.kind)] = true;
  for (size_t k = 0; k < seen.size(); ++k) {
    EXPECT_TRUE(seen[k]) << "no parity case for " << op_kind_name(static_cast<OpKind>(k));
  }
}

TEST(ParityHarness, NmseDetectsDifferences) {
  const float a[4] = {1, 2, 3, 4};
  const float b[4] = {1, 2, 3, 4.5f};
  EXPECT_EQ(nmse(a, a, 4), 0.0);
  EXPECT_GT(nmse(b, a, 4), 1e-3);
  const float c[4] = {1, 2, 3, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_TRUE(std::isinf(nmse(c, a, 4)));
}

}  // namespace
}  // namespace folio::parity
