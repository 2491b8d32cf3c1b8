// GrammarConstraint on a small hand-made vocabulary: a plain grammar holds
// from the first token; a lazy one lets anything through until its trigger
// (a token or a word across token boundaries), then holds from the
// trigger's text on, and never offers a token that would fire the trigger
// with text the grammar refuses.
#include "engine/grammar_constraint.h"

#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"

namespace folio {
namespace grammar_constraint_test {

// Token ids: the index in this list; "" stands for a control token the
// grammar sees no text of, and id 9 is end-of-generation.
const std::vector<std::string> kTokens = {"a", "b", "<to", "ol>", "<tool>", "ol>x", "[C]", "1", "2",
                                          "", "}", "{", "ol>{", "<tool>{"};
constexpr int32_t kEog = 9;
constexpr int32_t kControl = 6;  // stands for a control token "[C]"

std::shared_ptr<const grammar::VocabTrie> vocab() {
  const int32_t eog[] = {kEog};
  auto t = grammar::VocabTrie::build(kTokens, eog);
  EXPECT_TRUE(t.ok());
  return *t;
}

std::shared_ptr<const grammar::CompiledGrammar> compile(const char* gbnf) {
  auto g = grammar::compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return *g;
}

bool allowed(const std::vector<uint64_t>& mask, int32_t id) {
  return ((mask[static_cast<size_t>(id) / 64] >> (static_cast<size_t>(id) % 64)) & 1) != 0;
}

std::vector<int32_t> allowed_ids(GrammarConstraint& c) {
  std::vector<uint64_t> mask;
  const size_t n = c.fill_mask(&mask);
  std::vector<int32_t> out;
  for (int32_t id = 0; id < static_cast<int32_t>(kTokens.size()); ++id) {
    if (allowed(mask, id)) out.push_back(id);
  }
  EXPECT_EQ(out.size(), n);
  return out;
}

TEST(GrammarConstraint, PlainGrammarHoldsFromTheStart) {
  GrammarConstraint c(compile("root ::= \"<tool>{\" [12]+ \"}\"\n"), vocab());
  EXPECT_TRUE(c.triggered());
  EXPECT_EQ(allowed_ids(c), (std::vector<int32_t>{2, 4, 13}));
  EXPECT_FALSE(c.accept(0));
}

TEST(GrammarConstraint, WordTriggerEngagesAcrossTokens) {
  grammar::GrammarTriggers t;
  t.words = {"<tool>"};
  GrammarConstraint c(compile("root ::= \"<tool>{\" [12]+ \"}\"\n"), vocab(), t);
  EXPECT_FALSE(c.triggered());
  // Before the trigger: everything, the end included, except tokens that
  // would fire it with text the grammar refuses ("<tool>" alone is fine:
  // "{" can still follow; "ol>" cannot fire yet).
  std::vector<int32_t> all;
  for (int32_t id = 0; id < static_cast<int32_t>(kTokens.size()); ++id) all.push_back(id);
  EXPECT_EQ(allowed_ids(c), all);
  EXPECT_TRUE(c.is_accepting());
  ASSERT_TRUE(c.accept(0));  // "a": free text
  ASSERT_TRUE(c.accept(1));
  ASSERT_TRUE(c.accept(2));  // "<to": half a trigger
  EXPECT_FALSE(c.triggered());
  // Now "ol>x" would fire it followed by "x": refused; "ol>", "ol>{" fire it.
  std::vector<int32_t> ids = allowed_ids(c);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 5), 0);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 3), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 12), 1);
  ASSERT_TRUE(c.accept(12));  // "ol>{": the grammar reads "<tool>{"
  EXPECT_TRUE(c.triggered());
  EXPECT_EQ(allowed_ids(c), (std::vector<int32_t>{7, 8}));
  EXPECT_FALSE(c.is_accepting());
  ASSERT_TRUE(c.accept(7));
  ASSERT_TRUE(c.accept(10));
  EXPECT_TRUE(c.is_accepting());
  EXPECT_EQ(allowed_ids(c), (std::vector<int32_t>{kEog}));
}

TEST(GrammarConstraint, TokenTriggerAndARequiredCall) {
  grammar::GrammarTriggers t;
  t.tokens = {kControl};
  t.end_before_trigger = false;  // the call is required: no end before it
  GrammarConstraint c(compile("root ::= \"[C]\" \"{\" [12] \"}\"\n"), vocab(), t);
  std::vector<int32_t> ids = allowed_ids(c);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kEog), 0);
  EXPECT_EQ(ids.size(), kTokens.size() - 1);
  EXPECT_FALSE(c.is_accepting());
  // The trigger's text as free text ("<tool>", "[C]" spelled by other
  // tokens) does not fire a token trigger.
  ASSERT_TRUE(c.accept(4));
  EXPECT_FALSE(c.triggered());
  ASSERT_TRUE(c.accept(kControl));
  EXPECT_TRUE(c.triggered());
  EXPECT_EQ(allowed_ids(c), (std::vector<int32_t>{11}));
  ASSERT_TRUE(c.accept(11));
  ASSERT_TRUE(c.accept(8));
  ASSERT_TRUE(c.accept(10));
  EXPECT_TRUE(c.is_accepting());
}

TEST(GrammarConstraint, TriggerTokenTheGrammarRefusesIsMasked) {
  grammar::GrammarTriggers t;
  t.tokens = {kControl};
  GrammarConstraint c(compile("root ::= \"<tool>\" [12]\n"), vocab(), t);
  std::vector<int32_t> ids = allowed_ids(c);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kControl), 0);
  EXPECT_FALSE(c.accept(kControl));
}

TEST(TriggerWatch, EarliestWordAndTheTextAfterIt) {
  grammar::GrammarTriggers t;
  t.words = {"<tool>", "ol"};
  grammar::TriggerWatch w(t);
  std::string start;
  EXPECT_FALSE(w.fires(0, "a<t", &start));
  w.push("a<t");
  ASSERT_TRUE(w.fires(1, "ool>{", &start));
  EXPECT_EQ(start, "<tool>{");  // "<tool>" starts before "ol"
  EXPECT_FALSE(w.fires(1, "", &start));
}

}  // namespace grammar_constraint_test
}  // namespace folio
