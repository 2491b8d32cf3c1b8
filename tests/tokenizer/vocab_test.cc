// Vocabulary loading: metadata defaults, special ids, and every kind of bad
// input turned into a clear Status (files built with the GGUF writer).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_gguf.h"

namespace folio::tokenizer {
namespace vocab_test {

using gguf::Array;
using gguf::GgufFile;
using gguf::GgufWriter;
using gguf::Value;

// A small byte-level BPE vocabulary: "a", "b", "Ġ" (space), "ab", "Ġab" and
// two control tokens; merges "a b" then "Ġ ab".
struct Meta {
  std::vector<std::pair<std::string, Value>> kv;

  Meta& set(const std::string& key, Value v) {
    for (auto& [k, val] : kv) {
      if (k == key) {
        val = std::move(v);
        return *this;
      }
    }
    kv.emplace_back(key, std::move(v));
    return *this;
  }
  Meta& erase(const std::string& key) {
    std::erase_if(kv, [&](const auto& p) { return p.first == key; });
    return *this;
  }

  Result<Vocab> load() const {
    GgufWriter w;
    for (const auto& [k, v] : kv) EXPECT_TRUE(w.add(k, v).ok()) << k;
    Result<GgufFile> file = GgufFile::parse(w.to_bytes());
    EXPECT_TRUE(file.ok()) << file.status().to_string();
    if (!file.ok()) return file.status();
    return load_vocab(*file);
  }
};

Meta bpe_meta() {
  Meta m;
  m.set("general.architecture", Value("llama"));
  m.set("tokenizer.ggml.model", Value("gpt2"));
  m.set("tokenizer.ggml.pre", Value("gpt-2"));
  m.set("tokenizer.ggml.tokens", Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab",
                                                          "\xC4\xA0"
                                                          "ab",
                                                          "<|endoftext|>", "<|im_end|>"})));
  m.set("tokenizer.ggml.token_type", Value(Array::of(std::vector<int32_t>{1, 1, 1, 1, 1, 3, 3})));
  m.set("tokenizer.ggml.merges", Value(Array::of_strings({"a b", "\xC4\xA0 ab"})));
  m.set("tokenizer.ggml.eos_token_id", Value(5u));
  return m;
}

Meta spm_meta() {
  Meta m;
  m.set("tokenizer.ggml.model", Value("llama"));
  m.set("tokenizer.ggml.tokens",
        Value(Array::of_strings({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a",
                                 "\xE2\x96\x81"
                                 "a"})));
  m.set("tokenizer.ggml.scores", Value(Array::of(std::vector<float>{0, 0, 0, -1, -2, -3})));
  m.set("tokenizer.ggml.token_type", Value(Array::of(std::vector<int32_t>{2, 3, 3, 1, 1, 1})));
  return m;
}

Status status_of(const Meta& m) {
  Result<Vocab> v = m.load();
  EXPECT_FALSE(v.ok()) << "loaded a bad vocabulary";
  return v.status();
}

std::string error_of(const Meta& m) {
  return status_of(m).message();
}

TEST(Vocab, LoadsSmallBpe) {
  Result<Vocab> v = bpe_meta().load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->model(), VocabModel::kBpe);
  EXPECT_EQ(v->pre_tokenizer(), PreTokenizer::kGpt2);
  EXPECT_EQ(v->size(), 7);
  EXPECT_EQ(v->find("ab"), 3);
  EXPECT_EQ(v->find("zz"), kNoToken);
  EXPECT_EQ(v->num_merges(), 2u);
  const PairIndex::Entry* m = v->find_merge(2, 3);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->rank, 1);
  EXPECT_EQ(m->result, 4);
  EXPECT_EQ(v->find_merge(3, 2), nullptr);
  EXPECT_EQ(v->byte_token('a'), 0);
  EXPECT_EQ(v->byte_token(' '), 2);
  EXPECT_EQ(v->byte_token('c'), kNoToken);
  EXPECT_FALSE(v->add_bos());
  EXPECT_EQ(v->bos(), kNoToken);
  EXPECT_EQ(v->eos(), 5);
  EXPECT_EQ(v->eot(), 6);  // found by its text
  EXPECT_TRUE(v->is_eog(5));
  EXPECT_TRUE(v->is_eog(6));
  EXPECT_FALSE(v->is_eog(3));

  Tokenizer tok(std::move(v).value());
  EXPECT_EQ(tok.tokenize("ab ab"), (std::vector<TokenId>{3, 4}));
  EXPECT_EQ(tok.tokenize("ab<|im_end|>", {.parse_special = true}), (std::vector<TokenId>{3, 6}));
  // 'c' has no byte token and there is no unk: it is dropped.
  EXPECT_EQ(tok.tokenize("acb"), (std::vector<TokenId>{0, 1}));
}

