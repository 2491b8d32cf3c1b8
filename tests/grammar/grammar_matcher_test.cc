// GrammarMatcher: acceptance code point by code point, partial UTF-8 across
// calls, all-or-nothing rejection, accepting / can_continue, copies, and the
// stack set staying small on ambiguous and deeply nested input.
#include <gtest/gtest.h>

#include <string>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/vocab_trie.h"

namespace folio::grammar {
namespace grammar_matcher_test {

std::shared_ptr<const CompiledGrammar> compile(const std::string& gbnf) {
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? g.value() : nullptr;
}

const char* const kArith = R"g(
root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
)g";

TEST(GrammarMatcher, AcceptsAndRejectsStrings) {
  auto g = compile(kArith);
  for (const char* ok : {"1", "12+3", "(1+2)*3", "((7))", "1*2/3-4+5"}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept_bytes(ok) && m.is_accepting()) << ok;
  }
  for (const char* prefix : {"(", "1+", "((1)", "2*("}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept_bytes(prefix)) << prefix;
    EXPECT_FALSE(m.is_accepting()) << prefix;
  }
  for (const char* bad : {"+", "1++", "()", "1)", "a"}) {
    GrammarMatcher m(g);
    EXPECT_FALSE(m.accept_bytes(bad)) << bad;
  }
}

TEST(GrammarMatcher, RejectionLeavesTheStateUnchanged) {
  auto g = compile(kArith);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes("(1+"));
  const StackSet before = m.stacks();
  EXPECT_FALSE(m.accept_bytes("2)x"));  // fails on the last byte
  EXPECT_EQ(m.stacks(), before);
  EXPECT_TRUE(m.accept_bytes("2)"));
  EXPECT_TRUE(m.is_accepting());
  EXPECT_TRUE(m.accept_bytes(""));  // nothing to read: accepted, no change
  EXPECT_TRUE(m.is_accepting());
}

TEST(GrammarMatcher, CopiesAreIndependent) {
  auto g = compile(kArith);
  GrammarMatcher a(g);
  ASSERT_TRUE(a.accept_bytes("(1"));
  GrammarMatcher b = a;
  ASSERT_TRUE(b.accept_bytes(")"));
  EXPECT_TRUE(b.is_accepting());
  EXPECT_FALSE(a.is_accepting());
  ASSERT_TRUE(a.accept_bytes("+2)"));
  EXPECT_TRUE(a.is_accepting());
  a.reset();
  EXPECT_FALSE(a.is_accepting());
  EXPECT_TRUE(a.accept_bytes("3"));
}

TEST(GrammarMatcher, PartialUtf8AcrossCalls) {
  auto g = compile(R"g(root ::= "é" [中-中] "😀" [^a]*)g");
  GrammarMatcher m(g);
  const std::string text = "é中😀ü";
  // One byte per call: every prefix is accepted, the state mid-character is
  // not accepting.
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_TRUE(m.accept_bytes(text.substr(i, 1))) << "byte " << i;
  }
  EXPECT_TRUE(m.is_accepting());

  GrammarMatcher p(g);
  ASSERT_TRUE(p.accept_bytes("\xC3"));  // first byte of é
  EXPECT_FALSE(p.is_accepting());
  EXPECT_TRUE(p.can_continue());
  EXPECT_FALSE(p.accept_bytes("\xA8"));  // è: a different character
  EXPECT_TRUE(p.accept_bytes("\xA9"));   // é
  // A lead byte whose characters the grammar cannot read is refused at once:
  // after "é" only 中 (U+4E2D, E4 B8 AD) may follow.
  EXPECT_FALSE(p.accept_bytes("\xC3"));
  EXPECT_FALSE(p.accept_bytes("\xE5"));
  EXPECT_TRUE(p.accept_bytes("\xE4"));
  EXPECT_FALSE(p.accept_bytes("\xB9"));
  EXPECT_TRUE(p.accept_bytes("\xB8\xAD"));
}

TEST(GrammarMatcher, InvalidUtf8IsRefused) {
  auto g = compile("root ::= .*");
  for (const char* bad : {"\x80", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xED\xA0\x80",
                          "\xF4\x90\x80\x80", "\xF5", "\xFF", "a\xC3(", "\xC3\xA9\x80"}) {
    GrammarMatcher m(g);
    EXPECT_FALSE(m.accept_bytes(bad)) << testing::PrintToString(std::string(bad));
  }
  GrammarMatcher m(g);
  EXPECT_TRUE(m.accept_bytes("\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_TRUE(m.accept_bytes("\xED\x9F\xBF"));      // U+D7FF
  EXPECT_TRUE(m.accept_bytes("\xEE\x80\x80"));      // U+E000
}

TEST(GrammarMatcher, AcceptingAndCanContinue) {
  auto g = compile(R"g(root ::= "ab" "c"?)g");
  GrammarMatcher m(g);
  EXPECT_FALSE(m.is_accepting());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.is_accepting());
  EXPECT_TRUE(m.can_continue());
  ASSERT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.is_accepting());
  EXPECT_FALSE(m.can_continue());  // nothing more can follow
  EXPECT_FALSE(m.accept_bytes("c"));
}

TEST(GrammarMatcher, AmbiguityStaysSmall) {
  // Many ways to split the same text: the stack set stays deduplicated.
  auto g = compile(R"g(root ::= ("a" | "aa" | "a" "a")* "b")g");
  GrammarMatcher m(g);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(m.accept_bytes("a"));
  EXPECT_LE(m.stacks().num_stacks(), 8u);
  EXPECT_TRUE(m.accept_bytes("b"));
  EXPECT_TRUE(m.is_accepting());
}

TEST(GrammarMatcher, TailCallsKeepStacksFlatAndNestingGrowsThem) {
  auto star = compile(R"g(root ::= [a-z]* "!")g");
  GrammarMatcher m(star);
  ASSERT_TRUE(m.accept_bytes(std::string(5000, 'q')));
  size_t depth = 0;
  m.stacks().for_each([&](std::span<const uint32_t> s) { depth = std::max(depth, s.size()); });
  EXPECT_LE(depth, 2u);
  EXPECT_TRUE(m.accept_bytes("!") && m.is_accepting());

  auto nest = compile(R"g(root ::= "(" root ")" | "x")g");
  GrammarMatcher n(nest);
  ASSERT_TRUE(n.accept_bytes(std::string(1000, '(') + "x" + std::string(1000, ')')));
  EXPECT_TRUE(n.is_accepting());
}

TEST(GrammarMatcher, AcceptToken) {
  auto g = compile(R"g(root ::= "hi")g");
  Result<std::shared_ptr<const VocabTrie>> v =
      VocabTrie::build({"h", "i", "", "hi", "<eos>"}, std::vector<int32_t>{4});
  ASSERT_TRUE(v.ok());
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_token(**v, 4));  // EOS before the end
  EXPECT_FALSE(m.accept_token(**v, 2));  // empty (control) token
  EXPECT_TRUE(m.accept_token(**v, 0));
  EXPECT_FALSE(m.accept_token(**v, 3));
  EXPECT_TRUE(m.accept_token(**v, 1));
  EXPECT_TRUE(m.accept_token(**v, 4));
}

}  // namespace
}  // namespace folio::grammar
