// Helpers for the jinja tests: file reading and the data directories.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace folio::jinja::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string templates_dir() {
  return std::string(FOLIO_REFDATA_DIR) + "/templates";
}
inline std::string data_dir() {
  return std::string(FOLIO_SOURCE_DIR) + "/tests/jinja/data";
}

}  // namespace folio::jinja::testing
