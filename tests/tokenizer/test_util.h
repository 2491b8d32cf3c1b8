// Shared helpers for the tokenizer tests: file reading, the refdata case
// format, and vocabularies loaded once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace folio::tokenizer::testing {

inline std::string refdata_path(const std::string& rel) {
  return std::string(FOLIO_REFDATA_DIR) + "/" + rel;
}

inline bool file_exists(const std::string& path) {
  return std::ifstream(path).good();
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A vocabulary read once per binary (nullptr + ADD_FAILURE if it fails).
inline const Tokenizer* cached_tokenizer(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(path);
  if (it != cache.end()) return it->second.get();
  Result<Tokenizer> t = Tokenizer::open(path);
  if (!t.ok()) {
    ADD_FAILURE() << path << ": " << t.status().to_string();
    return nullptr;
  }
  auto owned = std::make_unique<Tokenizer>(std::move(t).value());
  const Tokenizer* p = owned.get();
  cache.emplace(path, std::move(owned));
  return p;
}

// "1 2 3" or "1,2,3" -> ids.
inline std::vector<TokenId> parse_ids(const std::string& line) {
  std::vector<TokenId> ids;
  std::string cur;
  for (char c : line + " ") {
    if (c >= '0' && c <= '9') {
      cur.push_back(c);
    } else if (!cur.empty()) {
      ids.push_back(static_cast<TokenId>(std::stol(cur)));
      cur.clear();
    }
  }
  return ids;
}

inline std::string ids_to_string(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

}  // namespace folio::tokenizer::testing