TEST(Vocab, HarmonyEndsAtReturnAndCallNotEnd) {
  // gpt-oss's control tokens: <|end|> closes a message inside the reply.
  Meta m = bpe_meta();
  m.set("tokenizer.ggml.tokens", Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab",
                                                          "\xC4\xA0"
                                                          "ab",
                                                          "<|endoftext|>", "<|im_end|>", "<|end|>",
                                                          "<|return|>", "<|call|>"})));
  m.set("tokenizer.ggml.token_type",
        Value(Array::of(std::vector<int32_t>{1, 1, 1, 1, 1, 3, 3, 3, 3, 3})));
  Result<Vocab> v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_FALSE(v->is_eog(7));
  EXPECT_TRUE(v->is_eog(8));
  EXPECT_TRUE(v->is_eog(9));
  EXPECT_TRUE(v->is_eog(5));
  // Without a call token the vocabulary is not Harmony's: <|end|> ends.
  m.set("tokenizer.ggml.tokens", Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab",
                                                          "\xC4\xA0"
                                                          "ab",
                                                          "<|endoftext|>", "<|im_end|>", "<|end|>",
                                                          "<|return|>", "<|callx|>"})));
  v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->is_eog(7));
  EXPECT_TRUE(v->is_eog(8));
  EXPECT_FALSE(v->is_eog(9));
  // Solar Open: <|calls|> and <|flush|> end the reply, <|end|> does not.
  m.set("tokenizer.ggml.tokens", Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab",
                                                          "\xC4\xA0"
                                                          "ab",
                                                          "<|endoftext|>", "<|im_end|>", "<|end|>",
                                                          "<|flush|>", "<|calls|>"})));
  v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_FALSE(v->is_eog(7));
  EXPECT_TRUE(v->is_eog(8));
  EXPECT_TRUE(v->is_eog(9));
}

// The end-of-turn texts of llama.cpp's list that name no eos / eot id in the
// families' files: Kimi K2's [EOT] / [EOS], MiniMax M2's [e~[, SmolDocling's
// <end_of_utterance>, Gemma 4's <|tool_response>. "</s>" only as the eos:
// Qwen's vocabularies hold it as ordinary text.
TEST(Vocab, EndOfGenerationTexts) {
  Meta m = bpe_meta();
  m.erase("tokenizer.ggml.eos_token_id");
  m.set("tokenizer.ggml.tokens",
        Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab", "[EOT]", "[EOS]", "[e~[", "</s>",
                                 "<end_of_utterance>", "]~b]"})));
  m.set("tokenizer.ggml.token_type",
        Value(Array::of(std::vector<int32_t>{1, 1, 1, 1, 3, 3, 3, 3, 3, 3})));
  m.set("tokenizer.ggml.merges", Value(Array::of_strings({"a b"})));
  Result<Vocab> v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->eot(), 4);  // [EOT] is Kimi K2's end of turn
  for (TokenId id : {4, 5, 6, 8}) EXPECT_TRUE(v->is_eog(id)) << id;
  EXPECT_FALSE(v->is_eog(7));
  EXPECT_FALSE(v->is_eog(9));  // MiniMax's role marker
  // <end_of_utterance> is the end of turn where no earlier text is there.
  m.set("tokenizer.ggml.tokens",
        Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab", "x", "[EOS]", "[e~[", "</s>",
                                 "<end_of_utterance>", "]~b]"})));
  v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->eot(), 8);
  // Gemma 4: its reply ends at <turn|>, at <eos>, and at <|tool_response>
  // after a call.
  m.set("tokenizer.ggml.tokens",
        Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab", "<turn|>", "<|tool_response>", "<eos>",
                                 "</s>", "x", "y"})));
  v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  for (TokenId id : {4, 5, 6}) EXPECT_TRUE(v->is_eog(id)) << id;
  EXPECT_FALSE(v->is_eog(7));
  // "</s>" as the eos (ERNIE 4.5, SentencePiece files) ends generation.
  m.set("tokenizer.ggml.eos_token_id", Value(7u));
  v = m.load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->is_eog(7));
}

