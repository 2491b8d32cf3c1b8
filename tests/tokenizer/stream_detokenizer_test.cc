// Streaming detokenization: every chunk is valid UTF-8, and the chunks add
// up to the batch detokenization.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/utf8.h"
#include "test_util.h"
#include "tokenizer/stream_detokenizer.h"

namespace folio::tokenizer {
namespace stream_detokenizer_test {

using testing::cached_tokenizer;
using testing::refdata_path;
using Ids = std::vector<TokenId>;

bool valid_utf8(const std::string& s) {
  std::string clean;
  append_sanitized_utf8(s, &clean);
  return clean == s && utf8_incomplete_tail(s) == 0;
}

TEST(StreamDetokenizer, Utf8Helpers) {
  EXPECT_EQ(utf8_incomplete_tail(""), 0u);
  EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
  EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8_incomplete_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8_incomplete_tail("a\xF0\x9F\xA6"), 3u);
  EXPECT_EQ(utf8_incomplete_tail("a\xF0\x9F\xA6\x99"), 0u);  // complete
  EXPECT_EQ(utf8_incomplete_tail("a\xE0\x80"), 0u);          // overlong: never completes
  EXPECT_EQ(utf8_incomplete_tail("a\xED\xA0"), 0u);          // surrogate
  EXPECT_EQ(utf8_incomplete_tail("a\x80\x80"), 0u);          // no lead byte
  EXPECT_EQ(utf8_incomplete_tail("\xFF"), 0u);
  std::string out;
  append_sanitized_utf8(
      "a\xFF"
      "b\xC3\xA4\xE2\x82",
      &out);
  EXPECT_EQ(out,
            "a\xEF\xBF\xBD"
            "b\xC3\xA4\xEF\xBF\xBD\xEF\xBF\xBD");
}

// Byte-fallback tokens of one emoji: nothing comes out until the last byte.
TEST(StreamDetokenizer, SpmByteFallback) {
  const Tokenizer* t = cached_tokenizer(refdata_path("tokenizer/ggml-vocab-llama-spm.gguf"));
  ASSERT_NE(t, nullptr);
  StreamDetokenizer s(t);
  EXPECT_EQ(s.push(29871), " ");  // ▁
  EXPECT_EQ(s.push(243), "");     // <0xF0>
  EXPECT_EQ(s.push(162), "");
  EXPECT_EQ(s.push(169), "");
  EXPECT_EQ(s.pending(), 3u);
  EXPECT_EQ(s.push(156), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(s.pending(), 0u);
  // A byte that can never start a character comes out as U+FFFD at once.
  EXPECT_EQ(s.push(3 + 0xFF), "\xEF\xBF\xBD");
  // An interrupted sequence: the lead byte becomes U+FFFD, the rest passes.
  EXPECT_EQ(s.push(3 + 0xE2), "");
  EXPECT_EQ(s.push(15043), "\xEF\xBF\xBD Hello");
  // An incomplete tail at the end.
  EXPECT_EQ(s.push(3 + 0xC3), "");
  EXPECT_EQ(s.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(s.flush(), "");

  StreamDetokenizer first(t, /*render_special=*/false, /*strip_space_prefix=*/true);
  EXPECT_EQ(first.push(1), "");  // BOS, hidden
  EXPECT_EQ(first.push(15043), "Hello");
  EXPECT_EQ(first.push(3186), " world");
  StreamDetokenizer special(t, /*render_special=*/true);
  EXPECT_EQ(special.push(2), "</s>");
}

// Byte-level BPE splits emoji and CJK across tokens; stream them one token at
// a time through every vocabulary.
TEST(StreamDetokenizer, ChunksAreValidAndComplete) {
  const std::string text =
      "\xF0\x9F\x9A\x80 (normal) \xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F "
      "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8"
      "apple\xE5\xB7\xA5\xE4\xBD\x9C "
      "\xE1\x9E\x80\xE1\x9E\xB6\xE1\x9E\x93\xE1\x9F\x8B \xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE";
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "llama-spm", "phi-3", "gemma-4",
                           "deepseek-llm", "starcoder", "falcon"}) {
    const Tokenizer* t =
        cached_tokenizer(refdata_path(std::string("tokenizer/ggml-vocab-") + name + ".gguf"));
    ASSERT_NE(t, nullptr);
    const Ids ids = t->tokenize(text, {.add_special = false});
    StreamDetokenizer s(t);
    std::string all;
    int held = 0;
    for (TokenId id : ids) {
      const std::string chunk = s.push(id);
      EXPECT_TRUE(valid_utf8(chunk)) << name;
      held += s.pending() > 0;
      all += chunk;
    }
    all += s.flush();
    EXPECT_EQ(all, t->detokenize(ids, {.strip_space_prefix = false})) << name;
    if (std::string(name) == "gpt-2" || std::string(name) == "llama-spm") {
      EXPECT_GT(held, 0) << name << ": expected tokens that end inside a character";
    }
  }
}

}  // namespace
}  // namespace folio::tokenizer
