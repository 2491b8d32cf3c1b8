// GBNF parsing: the syntax llama.cpp documents, the errors (with line:column)
// for bad grammars, the round trip through to_gbnf(), and robustness against
// arbitrary bytes (random and mutated grammars never crash the parser).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace folio::grammar {
namespace gbnf_parser_test {

// Accepts `text` completely with a fresh matcher for `gbnf`.
bool matches(const std::string& gbnf, const std::string& text) {
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return false;
  GrammarMatcher m(g.value());
  return m.accept_bytes(text) && m.is_accepting();
}

std::string error_of(const std::string& gbnf) {
  Result<Grammar> g = parse_gbnf(gbnf);
  EXPECT_FALSE(g.ok()) << "parsed: " << gbnf;
  return g.ok() ? std::string() : g.status().message();
}

::testing::AssertionResult has_error(const std::string& gbnf, const std::string& where,
                                     const std::string& what) {
  const std::string msg = error_of(gbnf);
  if (msg.find(where) == std::string::npos || msg.find(what) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "error '" << msg << "' lacks '" << where << "' / '" << what << "'";
  }
  return ::testing::AssertionSuccess();
}

TEST(GbnfParser, ChessExampleFromLlamaCppReadme) {
  const std::string chess = R"g(
# `root` specifies the pattern for the overall output
root ::= (
    # it must start with the characters "1. " followed by a sequence
    # of characters that match the `move` rule, followed by a space, followed
    # by another move, and then a newline
    "1. " move " " move "\n"

    # it's followed by one or more subsequent moves, numbered with one or two digits
    ([1-9] [0-9]? ". " move " " move "\n")+
)

# `move` is an abstract representation, which can be a pawn, nonpawn, or castle.
# The `[+#]?` denotes the possibility of checking or mate signs after moves
move ::= (pawn | nonpawn | castle) [+#]?

pawn ::= [a-h] [1-8]
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" ("-O")?
)g";
  EXPECT_TRUE(matches(chess, "1. e4 e5\n2. Nf3 Nc6\n"));
  EXPECT_TRUE(matches(chess, "1. e4 e5\n2. Nf3 Nc6\n10. O-O-O Qxd8#\n"));
  EXPECT_FALSE(matches(chess, "1. e4 e5\n"));            // needs a second move line
  EXPECT_FALSE(matches(chess, "1. e9 e5\n2. a1 a2\n"));  // rank 9
}

TEST(GbnfParser, LiteralsEscapesAndClasses) {
  EXPECT_TRUE(matches(R"g(root ::= "a\tb\n\\\"\x41\u00e9\U0001F600")g", "a\tb\n\\\"Aé\U0001F600"));
  EXPECT_TRUE(matches(R"g(root ::= [^"\\]+)g", "héllo 中文"));
  EXPECT_FALSE(matches(R"g(root ::= [^"\\]+)g", "a\"b"));
  EXPECT_TRUE(matches(R"g(root ::= [a-c-] [\]\[] [\x30-\x39])g", "-]5"));
  EXPECT_TRUE(matches(R"g(root ::= [-a] [a-])g", "-a"));
  EXPECT_TRUE(matches(R"g(root ::= . . .)g", "a\n€"));
  EXPECT_TRUE(matches(R"g(root ::= [ぁ-ゟ]+)g", "ひらがな"));
  EXPECT_FALSE(matches(R"g(root ::= [ぁ-ゟ]+)g", "カタカナ"));
  EXPECT_TRUE(matches("root ::= \"\"", ""));
  EXPECT_TRUE(matches("root ::= [^]", "x"));  // empty negated class: anything
  EXPECT_FALSE(matches("root ::= []", "x"));  // empty class: nothing
  EXPECT_TRUE(matches("root ::= \"a\" \"\" \"b\"", "ab"));
}

TEST(GbnfParser, Repetitions) {
  const std::string g = R"g(root ::= "a"{3} "b"{2,} "c"{1,3} "d"{,2} "e"? "f"* "g"+)g";
  EXPECT_TRUE(matches(g, "aaabbcg"));
  EXPECT_TRUE(matches(g, "aaabbbbbcccddeffffggg"));
  EXPECT_FALSE(matches(g, "aabbcg"));      // a{3}
  EXPECT_FALSE(matches(g, "aaabcg"));      // b{2,}
  EXPECT_FALSE(matches(g, "aaabbccccg"));  // c{1,3}
  EXPECT_FALSE(matches(g, "aaabbcdddg"));  // d{,2}
  EXPECT_FALSE(matches(g, "aaabbc"));      // g+
  // Repetition applies to a whole literal or group, with spaces allowed.
  EXPECT_TRUE(matches(R"g(root ::= "ab" * ("c" | "d") {2})g", "ababcd"));
  EXPECT_FALSE(matches(R"g(root ::= "ab"*)g", "aba"));
  EXPECT_TRUE(matches(R"g(root ::= ("x"{2}){2})g", "xxxx"));
  EXPECT_TRUE(matches(R"g(root ::= "x"{0})g", ""));
  EXPECT_TRUE(matches(R"g(root ::= ("a"?){3})g", "aa"));  // bounded repetition of a nullable item
}

