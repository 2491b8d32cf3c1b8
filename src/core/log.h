// Logging: spdlog behind a thin facade so the level is set in one place
// (CLI -v / --log-level) and library code never prints to stdout.
#pragma once

#include <spdlog/spdlog.h>

namespace folio {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

void set_log_level(LogLevel level);
// The level last set (kInfo before any set_log_level).
LogLevel log_level();
// Parses "trace|debug|info|warn|error|off".
bool parse_log_level(const std::string& s, LogLevel* out);

}  // namespace folio

#define FOLIO_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define FOLIO_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define FOLIO_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define FOLIO_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
