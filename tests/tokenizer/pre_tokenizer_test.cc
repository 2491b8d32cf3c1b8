// Pre-tokenizer splits, checked against what the tokenizer.json regexes give
// under Oniguruma / PCRE semantics (worked out by hand for each case).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace folio::tokenizer {
namespace pre_tokenizer_test {

std::vector<std::string> split(PreTokenizer kind, std::string_view text) {
  DecodedText scratch;
  std::vector<std::string_view> pieces;
  pre_tokenize(kind, text, &scratch, &pieces);
  std::string joined;
  std::vector<std::string> out;
  for (std::string_view p : pieces) {
    EXPECT_FALSE(p.empty());
    joined += p;
    out.emplace_back(p);
  }
  EXPECT_EQ(joined, text) << "pieces must cover the text";
  return out;
}

using V = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  const auto k = PreTokenizer::kGpt2;
  EXPECT_EQ(split(k, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split(k, "Hello, world!"), (V{"Hello", ",", " world", "!"}));
  // Contractions are case-sensitive in GPT-2.
  EXPECT_EQ(split(k, "I'm don't"), (V{"I", "'m", " don", "'t"}));
  EXPECT_EQ(split(k, "I'M"), (V{"I", "'", "M"}));
  // \s+(?!\S): the last space of a run binds to the next word.
  EXPECT_EQ(split(k, "a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(split(k, "a \n b"), (V{"a", " \n", " b"}));
  EXPECT_EQ(split(k, "a\tb"), (V{"a", "\t", "b"}));
  EXPECT_EQ(split(k, "trailing  "), (V{"trailing", "  "}));
  EXPECT_EQ(split(k, "x 123abc ?!"), (V{"x", " 123", "abc", " ?!"}));
  EXPECT_EQ(split(k, "\xC3\xA4pfel"), (V{"\xC3\xA4pfel"}));
  // Invalid bytes group like punctuation.
  EXPECT_EQ(split(k, "a\xFF\xFE b"), (V{"a", "\xFF\xFE", " b"}));
}

TEST(PreTokenizer, Llama3) {
  const auto k = PreTokenizer::kLlama3;
  EXPECT_EQ(split(k, "I'M DON'T"), (V{"I", "'M", " DON", "'T"}));
  EXPECT_EQ(split(k, "1234567"), (V{"123", "456", "7"}));
  // [^\r\n\p{L}\p{N}]?\p{L}+ : one non-letter prefix.
  EXPECT_EQ(split(k, "(hello) $x"), (V{"(hello", ")", " $", "x"}));
  EXPECT_EQ(split(k, "a\n\n  b"), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(split(k, "x;\n\ny"), (V{"x", ";\n\n", "y"}));
  EXPECT_EQ(split(k, "  \n  \n x"), (V{"  \n  \n", " x"}));
  EXPECT_EQ(split(k, "end  "), (V{"end", "  "}));
}

TEST(PreTokenizer, Qwen2AndQwen35) {
  EXPECT_EQ(split(PreTokenizer::kQwen2, "123"), (V{"1", "2", "3"}));
  // Qwen 3.5 keeps combining marks with letters.
  const std::string hindi =
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87";  // नमस्ते
  EXPECT_EQ(split(PreTokenizer::kQwen35, hindi), (V{hindi}));
  EXPECT_GT(split(PreTokenizer::kQwen2, hindi).size(), 1u);
  EXPECT_EQ(split(PreTokenizer::kQwen35, "e\xCC\x81t\xC3\xA9"), (V{"e\xCC\x81t\xC3\xA9"}));
}

TEST(PreTokenizer, StarcoderFalconDefault) {
  EXPECT_EQ(split(PreTokenizer::kStarcoder, "ab 12"), (V{"ab", " ", "1", "2"}));
  EXPECT_EQ(split(PreTokenizer::kFalcon, "x+=1234; y"), (V{"x", "+=", "123", "4", ";", " y"}));
  EXPECT_EQ(split(PreTokenizer::kFalcon, "a`b"), (V{"a", "`", "b"}));
  EXPECT_EQ(split(PreTokenizer::kDefault, "x+=12345"), (V{"x", "+=", "123", "45"}));
}

TEST(PreTokenizer, DeepseekLlm) {
  const auto k = PreTokenizer::kDeepseekLlm;
  EXPECT_EQ(split(k, "Hello, world!\n"), (V{"Hello", ",", " world", "!", "\n"}));
  // Each regex applies to the pieces of the one before: "café" is one letter
  // run, then the ASCII-punctuation class (which spans ':'..'~', so ASCII
  // letters too) splits "caf" from "é". CJK runs are isolated.
  EXPECT_EQ(split(k, "caf\xC3\xA9"), (V{"caf", "\xC3\xA9"}));
  EXPECT_EQ(split(k, "x\xE4\xB8\xAD\xE6\x96\x87y"), (V{"x", "\xE4\xB8\xAD\xE6\x96\x87", "y"}));
  EXPECT_EQ(split(k, "a 12  "), (V{"a", " ", "12", "  "}));
}

TEST(PreTokenizer, Newlines) {
  EXPECT_EQ(split(PreTokenizer::kNewlines, "a b\n\nc\n"), (V{"a b", "\n\n", "c", "\n"}));
  EXPECT_EQ(split(PreTokenizer::kNone, "a b\n"), (V{"a b\n"}));
}

// o200k (gpt-4o, gpt-oss): case-aware letter runs with the contraction
// attached, numbers in threes, '/' joins the trailing newlines of a
// punctuation run.
TEST(PreTokenizer, Gpt4o) {
  const auto k = PreTokenizer::kGpt4o;
  EXPECT_EQ(split(k, "Hello world"), (V{"Hello", " world"}));
  // UPPER*LOWER+: a new word starts at each upper-case letter after a lower one.
  EXPECT_EQ(split(k, "HelloWorld camelCase"), (V{"Hello", "World", " camel", "Case"}));
  EXPECT_EQ(split(k, "HTTPServer"), (V{"HTTPServer"}));
  // UPPER+LOWER*: all capitals, with the contraction (any case) attached.
  EXPECT_EQ(split(k, "ABC def"), (V{"ABC", " def"}));
  EXPECT_EQ(split(k, "I'M DON'T don't"), (V{"I'M", " DON'T", " don't"}));
  EXPECT_EQ(split(k, "they're we'VE"), (V{"they're", " we'VE"}));
  // A lone apostrophe-s is a prefix and a letter run.
  EXPECT_EQ(split(k, "x 's"), (V{"x", " '", "s"}));
  EXPECT_EQ(split(k, "1234567"), (V{"123", "456", "7"}));
  // [^\r\n\p{L}\p{N}]? prefix: one non-letter before a letter run.
  EXPECT_EQ(split(k, "(hello) $x a/b"), (V{"(hello", ")", " $", "x", " a", "/b"}));
  EXPECT_EQ(split(k, "x;\n\ny"), (V{"x", ";\n\n", "y"}));
  EXPECT_EQ(split(k, "1/2 !!//\nz"), (V{"1", "/", "2", " !!//\n", "z"}));
  EXPECT_EQ(split(k, "  \n  \n x"), (V{"  \n  \n", " x"}));
  EXPECT_EQ(split(k, "end  "), (V{"end", "  "}));
  // Non-ASCII: the general categories decide (llama.cpp's rewritten regex
  // would keep "a\xC3\x89" together). U+00C9 is Lu.
  EXPECT_EQ(split(k,
                  "\xC3\x89"
                  "a a\xC3\x89"),
            (V{"\xC3\x89"
               "a",
               " a", "\xC3\x89"}));
  // Marks join either class: e + U+0301 is one run; Lo (CJK) too.
  EXPECT_EQ(split(k, "e\xCC\x81t\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87"),
            (V{"e\xCC\x81t\xC3\xA9", " \xE4\xB8\xAD\xE6\x96\x87"}));
}

// tekken (Mistral): o200k's letter classes without contractions, one digit
// per piece.
TEST(PreTokenizer, Tekken) {
  const auto k = PreTokenizer::kTekken;
  EXPECT_EQ(split(k, "HelloWorld camelCase"), (V{"Hello", "World", " camel", "Case"}));
  EXPECT_EQ(split(k, "I'M don't"), (V{"I", "'M", " don", "'t"}));
  EXPECT_EQ(split(k, "x 2024"), (V{"x", " ", "2", "0", "2", "4"}));
  EXPECT_EQ(split(k, "1/2 !!//\nz"), (V{"1", "/", "2", " !!//\n", "z"}));
  EXPECT_EQ(split(k, "end  "), (V{"end", "  "}));
}

TEST(PreTokenizer, Names) {
  PreTokenizerInfo info;
  ASSERT_TRUE(pre_tokenizer_from_name("llama-bpe", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kLlama3);
  EXPECT_TRUE(info.ignore_merges);
  EXPECT_TRUE(info.add_bos);
  ASSERT_TRUE(pre_tokenizer_from_name("qwen2", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kQwen2);
  EXPECT_FALSE(info.clean_spaces);
  ASSERT_TRUE(pre_tokenizer_from_name("tekken", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kTekken);
  EXPECT_TRUE(info.ignore_merges);
  EXPECT_TRUE(info.add_bos);
  EXPECT_FALSE(info.clean_spaces);
  ASSERT_TRUE(pre_tokenizer_from_name("glm4", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kLlama3);
  EXPECT_TRUE(info.ignore_merges);
  EXPECT_FALSE(info.add_bos);
  EXPECT_TRUE(info.clean_spaces);
  ASSERT_TRUE(pre_tokenizer_from_name("lfm2", &info));  // llama.cpp: llama3's regex, BOS
  EXPECT_EQ(info.kind, PreTokenizer::kLlama3);
  EXPECT_TRUE(info.ignore_merges);
  EXPECT_TRUE(info.add_bos);
  EXPECT_TRUE(info.clean_spaces);
  ASSERT_TRUE(pre_tokenizer_from_name("gpt-4o", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kGpt4o);
  EXPECT_FALSE(info.clean_spaces);
  EXPECT_FALSE(info.ignore_merges);
  ASSERT_TRUE(pre_tokenizer_from_name("gpt-2", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kGpt2);
  EXPECT_FALSE(pre_tokenizer_from_name("no-such-tokenizer", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kGpt2);  // untouched
}

TEST(PreTokenizer, EmptyAndLongInputs) {
  EXPECT_TRUE(split(PreTokenizer::kLlama3, "").empty());
  const std::string spaces(100000, ' ');
  EXPECT_EQ(split(PreTokenizer::kLlama3, spaces).size(), 1u);
  std::string words;
  for (int i = 0; i < 20000; ++i) words += "word ";
  EXPECT_EQ(split(PreTokenizer::kGpt2, words).size(), 20001u);
}

}  // namespace
}  // namespace folio::tokenizer
