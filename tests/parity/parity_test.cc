// Every parity case as its own GoogleTest test (and so its own ctest entry).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "parity/expected_kernels.h"
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

// The same cases on the Vulkan device against the reference. A case the
// device declines passes only where its expectation (expected_kernels.cc)
// says the device declines it.
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

// Every registered CPU kernel is selected by at least one case (its main op,
// or an op of one of its equivalents, which run on every tier too) on a tier
// of this machine: a kernel no case reaches is untested. Kernels of a tier
// this machine lacks (or FOLIO_ISA leaves out), or that need a CPU feature
// it lacks, cannot be reached here: they are reported as a hardware skip.
// Perf-only cases do not count: they never run against the reference.
TEST(ParityHarness, EveryCpuKernelIsSelectedByACase) {
  std::vector<std::unique_ptr<Backend>> tiers;
  tiers.push_back(std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kScalar, true, nullptr}));
  for (Isa isa : isa_ladder(active_isa())) {
    tiers.push_back(std::make_unique<CpuBackend>(CpuBackendOptions{isa, false, nullptr}));
  }
  std::set<std::string> selected;
  std::map<std::string, Need> needs;  // of the kernels the rules name
  auto select = [&](const Op& op) {
    for (const auto& b : tiers) {
      if (b->supports_op(op)) selected.insert(b->kernel_name(op));
    }
  };
  for (const auto& c : cases()) {
    if (c->perf_only) continue;
    select(c->op);
    for (const Equivalent& eq : c->equivalents) {
      if (eq.steps.empty()) select(eq.op);
      for (const Op& op : eq.steps) select(op);
    }
    for (const KernelAt& k : expected_kernels(*c).cpu) needs[k.name] = k.need;
  }
  const KernelTier top = max_tier_for(active_isa());
  std::vector<std::string> unreachable;
  int checked = 0;
  for (const Kernel& k : cpu_kernels().all()) {
    const auto need = needs.find(k.name);
    if (k.tier > top) {
      unreachable.push_back(fmt::format("{} (tier {})", k.name, kernel_tier_name(k.tier)));
    } else if (need != needs.end() && !need_met(need->second)) {
      unreachable.push_back(fmt::format("{} (needs {})", k.name, need_name(need->second)));
    } else {
      ++checked;
      EXPECT_TRUE(selected.count(k.name))
          << k.name << " (tier " << kernel_tier_name(k.tier)
          << ") is selected by no parity case on this machine's tiers";
    }
  }
  EXPECT_GT(checked, 0);
  if (!unreachable.empty()) {
    std::string list;
    for (const auto& u : unreachable) list += (list.empty() ? "" : ", ") + u;
    GTEST_SKIP() << "hardware: " << checked << " kernels checked; not reachable on this machine: "
                 << list;
  }
}

// The tier ladder of the expectations: a tier without a kernel of its own
// takes the next lower one's, on its own architecture, skipping kernels whose
// feature the machine lacks.
TEST(ParityHarness, ExpectationLadder) {
  Expectation e;
  e.cpu = {{KernelTier::kRef, "k.ref"},
           {KernelTier::kScalar, "k.scalar"},
           {KernelTier::kAvx2, "k.avx2"},
           {KernelTier::kNeon, "k.neon"},
           {KernelTier::kAmx, "k.amx", Need::kAmxInt8}};
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kRef), "k.ref");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kScalar), "k.scalar");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kAvx2Vnni), "k.avx2");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kAvx512), "k.avx2");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kAmx), need_met(Need::kAmxInt8) ? "k.amx" : "k.avx2");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kNeon), "k.neon");
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kNeonI8mm), "k.neon");
  e.cpu = {{KernelTier::kRef, "k.ref"}, {KernelTier::kAvx2, "k.avx2"}};
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kNeonDotprod), "k.ref");
  e.cpu.clear();
  EXPECT_EQ(expected_cpu_kernel(e, KernelTier::kAvx2), kDeclined);
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
