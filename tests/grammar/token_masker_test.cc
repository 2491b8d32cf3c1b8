// Token masks against a brute-force reference: for every token, a copy of
// the matcher tries the token's bytes (end-of-generation: is_accepting()).
// States come from random walks, on a small synthetic vocabulary (every
// token checked) and on Gemma 3's 262144 tokens (every token at a few fixed
// states, sampled tokens at many random ones).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemma_vocab.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/token_masker.h"
#include "walk_util.h"

namespace folio::grammar {
namespace token_masker_test {

using testing::gemma_vocab;
using testing::synthetic_vocab;

bool reference_allows(const GrammarMatcher& m, const VocabTrie& vocab, int32_t id) {
  if (vocab.is_eog(id)) return m.is_accepting();
  if (vocab.token(id).empty()) return false;
  GrammarMatcher copy = m;
  return copy.accept_bytes(vocab.token(id));
}

// Compares the mask with the reference for `ids` (all tokens when empty).
::testing::AssertionResult mask_matches(const GrammarMatcher& m, TokenMasker& masker,
                                        const std::vector<int32_t>& ids = {}) {
  const VocabTrie& vocab = masker.vocab();
  std::vector<uint64_t> mask;
  const size_t count = masker.fill_mask(m, &mask);
  size_t set = 0;
  for (int32_t id = 0; id < vocab.size(); ++id) set += TokenMasker::allowed(mask, id);
  if (set != count) return ::testing::AssertionFailure() << "count " << count << " != bits " << set;
  auto check = [&](int32_t id) -> ::testing::AssertionResult {
    const bool want = reference_allows(m, vocab, id);
    if (TokenMasker::allowed(mask, id) != want) {
      return ::testing::AssertionFailure()
             << "token " << id << " " << ::testing::PrintToString(std::string(vocab.token(id)))
             << ": mask says " << !want << ", matcher says " << want;
    }
    return ::testing::AssertionSuccess();
  };
  if (ids.empty()) {
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (auto r = check(id); !r) return r;
    }
  } else {
    for (int32_t id : ids) {
      if (auto r = check(id); !r) return r;
    }
  }
  return ::testing::AssertionSuccess();
}

std::shared_ptr<const VocabTrie> small_vocab() {
  std::vector<std::string> v = synthetic_vocab();
  // Duplicates, tokens of invalid UTF-8, long tokens, overlong forms.
  for (const char* s : {"a", "{\"", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90", "\xE0\x80",
                        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "\"\"\"", "12345678901234567890",
                        "\xCE\xB1\xCE\xB2", "\xCE", "\xD4\xB1", "😀😀", "<end>"}) {
    v.push_back(s);
  }
  const int32_t end = static_cast<int32_t>(v.size()) - 1;
  Result<std::shared_ptr<const VocabTrie>> trie =
      VocabTrie::build(v, std::vector<int32_t>{testing::kSyntheticEos, end});
  EXPECT_TRUE(trie.ok());
  return trie.value();
}

const char* const kGreek = R"g(
root ::= ( [α-ω]+ | [Ա-Ֆ]+ "😀" | "é"{2} | [^a-z"]{1,3} "." )+ "!"?
)g";
const char* const kSignedArith = R"g(
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= "-"? [0-9]+ ("." [0-9]+)? | "(" expr ")"
)g";

TEST(TokenMasker, MatchesBruteForceOnSmallVocab) {
  auto vocab = small_vocab();
  std::vector<std::string> grammars = {json_value_gbnf(), kGreek, kSignedArith,
                                       "root ::= . . [^\\x00-\\x7F]* \"x\"",
                                       "root ::= \"a\" | \"ab\" | \"abc\" ( \"d\" | [^d] )*"};
  std::mt19937_64 rng(7);
  for (const std::string& text : grammars) {
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(text);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    TokenMasker masker(g.value(), vocab);
    for (int walk = 0; walk < 12; ++walk) {
      GrammarMatcher m(g.value());
      std::vector<uint64_t> mask;
      for (int step = 0; step < 60; ++step) {
        ASSERT_TRUE(mask_matches(m, masker)) << text << "\nafter step " << step;
        masker.fill_mask(m, &mask);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab->size(); ++id) {
          if (TokenMasker::allowed(mask, id) && !vocab->is_eog(id)) allowed.push_back(id);
        }
        if (allowed.empty()) break;
        ASSERT_TRUE(m.accept_token(*vocab, allowed[rng() % allowed.size()]));
      }
    }
  }
}