TEST(Vocab, SpmDefaults) {
  Result<Vocab> v = spm_meta().load();
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->model(), VocabModel::kSpm);
  EXPECT_EQ(v->pre_tokenizer(), PreTokenizer::kNone);
  EXPECT_TRUE(v->add_bos());
  EXPECT_FALSE(v->add_eos());
  EXPECT_TRUE(v->add_space_prefix());
  EXPECT_EQ(v->unk(), 0);
  EXPECT_EQ(v->bos(), 1);
  EXPECT_EQ(v->eos(), 2);
  Tokenizer tok(std::move(v).value());
  EXPECT_EQ(tok.tokenize("a a"), (std::vector<TokenId>{1, 5, 5}));
  // No byte tokens: an unknown character becomes <unk>.
  EXPECT_EQ(tok.tokenize("a\xC3\xA4", {.add_special = false}), (std::vector<TokenId>{5, 0}));

  Result<Vocab> flags = spm_meta()
                            .set("tokenizer.ggml.add_bos_token", Value(false))
                            .set("tokenizer.ggml.add_eos_token", Value(true))
                            .set("tokenizer.ggml.add_space_prefix", Value(false))
                            .load();
  ASSERT_TRUE(flags.ok()) << flags.status().to_string();
  EXPECT_FALSE(flags->add_bos());
  EXPECT_TRUE(flags->add_eos());
  EXPECT_FALSE(flags->add_space_prefix());
  Tokenizer tok2(std::move(flags).value());
  EXPECT_EQ(tok2.tokenize("a"), (std::vector<TokenId>{4, 2}));
}

TEST(Vocab, PreTokenizerDefaults) {
  Result<Vocab> llama3 = bpe_meta()
                             .set("tokenizer.ggml.pre", Value("llama-bpe"))
                             .set("tokenizer.ggml.bos_token_id", Value(5u))
                             .load();
  ASSERT_TRUE(llama3.ok()) << llama3.status().to_string();
  EXPECT_EQ(llama3->pre_tokenizer(), PreTokenizer::kLlama3);
  EXPECT_TRUE(llama3->add_bos());
  EXPECT_TRUE(llama3->ignore_merges());
  // Unknown or missing names fall back to the default regexes (with a warning).
  Result<Vocab> unknown = bpe_meta().set("tokenizer.ggml.pre", Value("brand-new")).load();
  ASSERT_TRUE(unknown.ok()) << unknown.status().to_string();
  EXPECT_EQ(unknown->pre_tokenizer(), PreTokenizer::kDefault);
  EXPECT_EQ(unknown->pre_name(), "brand-new");
  Result<Vocab> missing = bpe_meta().erase("tokenizer.ggml.pre").load();
  ASSERT_TRUE(missing.ok()) << missing.status().to_string();
  EXPECT_EQ(missing->pre_tokenizer(), PreTokenizer::kDefault);
}

TEST(VocabErrors, NoTokenizerMetadata) {
  Meta m;
  m.set("general.architecture", Value("llama"));
  const Status st = status_of(m);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("no tokenizer metadata"), std::string::npos) << st.message();
  EXPECT_NE(error_of(bpe_meta().erase("tokenizer.ggml.tokens")).find("tokenizer.ggml.tokens"),
            std::string::npos);
}

TEST(VocabErrors, UnsupportedModel) {
  const Status st = status_of(bpe_meta().set("tokenizer.ggml.model", Value("t5")));
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("'t5'"), std::string::npos) << st.message();
}