TEST(GbnfParser, RulesNewlinesAndComments) {
  const std::string g =
      "root ::= item (\",\" item)*   # a list\n"
      "item ::=\n"
      "  num |\n"
      "  word\n"
      "  | \"(\" root \")\"\n"
      "\n"
      "# numbers\n"
      "num ::= [0-9]+\n"
      "word ::= ( [a-z]\n"
      "           [a-z]* )\n";
  EXPECT_TRUE(matches(g, "12,abc,(1,(x))"));
  EXPECT_FALSE(matches(g, "12,"));
  EXPECT_TRUE(matches("root ::= a-b_C\na-b_C ::= \"x\"\r\n", "x"));
  // A rule whose line ends in '|' or '::=' before the next rule: an empty
  // last alternative.
  EXPECT_TRUE(matches("root ::= \"a\" opt\nopt ::= \"b\" |\nnone ::=\nz ::= none", "a"));
  EXPECT_TRUE(matches("root ::= \"a\" opt\nopt ::= \"b\" |\n\n# c\nz ::= \"z\"", "ab"));
  // Rules may be used before they are defined; unused rules are fine.
  EXPECT_TRUE(matches("root ::= later\nunused ::= \"u\"\nlater ::= \"l\"", "l"));
}

TEST(GbnfParser, Errors) {
  EXPECT_TRUE(has_error("root ::= foo", "line 1:10", "undefined rule 'foo'"));
  EXPECT_TRUE(has_error("main ::= \"x\"", "", "no rule named 'root'"));
  EXPECT_TRUE(has_error("root ::= \"x\"\nroot ::= \"y\"", "line 2:1", "defined twice"));
  EXPECT_TRUE(has_error("root ::= \"abc", "line 1:10", "unterminated string literal"));
  EXPECT_TRUE(has_error("root ::= \"ab\ncd\"", "line 1:10", "unterminated string literal"));
  EXPECT_TRUE(has_error("root ::= [a-z", "line 1:10", "unterminated character class"));
  EXPECT_TRUE(has_error("root ::= [z-a]", "line 1:11", "bad character range"));
  EXPECT_TRUE(has_error("root ::= \"a\"{3,2}", "line 1:13", "maximum is below the minimum"));
  EXPECT_TRUE(has_error("root ::= \"a\"{}", "line 1:13", "no bounds"));
  EXPECT_TRUE(has_error("root ::= \"a\"{2", "line 1:13", "bad repetition"));
  EXPECT_TRUE(has_error("root ::= \"a\"{99999}", "line 1:13", "above the limit"));
  EXPECT_TRUE(has_error("root ::= \"\\q\"", "line 1:11", "unknown escape '\\q'"));
  EXPECT_TRUE(has_error("root ::= \"\\x4\"", "line 1:11", "2 hex digits"));
  EXPECT_TRUE(has_error("root ::= \"\\U00110000\"", "line 1:11", "beyond U+10FFFF"));
  EXPECT_TRUE(has_error("root ::= ( \"a\"", "line 1:10", "never closed"));
  EXPECT_TRUE(has_error("root ::= \"a\" )", "line 1:14", "unexpected ')'"));
  EXPECT_TRUE(has_error("root ::= * \"a\"", "line 1:10", "nothing to repeat"));
  EXPECT_TRUE(has_error("root ::= \"a\"\n  \"b\"", "line 2:3", "rule name"));
  EXPECT_TRUE(has_error("root ::= \"a\" b ::= \"c\"", "line 1:14", "new line"));
  EXPECT_TRUE(has_error("root ::= <think>", "line 1:10", "token references"));
  EXPECT_TRUE(has_error("root ::= \"\xff\"", "line 1:11", "invalid UTF-8"));
  EXPECT_TRUE(has_error("| \"a\"", "line 1:1", "'|' outside a rule"));
  EXPECT_TRUE(has_error("root ::= \"a\" ~", "line 1:14", "unexpected '~'"));
}

