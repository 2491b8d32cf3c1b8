// WordPiece ("bert" vocabularies): the normaliser's Unicode helpers, greedy
// longest-piece matching, [CLS] / [SEP], detokenization, the vocabulary's
// defaults and errors. Parity with llama.cpp's llama-tokenize on a BERT-like
// vocabulary is tested through the Embedder (tests/engine/embedder_test.cc,
// TokenizesLikeLlamaCpp), whose reference file this test also reads.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_gguf.h"

namespace folio::tokenizer {
namespace wpm_test {

using Ids = std::vector<TokenId>;
constexpr const char* kSp = "\xE2\x96\x81";  // U+2581

TEST(Unicode, LowercaseAndFirstOfDecomposition) {
  EXPECT_EQ(to_lower('A'), static_cast<uint32_t>('a'));
  EXPECT_EQ(to_lower('a'), static_cast<uint32_t>('a'));
  EXPECT_EQ(to_lower(0xC9), 0xE9u);    // É -> é
  EXPECT_EQ(to_lower(0x391), 0x3B1u);  // Α -> α
  EXPECT_EQ(to_lower(0x130), 0x69u);   // İ -> i (simple mapping)
  EXPECT_EQ(to_lower(0xFF28), 0xFF48u);  // fullwidth H -> h
  EXPECT_EQ(to_lower(0x4E2D), 0x4E2Du);
  EXPECT_EQ(nfd_first(0xE9), static_cast<uint32_t>('e'));  // é
  EXPECT_EQ(nfd_first(0xC5), static_cast<uint32_t>('A'));  // Å
  EXPECT_EQ(nfd_first(0x1E69), static_cast<uint32_t>('s'));  // ṩ: two marks
  EXPECT_EQ(nfd_first(0xAC00), 0x1100u);  // Hangul syllable -> leading jamo
  EXPECT_EQ(nfd_first(0x301), 0x301u);    // a lone combining mark stays
  EXPECT_EQ(nfd_first(0xDF), 0xDFu);      // ß has no decomposition
  EXPECT_EQ(nfd_first('x'), static_cast<uint32_t>('x'));
}

// A WordPiece vocabulary in the converter's form: BERT's special ids when
// `bert_layout` (ids 0..103), else only the tokens and explicit ids.
Result<Tokenizer> wpm_vocab(bool bert_layout, bool ids = true) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  if (bert_layout) {
    tokens.push_back("[PAD]");
    for (int i = 0; i < 99; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
    for (const char* s : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) tokens.push_back(s);
    types.assign(tokens.size(), 1);
    for (size_t i : {0, 100, 101, 102, 103}) types[i] = 3;
  }
  for (std::string w : {"un", "aff", "able", "play", "ing", "s", "!", "a", "b", "hello"}) {
    tokens.push_back(std::string(kSp) + w);
    types.push_back(1);
  }
  for (std::string w : {"aff", "able", "ing", "s", "a", "b", "ly"}) {
    tokens.push_back(w);
    types.push_back(1);
  }
  gguf::GgufWriter w;
  (void)w.add("general.architecture", gguf::Value("bert"));
  (void)w.add("tokenizer.ggml.model", gguf::Value("bert"));
  (void)w.add("tokenizer.ggml.tokens", gguf::Value(gguf::Array::of_strings(tokens)));
  (void)w.add("tokenizer.ggml.token_type", gguf::Value(gguf::Array::of(types)));
  if (ids) {
    (void)w.add("tokenizer.ggml.unknown_token_id", gguf::Value(uint32_t{100}));
    (void)w.add("tokenizer.ggml.seperator_token_id", gguf::Value(uint32_t{102}));
  }
  FOLIO_ASSIGN_OR_RETURN(gguf::GgufFile f, gguf::GgufFile::parse(w.to_bytes()));
  return Tokenizer::from_gguf(f);
}

TEST(WordPiece, GreedyLongestPiecesWithClsAndSep) {
  Result<Tokenizer> t = wpm_vocab(true);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const Vocab& v = t->vocab();
  EXPECT_EQ(v.model(), VocabModel::kWpm);
  EXPECT_EQ(v.bos(), 101);  // llama.cpp's default [CLS]
  EXPECT_EQ(v.sep(), 102);
  EXPECT_EQ(v.unk(), 100);
  EXPECT_TRUE(v.add_bos());
  EXPECT_TRUE(v.add_sep());
  EXPECT_FALSE(v.add_eos());
  auto id = [&](const std::string& s) { return v.find(s); };
  const std::string sp = kSp;
  // "unaffable" -> un ##aff ##able; "Playing" lowercased -> play ##ing.
  EXPECT_EQ(t->tokenize("unaffable Playing!"),
            (Ids{101, id(sp + "un"), id("aff"), id("able"), id(sp + "play"), id("ing"),
                 id(sp + "!"), 102}));
  EXPECT_EQ(t->tokenize("hello", {.add_special = false}), (Ids{id(sp + "hello")}));
  EXPECT_EQ(t->tokenize(""), (Ids{101, 102}));
  // A word with a part no piece spells is one [UNK]; the next word is not.
  EXPECT_EQ(t->tokenize("abc ab", {.add_special = false}),
            (Ids{100, id(sp + "a"), id("b")}));
  // Accents of precomposed letters drop; punctuation splits words.
  EXPECT_EQ(t->tokenize("\xC3\xA1" "b!a", {.add_special = false}),  // "áb!a"
            (Ids{id(sp + "a"), id("b"), id(sp + "!"), id(sp + "a")}));
  // Special-token texts: parsed only when asked.
  EXPECT_EQ(t->tokenize("[SEP]", {.add_special = false, .parse_special = true}), (Ids{102}));
  EXPECT_NE(t->tokenize("[SEP]", {.add_special = false}), (Ids{102}));
}

TEST(WordPiece, DetokenizeJoinsPiecesAndHidesSpecials) {
  Result<Tokenizer> t = wpm_vocab(true);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const Ids ids = t->tokenize("unaffable playing!");
  EXPECT_EQ(t->detokenize(ids), " unaffable playing !");
  EXPECT_EQ(t->detokenize(ids, {.clean_spaces = true}), " unaffable playing!");
  EXPECT_EQ(t->detokenize(ids, {.render_special = true}), "[CLS] unaffable playing ![SEP]");
  EXPECT_TRUE(t->vocab().clean_spaces());
}

TEST(WordPiece, NeedsClsSepAndUnk) {
  // Without BERT's layout the default ids 100..102 do not exist.
  Result<Tokenizer> t = wpm_vocab(false, false);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("WordPiece"), std::string::npos) << t.status().to_string();
}

TEST(WordPiece, TokenizesTheReferenceVocabularyLikeLlamaCpp) {
  const std::string dir = std::string(FOLIO_SOURCE_DIR) + "/tests/engine/refdata/";
  std::ifstream f(dir + "tiny-bert.json");
  ASSERT_TRUE(f.good()) << "missing " << dir << "tiny-bert.json";
  const nlohmann::json ref = nlohmann::json::parse(f);
  Result<Tokenizer> t = Tokenizer::open(dir + ref["model"].get<std::string>());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  size_t n = 0;
  for (const auto& c : ref["tokenize"]) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(t->tokenize(text, {.add_special = true, .parse_special = true}),
              c["tokens"].get<Ids>())
        << text;
    ++n;
  }
  EXPECT_GE(n, 20u);
}

}  // namespace
}  // namespace folio::tokenizer