TEST(VocabErrors, WrongTypes) {
  EXPECT_NE(error_of(bpe_meta().set("tokenizer.ggml.model", Value(3))).find("tokenizer.ggml.model"),
            std::string::npos);
  EXPECT_NE(error_of(bpe_meta().set("tokenizer.ggml.tokens",
                                    Value(Array::of(std::vector<int32_t>{1, 2}))))
                .find("tokenizer.ggml.tokens"),
            std::string::npos);
  EXPECT_NE(error_of(spm_meta().set("tokenizer.ggml.scores",
                                    Value(Array::of(std::vector<uint8_t>{1, 2, 3, 4, 5, 6}))))
                .find("tokenizer.ggml.scores"),
            std::string::npos);
  EXPECT_NE(error_of(bpe_meta().set("tokenizer.ggml.token_type",
                                    Value(Array::of(std::vector<float>{1, 1, 1, 1, 1, 3, 3}))))
                .find("tokenizer.ggml.token_type"),
            std::string::npos);
  EXPECT_NE(error_of(bpe_meta().set("tokenizer.ggml.add_bos_token", Value(1u)))
                .find("tokenizer.ggml.add_bos_token"),
            std::string::npos);
  EXPECT_NE(error_of(bpe_meta().set("tokenizer.ggml.eos_token_id", Value("5")))
                .find("tokenizer.ggml.eos_token_id"),
            std::string::npos);
}

TEST(VocabErrors, ArrayLengthMismatch) {
  std::string e = error_of(
      spm_meta().set("tokenizer.ggml.scores", Value(Array::of(std::vector<float>{0, 0, 0}))));
  EXPECT_NE(e.find("tokenizer.ggml.scores has 3 entries but tokenizer.ggml.tokens has 6"),
            std::string::npos)
      << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.token_type",
                              Value(Array::of(std::vector<int32_t>{1, 1, 1, 1, 1, 3, 3, 3}))));
  EXPECT_NE(e.find("tokenizer.ggml.token_type has 8 entries but tokenizer.ggml.tokens has 7"),
            std::string::npos)
      << e;
}

TEST(VocabErrors, BadTokens) {
  std::string e = error_of(bpe_meta().set(
      "tokenizer.ggml.token_type", Value(Array::of(std::vector<int32_t>{1, 1, 1, 9, 1, 3, 3}))));
  EXPECT_NE(e.find("token_type[3] = 9"), std::string::npos) << e;
  e = error_of(bpe_meta().set(
      "tokenizer.ggml.tokens",
      Value(Array::of_strings({"a", "b", "\xC4\xA0", "ab", "b", "<|endoftext|>", "<|im_end|>"}))));
  EXPECT_NE(e.find("duplicate token text 'b' (ids 1 and 4)"), std::string::npos) << e;
  e = error_of(spm_meta().set("tokenizer.ggml.token_type",
                              Value(Array::of(std::vector<int32_t>{2, 3, 3, 1, 6, 1}))));
  EXPECT_NE(e.find("token 4 has type byte but its text 'a' is not <0xHH>"), std::string::npos) << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.tokens",
                              Value(Array::of_strings(std::vector<std::string>{}))));
  EXPECT_NE(e.find("empty"), std::string::npos) << e;
}

TEST(VocabErrors, SpecialIdsOutOfRange) {
  EXPECT_EQ(status_of(bpe_meta().set("tokenizer.ggml.bos_token_id", Value(7u))).code(),
            StatusCode::kOutOfRange);
  std::string e = error_of(bpe_meta().set("tokenizer.ggml.bos_token_id", Value(7u)));
  EXPECT_NE(e.find("tokenizer.ggml.bos_token_id = 7 is outside the vocabulary (0..6)"),
            std::string::npos)
      << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.padding_token_id", Value(-1)));
  EXPECT_NE(e.find("tokenizer.ggml.padding_token_id = -1"), std::string::npos) << e;
  e = error_of(spm_meta().set("tokenizer.ggml.unknown_token_id", Value(uint64_t{1} << 40)));
  EXPECT_NE(e.find("tokenizer.ggml.unknown_token_id"), std::string::npos) << e;
  // add_bos without a bos id.
  e = error_of(bpe_meta().set("tokenizer.ggml.add_bos_token", Value(true)));
  EXPECT_NE(e.find("add_bos_token is true but no tokenizer.ggml.bos_token_id"), std::string::npos)
      << e;
}