TEST(GbnfParser, LeftRecursionIsRefused) {
  // Direct, indirect, and through a rule that can match nothing.
  EXPECT_TRUE(has_error("root ::= root \"a\" | \"b\"", "line 1:1", "left recursion: 'root'"));
  EXPECT_TRUE(has_error("root ::= expr\nexpr ::= term \"+\" | \"1\"\nterm ::= expr", "line 2:1",
                        "'expr' -> 'term' -> 'expr'"));
  EXPECT_TRUE(
      has_error("root ::= opt root \"x\" | \"y\"\nopt ::= \"o\"?", "line 1:1", "left recursion"));
  // An open repetition of something that can be empty would loop forever.
  EXPECT_TRUE(has_error("root ::= (\"a\"?)*", "line 1:16", "can match the empty string"));
  EXPECT_TRUE(has_error("root ::= e+\ne ::= \"x\" |", "line 1:11", "can match the empty string"));
  // Right recursion and recursion after a character are fine.
  EXPECT_TRUE(matches("root ::= \"(\" root \")\" | \"\"", "((()))"));
  EXPECT_TRUE(matches("root ::= \"a\" root | \"b\"", "aaab"));
}

TEST(GbnfParser, RoundTripThroughToGbnf) {
  const std::string g = R"g(
root ::= obj
obj ::= "{" ( pair ("," pair)* )? "}"
pair ::= str ":" val
val ::= str | [0-9]{1,3} | obj | "\u00e9\"\\" | [^a-z\]-]
str ::= "\"" [a-z]* "\""
)g";
  Result<Grammar> a = parse_gbnf(g);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  const std::string text = a->to_gbnf();
  Result<Grammar> b = parse_gbnf(text);
  ASSERT_TRUE(b.ok()) << b.status().to_string() << "\n" << text;
  // Generated rules are named rules from then on: the same rules again
  // (rules are listed in the order they are first mentioned, so compare
  // the sets of lines).
  auto sorted_lines = [](const std::string& t) {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = t.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(t.substr(start, nl - start));
    }
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  EXPECT_EQ(sorted_lines(b->to_gbnf()), sorted_lines(text));
  for (const char* s : {"{}", "{\"a\":1}", "{\"ab\":{\"c\":\"d\"},\"e\":123}", "{\"a\":é\"\\}",
                        "{\"a\":Z}", "{\"a\":1234}", "{\"a\":-}"}) {
    EXPECT_EQ(matches(g, s), matches(text, s)) << s;
  }
  EXPECT_TRUE(matches(text, "{\"ab\":{\"c\":\"d\"},\"e\":123}"));
}

// Arbitrary bytes, and grammars with random edits, must give a Grammar or an
// error: never a crash, a hang, or a grammar the matcher cannot run.
TEST(GbnfParser, RandomAndMutatedInputNeverCrash) {
  std::mt19937_64 rng(1234);
  const std::vector<std::string> seeds = {
      "root ::= \"a\" b* | [^x-z]{2,5} (c | \"\\u00e9\")+\nb ::= \"b\"\nc ::= . [0-9]?",
      "root ::= obj\nobj ::= \"{\" ( str \":\" obj )* \"}\" | str\nstr ::= \"\\\"\" [a-z]* "
      "\"\\\"\"",
      "root ::= ( \"x\" | ( \"y\" ( \"z\" )? ){1,3} )* # comment\n",
  };
  const std::string alphabet = "root::=|()[]{}*+?.\"\\^-,#\n abxyz019uU";
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    if (iter % 3 == 0) {
      const size_t n = rng() % 64;
      for (size_t i = 0; i < n; ++i) text += static_cast<char>(rng() % 256);
    } else {
      text = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        const size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text.erase(at, 1);
            break;
          case 1:
            text.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
          default:
            text[at] = alphabet[rng() % alphabet.size()];
            break;
        }
      }
    }
    Result<Grammar> g = parse_gbnf(text);
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
      continue;
    }
    ++parsed;
    Result<std::shared_ptr<const CompiledGrammar>> c = CompiledGrammar::compile(*g);
    ASSERT_TRUE(c.ok()) << c.status().to_string() << "\n" << text;
    GrammarMatcher m(c.value());
    for (int k = 0; k < 8; ++k)
      (void)m.accept_bytes(std::string(1, alphabet[rng() % alphabet.size()]));
    (void)m.is_accepting();
  }
  EXPECT_GT(parsed, 100);  // the mutations keep enough grammars valid to exercise the matcher
}

}  // namespace
}  // namespace folio::grammar