TEST(TokenMasker, EndOfGenerationOnlyWhenAccepting) {
  auto vocab = small_vocab();
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf("root ::= \"ab\" \"c\"?");
  ASSERT_TRUE(g.ok());
  TokenMasker masker(g.value(), vocab);
  GrammarMatcher m(g.value());
  std::vector<uint64_t> mask;
  masker.fill_mask(m, &mask);
  EXPECT_FALSE(TokenMasker::allowed(mask, testing::kSyntheticEos));
  EXPECT_TRUE(TokenMasker::allowed(mask, vocab->size() - 14));  // "a" (the duplicate)
  ASSERT_TRUE(m.accept_bytes("ab"));
  EXPECT_EQ(masker.fill_mask(m, &mask), 3u);  // "c" and both end tokens
  EXPECT_TRUE(TokenMasker::allowed(mask, testing::kSyntheticEos));
  EXPECT_TRUE(TokenMasker::allowed(mask, vocab->size() - 1));
  ASSERT_TRUE(m.accept_bytes("c"));
  EXPECT_EQ(masker.fill_mask(m, &mask), 2u);  // only the end tokens
}

TEST(TokenMasker, PartialCharacterTokens) {
  auto vocab = small_vocab();
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf("root ::= \"中\" \"é\"");
  ASSERT_TRUE(g.ok());
  TokenMasker masker(g.value(), vocab);
  GrammarMatcher m(g.value());
  auto allowed_tokens = [&]() {
    std::vector<uint64_t> mask;
    masker.fill_mask(m, &mask);
    std::vector<std::string> out;
    for (int32_t id = 0; id < vocab->size(); ++id) {
      if (TokenMasker::allowed(mask, id)) out.emplace_back(vocab->token(id));
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(allowed_tokens(), (std::vector<std::string>{"\xE4", "中"}));
  ASSERT_TRUE(m.accept_bytes("\xE4"));
  EXPECT_EQ(allowed_tokens(), (std::vector<std::string>{"\xB8\xAD"}));
  ASSERT_TRUE(m.accept_bytes("\xB8\xAD"));
  EXPECT_EQ(allowed_tokens(), (std::vector<std::string>{"\xC3", "é"}));
}

TEST(TokenMasker, GemmaVocabSampledStates) {
  const testing::ModelVocab* gv = gemma_vocab();
  ASSERT_NE(gv, nullptr);
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"g({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "tags": {"type": "array", "items": {"type": "string", "enum": ["a b", "ünï", "中文"]}},
      "nested": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    },
    "required": ["name", "age"]
  })g");
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_json_schema(schema);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  TokenMasker masker(g.value(), gv->trie);
  // Every token at a few fixed states: the start, inside a string (where the
  // masker accepts whole subtrees at once), inside a string after half a
  // character (where it cannot), and in a closed enum.
  for (const char* prefix : {"", "{\"name\": \"Jo", "{\"name\": \"\xE4",
                             "{\"name\": \"x\", \"age\": 7, \"tags\": [\"\xC3"}) {
    GrammarMatcher m(g.value());
    ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
    ASSERT_TRUE(mask_matches(m, masker))
        << "after " << ::testing::PrintToString(std::string(prefix));
  }
  std::mt19937_64 rng(42);
  const int32_t n = gv->trie->size();
  int states = 0;
  for (int walk = 0; walk < 3; ++walk) {
    GrammarMatcher m(g.value());
    std::vector<uint64_t> mask;
    for (int step = 0; step < 40; ++step) {
      masker.fill_mask(m, &mask);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < n; ++id) {
        if (TokenMasker::allowed(mask, id) && !gv->trie->is_eog(id)) allowed.push_back(id);
      }
      // Sampled ids: random ones (mostly refused) and allowed ones.
      std::vector<int32_t> sample;
      for (int i = 0; i < 1500; ++i) sample.push_back(static_cast<int32_t>(rng() % n));
      for (int i = 0; i < 1500 && !allowed.empty(); ++i) {
        sample.push_back(allowed[rng() % allowed.size()]);
      }
      for (int32_t id : gv->eog) sample.push_back(id);
      ASSERT_TRUE(mask_matches(m, masker, sample)) << "walk " << walk << " step " << step;
      ++states;
      if (allowed.empty()) break;
      ASSERT_TRUE(m.accept_token(*gv->trie, allowed[rng() % allowed.size()]));
    }
  }
  EXPECT_GT(states, 30);
}

TEST(VocabTrie, LayoutAndErrors) {
  Result<std::shared_ptr<const VocabTrie>> t =
      VocabTrie::build({"ab", "a", "", "b", "ab", "abc"}, std::vector<int32_t>{2});
  ASSERT_TRUE(t.ok());
  // Nodes: root, a, ab, abc, b.
  EXPECT_EQ((*t)->num_nodes(), 5u);
  EXPECT_EQ((*t)->max_depth(), 3u);
  EXPECT_EQ((*t)->nodes()[0].end, 5u);
  EXPECT_EQ((*t)->nodes()[1].end, 4u);  // a's subtree: a, ab, abc
  EXPECT_TRUE((*t)->is_eog(2));
  EXPECT_FALSE(VocabTrie::build({"a"}, std::vector<int32_t>{1}).ok());
  EXPECT_FALSE(VocabTrie::build({"a"}, std::vector<int32_t>{-1}).ok());
}

}  // namespace
}  // namespace folio::grammar
