#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>

namespace folio {

namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};

spdlog::level::level_enum to_spd(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}
}  // namespace

void set_log_level(LogLevel level) {
  // Library logs go to stderr so stdout stays clean for generated text.
  static bool installed = [] {
    auto logger = spdlog::stderr_color_mt("folio");
    logger->set_pattern("%^%l%$ %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)installed;
  spdlog::set_level(to_spd(level));
  g_level.store(level, std::memory_order_relaxed);
}

LogLevel log_level() { return g_level.load(std::memory_order_relaxed); }

bool parse_log_level(const std::string& s, LogLevel* out) {
  static const std::pair<const char*, LogLevel> kNames[] = {
      {"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
      {"warn", LogLevel::kWarn},   {"error", LogLevel::kError}, {"off", LogLevel::kOff}};
  for (const auto& [name, level] : kNames) {
    if (s == name) {
      *out = level;
      return true;
    }
  }
  return false;
}

}  // namespace folio
