// Pre-tokenizer splits, checked against what the tokenizer.json regexes give
// under Oniguruma / PCRE semantics (worked out by hand for each case).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
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
// DeepSeek V3's three regexes (deepseek-v3, hunyuan-dense): numbers in
// threes, then CJK / kana runs, then words (an ASCII mark glued to the ASCII
// letters after it; one leading non-letter before letters and marks),
// punctuation with the newlines after it, newline-ending space runs and
// space runs. Each case as llama.cpp's unicode_regex_split splits it.
TEST(PreTokenizer, Deepseek3) {
  const auto k = PreTokenizer::kDeepseek3;
  EXPECT_EQ(split(k, "Hello, world! 12345 \u4f60\u597d\u3053\u3093\u306b\u3061\u306f"),
            (V{"Hello", ",", " world", "!", " ", "123", "45", " ",
               "\u4f60\u597d\u3053\u3093\u306b\u3061\u306f"}));
  EXPECT_EQ(split(k, "a\u4f60\u597db"), (V{"a", "\u4f60\u597d", "b"}));
  EXPECT_EQ(split(k, " .hello\n\n  x"), (V{" .", "hello", "\n\n", " ", " x"}));
  EXPECT_EQ(split(k, "x  \n  \n y"), (V{"x", "  \n  \n", " y"}));
  EXPECT_EQ(split(k, "don't stop"), (V{"don", "'t", " stop"}));
  EXPECT_EQ(split(k, ".NET's"), (V{".NET", "'s"}));
  EXPECT_EQ(split(k, " ...abc"), (V{" ...", "abc"}));
  EXPECT_EQ(split(k, " \u0301x"), (V{" \u0301x"}));  // a mark joins the letters
  EXPECT_EQ(split(k, "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(split(k, "\u4fa1\u683c\u306f1000\u5186"),
            (V{"\u4fa1\u683c\u306f", "100", "0", "\u5186"}));
  EXPECT_EQ(split(k, "$100 + x"), (V{"$", "100", " +", " x"}));
  EXPECT_EQ(split(k, "a\r\nb"), (V{"a", "\r\n", "b"}));
  EXPECT_EQ(split(k, "tab\there  "), (V{"tab", "\there", "  "}));
  EXPECT_EQ(split(k, "\u00abquote\u00bb"), (V{"\u00ab", "quote", "\u00bb"}));
  EXPECT_EQ(split(k, "x\u3000y"), (V{"x", "\u3000y"}));
}

// Where Tokenizer::encode_text_chunked cuts a long text (after a lone '\n'
// between printable ASCII and an ASCII letter; between ASCII punctuation
// and " " + an ASCII letter), the pieces of DeepSeek V3's, DeepSeek Coder's,
// Seed-Coder's and Kimi K2's pre-tokenizers are the same cut or not.
TEST(PreTokenizer, PiecesSurviveChunkCuts) {
  for (const auto k : {PreTokenizer::kDeepseek3, PreTokenizer::kDeepseekCoder,
                       PreTokenizer::kSeedCoder, PreTokenizer::kKimiK2}) {
    SCOPED_TRACE(static_cast<int>(k));
    const std::string text =
        "Hi.\nNext line, then: a word!\nx 12\nab (c) d;\te \u4f60\u597d.\nk \u00e9t\u00e9, "
        "$5 .NET x\r\ny.\nz!\n\tq\nword \nx";
    const std::vector<std::string> whole = split(k, text);
    auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    auto punct = [&](char c) {
      return c > ' ' && c < 0x7f && !(c >= '0' && c <= '9') && !letter(c);
    };
    int cuts = 0;
    for (size_t at = 2; at + 1 < text.size(); ++at) {
      const char prev = text[at - 1], c = text[at], next = text[at + 1];
      const bool after_newline =
          prev == '\n' && letter(c) && text[at - 2] > ' ' && text[at - 2] < 0x7f;
      const bool before_word = punct(prev) && c == ' ' && letter(next);
      if (!after_newline && !before_word) continue;
      std::vector<std::string> pieces = split(k, text.substr(0, at));
      for (std::string& p : split(k, text.substr(at))) pieces.push_back(std::move(p));
      EXPECT_EQ(pieces, whole) << "cut at " << at;
      ++cuts;
    }
    EXPECT_GE(cuts, 8);
  }
}

// DeepSeek Coder (DeepSeek V2 Coder files): newlines alone, then \s? +
// letters, \s? + punctuation, CJK runs, single digits.
TEST(PreTokenizer, DeepseekCoder) {
  const auto k = PreTokenizer::kDeepseekCoder;
  // '=' is a symbol, not punctuation: " = " stays between the matches.
  EXPECT_EQ(split(k, "int x = 42;\n  return"),
            (V{"int", " x", " = ", "4", "2", ";", "\n", " ", " return"}));
  EXPECT_EQ(split(k, "\u4f60\u597dabc"), (V{"\u4f60\u597d", "abc"}));
  EXPECT_EQ(split(k, "a  \t,b"), (V{"a", "  ", "\t,", "b"}));
  // U+3000 lies in the regex's second CJK range (U+0800..U+4E00), so the
  // CJK step cuts it from the letters \s? took it with (llama.cpp, which
  // turns it into U+000B first, keeps "\u3000y").
  EXPECT_EQ(split(k, "x\u3000y"), (V{"x", "\u3000", "y"}));
}

// Seed-Coder (seed_oss): qwen2's regex without the newlines after a run of
// other characters.
TEST(PreTokenizer, SeedCoder) {
  const auto k = PreTokenizer::kSeedCoder;
  EXPECT_EQ(split(k, "x;\n\ny"), (V{"x", ";", "\n\n", "y"}));
  EXPECT_EQ(split(PreTokenizer::kQwen2, "x;\n\ny"), (V{"x", ";\n\n", "y"}));
  EXPECT_EQ(split(k, "I'M 2024 (ok)"), (V{"I", "'M", " ", "2", "0", "2", "4", " (", "ok", ")"}));
}

// Kimi K2: Han runs first, then o200k's words with Han out of the letter
// classes. The regex splits a word where it changes case and keeps marks
// with their letters; llama.cpp's hand-written splitter keeps a run of
// letters whole ("camelCase", "iPhone") and splits at marks, so these cases
// are the regex's (tokenization_kimi.py under Oniguruma / fancy-regex
// semantics, worked out by hand), not llama.cpp's.
TEST(PreTokenizer, KimiK2) {
  const auto k = PreTokenizer::kKimiK2;
  EXPECT_EQ(split(k, "camelCase HTTPServer iPhone"),
            (V{"camel", "Case", " HTTPServer", " i", "Phone"}));
  EXPECT_EQ(split(k, "\u4e2d\u6587English\u6df7\u5408"),
            (V{"\u4e2d\u6587", "English", "\u6df7\u5408"}));
  // U+3005 (an iteration mark, Lm) is Script=Han: it joins the Han run.
  EXPECT_EQ(split(k, "\u4eba\u3005\u306e"), (V{"\u4eba\u3005", "\u306e"}));
  EXPECT_EQ(split(k, " e\u0301t\u00e9"), (V{" e\u0301t\u00e9"}));
  // Unlike gpt-4o, no '/' after a run of other characters.
  EXPECT_EQ(split(k, "a!/b"), (V{"a", "!/", "b"}));
  EXPECT_EQ(split(k, "x;/\ny"), (V{"x", ";/\n", "y"}));
  EXPECT_EQ(split(PreTokenizer::kGpt4o, "x;/\ny"), (V{"x", ";/\n", "y"}));
}

// tests/tokenizer/data/llamacpp_pre_splits.txt (scripts/gen_pre_splits.py):
// llama.cpp's unicode_regex_split under each name's regexes, and the
// defaults llama.cpp sets with the name, for the pre-tokenizers of the
// architectures of deepseek2, exaone4, seed_oss, minimax-m2 and hunyuan.
std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(PreTokenizer, LlamaCppSplits) {
  const std::string data = testing::read_file(std::string(FOLIO_SOURCE_DIR) +
                                              "/tests/tokenizer/data/llamacpp_pre_splits.txt");
  ASSERT_FALSE(data.empty()) << "tests/tokenizer/data/llamacpp_pre_splits.txt missing";
  std::istringstream in(data);
  std::string line;
  int cases = 0;
  std::vector<std::string> names;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    ASSERT_EQ(f.size(), 6u) << line;
    PreTokenizerInfo info;
    ASSERT_TRUE(pre_tokenizer_from_name(f[0], &info)) << f[0];
    EXPECT_EQ(info.clean_spaces, f[1] == "1") << f[0];
    EXPECT_EQ(info.ignore_merges, f[2] == "1") << f[0];
    EXPECT_EQ(info.add_bos, f[3] == "1") << f[0];
    V expected;
    std::istringstream pieces(f[5]);
    for (std::string hex; pieces >> hex;) expected.push_back(unhex(hex));
    EXPECT_EQ(split(info.kind, unhex(f[4])), expected) << f[0] << ": " << unhex(f[4]);
    if (names.empty() || names.back() != f[0]) names.push_back(f[0]);
    ++cases;
  }
  EXPECT_GE(cases, 200);
  EXPECT_EQ(names.size(), 10u);
}

