// folio-test-ops: the op-parity harness as a command.
//   folio-test-ops [test|perf|kernels] [-o OP_SUBSTRING] [-c CASE_SUBSTRING] [--seconds S] [-v]
// test: every case on every CPU kernel variant vs the scalar reference, and
// the kernel each backend selects vs the one the case expects
// (expected_kernels.cc); exit 1 on a mismatch.
// kernels: per case, the kernel each backend selects and the expected one
// (what to write when adding a case or a kernel); exit 1 on a mismatch.
// perf: time per run and achieved GFLOP/s / GB/s (tokens/s where a case
// counts tokens) for each distinct kernel; perf-only cases run here only.
#include <cstdio>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/cpu_features.h"
#include "parity/expected_kernels.h"
#include "parity/harness.h"

using namespace folio;
using namespace folio::parity;

int main(int argc, char** argv) {
  std::string mode = "test", op_filter, case_filter, which = "cpu";
  double seconds = 0.2;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "folio-test-ops: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "test" || a == "perf" || a == "kernels") {
      mode = a;
    } else if (a == "-o") {
      op_filter = next("-o");
    } else if (a == "-c") {
      case_filter = next("-c");
    } else if (a == "--seconds") {
      seconds = std::atof(next("--seconds").c_str());
    } else if (a == "--backend") {
      which = next("--backend");
    } else if (a == "-v") {
      verbose = true;
    } else {
      std::fprintf(stderr,
                   "usage: folio-test-ops [test|perf|kernels] [--backend cpu|vulkan|all] [-o OP] [-c CASE] "
                   "[--seconds S] [-v]\n");
      return 2;
    }
  }
  std::printf("cpu: %s; active isa: %s\n", cpu_features().to_string().c_str(), isa_name(active_isa()));
  auto made = make_backends(which);
  if (!made.ok()) {
    std::fprintf(stderr, "folio-test-ops: --backend %s: %s\n", which.c_str(),
                 made.status().message().c_str());
    return 2;
  }
  auto backends = std::move(made).value();
  std::printf("backends:");
  for (const auto& b : backends) std::printf(" %s", b->name().c_str());
  std::printf("\n");
  CaseList cases = all_cases(mode == "perf");
  int n_run = 0, n_fail = 0;
  for (auto& c : cases) {
    if (!op_filter.empty() && std::string(op_kind_name(c->op.kind)).find(op_filter) == std::string::npos) continue;
    if (!case_filter.empty() && c->name().find(case_filter) == std::string::npos) continue;
    if (mode == "test" && c->perf_only) continue;
    ++n_run;
    if (mode == "kernels") {
      const Expectation e = expected_kernels(*c);
      bool ok = true;
      std::string line;
      for (const auto& b : backends) {
        const BackendTarget t = target_of(*b);
        const std::string want = t.device.empty() ? expected_cpu_kernel(e, t.tier)
                                 : t.device == "vulkan" ? expected_vulkan_kernel(e, t.int_dot)
                                                        : std::string("?");
        const std::string got = selected_kernel(*b, c->op);
        line += fmt::format("  {}={}", b->name(), got);
        if (got != want) {
          line += fmt::format(" (expected {})", want);
          ok = false;
        }
      }
      n_fail += ok ? 0 : 1;
      std::printf("%-4s %s\n    %s\n", ok ? "OK" : "FAIL", c->name().c_str(), line.c_str() + 2);
      continue;
    }
    if (mode == "perf") {
      std::printf("%s\n", c->name().c_str());
      for (const auto& line : run_perf(*c, backends, seconds)) std::printf("  %s\n", line.c_str());
      continue;
    }
    CaseResult r = run_test(*c, backends);
    if (!r.ok) ++n_fail;
    std::printf("%-4s %s\n", r.ok ? "OK" : "FAIL", c->name().c_str());
    if (verbose || !r.ok) {
      for (const auto& line : r.lines) std::printf("       %s\n", line.c_str());
    }
    for (const auto& name : r.not_supported) std::printf("       %s: declines it (as expected)\n", name.c_str());
    for (const auto& k : r.not_exercised) std::printf("       not exercised: %s\n", k.c_str());
  }
  if (mode != "perf") std::printf("%d passed, %d failed\n", n_run - n_fail, n_fail);
  return n_fail == 0 ? 0 : 1;
}
