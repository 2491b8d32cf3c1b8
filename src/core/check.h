// FOLIO_CHECK: invariants inside the engine (programming errors). Input from
// outside never reaches a CHECK; it is validated into a Status first.
#pragma once

#include <fmt/format.h>

namespace folio::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
}  // namespace folio::detail

#define FOLIO_CHECK(cond)                                                     \
  do {                                                                        \
    if (!(cond)) [[unlikely]]                                                 \
      ::folio::detail::check_failed(__FILE__, __LINE__, #cond, std::string()); \
  } while (0)

// FOLIO_CHECK_MSG(cond, "fmt {}", args...)
#define FOLIO_CHECK_MSG(cond, ...)                                                       \
  do {                                                                                   \
    if (!(cond)) [[unlikely]]                                                            \
      ::folio::detail::check_failed(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
