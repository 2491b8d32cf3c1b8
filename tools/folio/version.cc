#include "version.h"

#include <fmt/format.h>

#include "core/cpu_features.h"
#include "folio_commit.h"  // FOLIO_COMMIT, written by cmake/write_version.cmake

#ifndef FOLIO_VERSION
#define FOLIO_VERSION "unknown"
#endif

namespace folio::tools {

std::string version_text() {
#if defined(__clang__)
  const std::string compiler = fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__,
                                           __clang_patchlevel__);
#elif defined(__GNUC__)
  const std::string compiler = fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__,
                                           __GNUC_PATCHLEVEL__);
#else
  const std::string compiler = "an unknown compiler";
#endif
  return fmt::format("folio {} (commit {})\nbuilt with {} for {}; kernels on this CPU: {}",
                     FOLIO_VERSION, FOLIO_COMMIT, compiler,
#if defined(__x86_64__)
                     "x86_64",
#elif defined(__aarch64__)
                     "aarch64",
#else
                     "this architecture",
#endif
                     isa_name(active_isa()));
}

}  // namespace folio::tools