// tests/tokenizer/data/regex_pre_splits.txt (scripts/gen_pre_splits.py):
// the models' own regexes (gpt-4o's for minimax-m2, tokenization_kimi.py's
// for kimi-k2) run by Perl's regex engine, on every text of the llama.cpp
// cases, those where llama.cpp's splitter differs from the regex included
// (case changes inside words, non-ASCII cased letters, marks, Script=Han
// beyond the ideograph blocks).
TEST(PreTokenizer, RegexSplits) {
  const std::string data = testing::read_file(std::string(FOLIO_SOURCE_DIR) +
                                              "/tests/tokenizer/data/regex_pre_splits.txt");
  ASSERT_FALSE(data.empty()) << "tests/tokenizer/data/regex_pre_splits.txt missing";
  std::istringstream in(data);
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    ASSERT_EQ(f.size(), 3u) << line;
    PreTokenizerInfo info;
    ASSERT_TRUE(pre_tokenizer_from_name(f[0], &info)) << f[0];
    V expected;
    std::istringstream pieces(f[2]);
    for (std::string hex; pieces >> hex;) expected.push_back(unhex(hex));
    EXPECT_EQ(split(info.kind, unhex(f[1])), expected) << f[0] << ": " << unhex(f[1]);
    ++cases;
  }
  EXPECT_EQ(cases, 44);
}

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
  for (const char* name : {"deepseek-v3", "hunyuan-dense"}) {
    ASSERT_TRUE(pre_tokenizer_from_name(name, &info)) << name;
    EXPECT_EQ(info.kind, PreTokenizer::kDeepseek3) << name;
    EXPECT_FALSE(info.ignore_merges) << name;
    EXPECT_FALSE(info.add_bos) << name;
    EXPECT_FALSE(info.clean_spaces) << name;
  }
  ASSERT_TRUE(pre_tokenizer_from_name("glm4", &info));
  EXPECT_EQ(info.kind, PreTokenizer::kLlama3);
  EXPECT_TRUE(info.ignore_merges);
  EXPECT_FALSE(info.add_bos);
  EXPECT_TRUE(info.clean_spaces);
  for (const char* name : {"lfm2", "falcon-h1"}) {  // llama.cpp: llama3's regex, BOS
    ASSERT_TRUE(pre_tokenizer_from_name(name, &info)) << name;
    EXPECT_EQ(info.kind, PreTokenizer::kLlama3) << name;
    EXPECT_TRUE(info.ignore_merges) << name;
    EXPECT_TRUE(info.add_bos) << name;
    EXPECT_TRUE(info.clean_spaces) << name;
  }
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