TEST(VocabErrors, BadMerges) {
  std::string e = error_of(bpe_meta().erase("tokenizer.ggml.merges"));
  EXPECT_NE(e.find("tokenizer.ggml.merges is missing"), std::string::npos) << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.merges", Value(Array::of_strings({"a b", "a z"}))));
  EXPECT_NE(e.find("merges[1] = 'a z' names 'z', which is not a token"), std::string::npos) << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.merges", Value(Array::of_strings({"b a"}))));
  EXPECT_NE(e.find("merges[0] = 'b a' makes 'ba', which is not a token"), std::string::npos) << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.merges", Value(Array::of_strings({"ab"}))));
  EXPECT_NE(e.find("merges[0] = 'ab' is not 'left right'"), std::string::npos) << e;
  e = error_of(bpe_meta().set("tokenizer.ggml.merges", Value(Array::of_strings({"a "}))));
  EXPECT_NE(e.find("is not 'left right'"), std::string::npos) << e;
  // SPM ignores merges entirely.
  EXPECT_TRUE(spm_meta().set("tokenizer.ggml.merges", Value(Array::of_strings({"x"}))).load().ok());
}

TEST(VocabErrors, MessagesNameTheFile) {
  GgufWriter w;
  ASSERT_TRUE(w.add("general.architecture", Value("llama")).ok());
  const std::string path = ::testing::TempDir() + "/folio_tok_no_vocab.gguf";
  ASSERT_TRUE(w.write_file(path).ok());
  Result<Tokenizer> t = Tokenizer::open(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("no tokenizer metadata"), std::string::npos);
  std::remove(path.c_str());
  EXPECT_FALSE(Tokenizer::open(path).ok());
}

TEST(Vocab, RealVocabularies) {
  using testing::cached_tokenizer;
  using testing::refdata_path;
  const Tokenizer* spm = cached_tokenizer(refdata_path("tokenizer/ggml-vocab-llama-spm.gguf"));
  ASSERT_NE(spm, nullptr);
  const Vocab& s = spm->vocab();
  EXPECT_EQ(s.model(), VocabModel::kSpm);
  EXPECT_EQ(s.size(), 32000);
  EXPECT_EQ(s.bos(), 1);
  EXPECT_EQ(s.eos(), 2);
  EXPECT_EQ(s.unk(), 0);
  EXPECT_TRUE(s.add_bos());
  EXPECT_TRUE(s.add_space_prefix());
  EXPECT_EQ(s.byte_token(0x0A), 13);  // <0x0A>
  EXPECT_EQ(s.byte_value(13), 0x0A);
  EXPECT_EQ(s.type(13), TokenType::kByte);
  EXPECT_EQ(s.type(0), TokenType::kUnknown);

  const Tokenizer* qwen = cached_tokenizer(refdata_path("tokenizer/ggml-vocab-qwen2.gguf"));
  ASSERT_NE(qwen, nullptr);
  const Vocab& q = qwen->vocab();
  EXPECT_EQ(q.model(), VocabModel::kBpe);
  EXPECT_EQ(q.pre_tokenizer(), PreTokenizer::kQwen2);
  EXPECT_FALSE(q.add_bos());
  EXPECT_EQ(q.eos(), 151643);
  EXPECT_EQ(q.eot(), 151645);  // <|im_end|>
  EXPECT_TRUE(q.is_eog(151643));
  EXPECT_TRUE(q.is_eog(151645));
  EXPECT_FALSE(q.is_eog(151644));
  EXPECT_EQ(q.type(151646), TokenType::kUserDefined);

  const Tokenizer* g4 = cached_tokenizer(refdata_path("tokenizer/ggml-vocab-gemma-4.gguf"));
  ASSERT_NE(g4, nullptr);
  EXPECT_EQ(g4->vocab().model(), VocabModel::kBpeSpm);
  EXPECT_EQ(g4->vocab().pre_tokenizer(), PreTokenizer::kNewlines);
  EXPECT_TRUE(g4->vocab().add_bos());
  EXPECT_FALSE(g4->vocab().add_space_prefix());
  EXPECT_EQ(g4->tokenize("Hi")[0], 2);  // <bos>
}

}  // namespace
}  // namespace folio::tokenizer
