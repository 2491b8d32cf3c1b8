// Exact token ids for every case of tests/data/tokenizer (produced by the
// models' own Hugging Face tokenizers) and for the refdata models' prompts,
// plus detokenize(tokenize(s)) == s on the same strings.
//
// Case format: <vocab>.inp holds strings separated by the line
// "__ggml_vocab_test__" (i.e. by "\n__ggml_vocab_test__\n"; a file may end
// with one more separator, which closes the last string); <vocab>.out holds
// one line of space-separated ids per string. Ids have no BOS and special
// token texts are not parsed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace folio::tokenizer {
namespace refdata_test {

using testing::cached_tokenizer;
using testing::file_exists;
using testing::ids_to_string;
using testing::parse_ids;
using testing::read_file;
using testing::refdata_path;

struct Case {
  std::string text;
  std::vector<TokenId> ids;
};

std::vector<Case> read_cases(const std::string& vocab_path) {
  const std::string inp = read_file(vocab_path + ".inp");
  const std::string out = read_file(vocab_path + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      if (pos < inp.size()) texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::string> lines;
  pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    lines.push_back(out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  EXPECT_EQ(texts.size(), lines.size()) << vocab_path;
  std::vector<Case> cases;
  for (size_t i = 0; i < texts.size() && i < lines.size(); ++i) {
    cases.push_back({texts[i], parse_ids(lines[i])});
  }
  return cases;
}

class RefdataVocab : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path() const {
    return refdata_path(std::string("tokenizer/ggml-vocab-") + GetParam() + ".gguf");
  }
};

TEST_P(RefdataVocab, MatchesReferenceIds) {
  if (!file_exists(path())) FAIL() << "missing " << path();
  const Tokenizer* tok = cached_tokenizer(path());
  ASSERT_NE(tok, nullptr);
  const std::vector<Case> cases = read_cases(path());
  ASSERT_GT(cases.size(), 40u);
  size_t total_ids = 0;
  for (const Case& c : cases) total_ids += c.ids.size();
  EXPECT_GT(total_ids, 300u);
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<TokenId> got =
        tok->tokenize(cases[i].text, {.add_special = false, .parse_special = false});
    if (got != cases[i].ids && ++failures <= 8) {
      ADD_FAILURE() << GetParam() << " case " << i << " text '" << cases[i].text
                    << "'\n  want: " << ids_to_string(cases[i].ids)
                    << "\n  got:  " << ids_to_string(got);
    }
  }
  EXPECT_EQ(failures, 0) << GetParam() << ": " << failures << " of " << cases.size()
                         << " cases differ";
}

TEST_P(RefdataVocab, RoundTrips) {
  if (!file_exists(path())) FAIL() << "missing " << path();
  const Tokenizer* tok = cached_tokenizer(path());
  ASSERT_NE(tok, nullptr);
  for (const Case& c : read_cases(path())) {
    const std::vector<TokenId> ids = tok->tokenize(c.text, {.add_special = true});
    EXPECT_EQ(tok->detokenize(ids), c.text) << GetParam() << " ids " << ids_to_string(ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, RefdataVocab,
                         ::testing::Values("gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2",
                                           "qwen35", "gemma-4", "deepseek-llm", "starcoder",
                                           "falcon"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) {
                             if (c == '-') c = '_';
                           }
                           return s;
                         });

// tests/data/models: M.C.prompt.txt tokenized with M's vocabulary (no BOS)
// equals M.C.prompt_tokens.txt.
// A (model, case) parameter's test name: tiny-llama, short -> tiny_llama_short.
std::string model_case_name(
    const ::testing::TestParamInfo<std::tuple<const char*, const char*>>& info) {
  std::string s = std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

class RefdataPrompt : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(RefdataPrompt, MatchesPromptTokens) {
  const auto [model, kase] = GetParam();
  const std::string base = refdata_path(std::string("models/") + model);
  const std::string gguf = base + "-f32.gguf";
  const std::string prompt = base + "." + kase + ".prompt.txt";
  if (!file_exists(gguf) || !file_exists(prompt)) FAIL() << "missing " << gguf;
  const Tokenizer* tok = cached_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  const std::string text = read_file(prompt);
  const std::vector<TokenId> want = parse_ids(read_file(base + "." + kase + ".prompt_tokens.txt"));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(tok->tokenize(text, {.add_special = false}), want);
  // These vocabularies do not add BOS by default either.
  EXPECT_EQ(tok->tokenize(text), want);
  EXPECT_EQ(tok->detokenize(want), text);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, RefdataPrompt,
                         ::testing::Combine(::testing::Values("tiny-llama", "tiny-qwen3",
                                                              "tiny-qwen35", "tiny-qwen3next"),
                                            ::testing::Values("short", "long")),
                         model_case_name);

// tests/model/refdata/tiny-gpt-oss, tiny-mistral3, tiny-glm4moe, tiny-lfm2:
// the shared prompts tokenized with the o200k ("gpt-4o"), tekken, glm4 and
// lfm2 pre-tokenizers equal llama.cpp's ids.
class LocalRefdataPrompt : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(LocalRefdataPrompt, MatchesPromptTokens) {
  const auto [model, kase] = GetParam();
  const std::string base = std::string(FOLIO_SOURCE_DIR) + "/tests/model/refdata/" + model;
  const std::string gguf = base + "-f32.gguf";
  if (!file_exists(gguf)) FAIL() << "missing " << gguf;
  const Tokenizer* tok = cached_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  const std::string text = read_file(base + "." + kase + ".prompt.txt");
  const std::vector<TokenId> want = parse_ids(read_file(base + "." + kase + ".prompt_tokens.txt"));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(tok->tokenize(text, {.add_special = false}), want);
  EXPECT_EQ(tok->detokenize(want), text);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, LocalRefdataPrompt,
                         ::testing::Combine(::testing::Values("tiny-gpt-oss", "tiny-mistral3",
                                                              "tiny-glm4moe", "tiny-lfm2"),
                                            ::testing::Values("short", "long")),
                         model_case_name);

}  // namespace
}  // namespace folio::tokenizer
