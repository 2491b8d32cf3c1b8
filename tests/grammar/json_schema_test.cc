// JSON Schema -> grammar: the corpus in tests/grammar/schemas (each schema's
// valid documents accepted, invalid ones refused, random walks parsing as
// JSON; schema_corpus_test.py validates the walks with Python's
// jsonschema), the refusals, and the pieces: numeric ranges checked
// exhaustively against arithmetic, regex patterns against expectations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/numeric_range_gbnf.h"
#include "grammar/regex_to_gbnf.h"
#include "walk_util.h"

namespace folio::grammar {
namespace json_schema_test {

using Json = nlohmann::ordered_json;

bool accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.is_accepting();
}

std::shared_ptr<const CompiledGrammar> schema_grammar(const Json& schema) {
  Result<std::shared_ptr<const CompiledGrammar>> g = compile_json_schema(schema);
  EXPECT_TRUE(g.ok()) << g.status().to_string() << "\nschema: " << schema.dump();
  return g.ok() ? g.value() : nullptr;
}

std::vector<std::filesystem::path> corpus_files() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir =
      std::filesystem::path(FOLIO_SOURCE_DIR) / "tests/grammar/schemas";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

TEST(JsonSchemaCorpus, ValidAcceptedInvalidRefusedWalksParse) {
  const std::vector<std::filesystem::path> files = corpus_files();
  ASSERT_GE(files.size(), 25u);
  Result<std::shared_ptr<const VocabTrie>> vocab =
      VocabTrie::build(testing::synthetic_vocab(), std::vector<int32_t>{testing::kSyntheticEos});
  ASSERT_TRUE(vocab.ok());
  std::mt19937_64 rng(99);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const Json entry = read_json(file);
    auto g = schema_grammar(entry["schema"]);
    ASSERT_NE(g, nullptr);
    for (const Json& doc : entry["valid"]) {
      EXPECT_TRUE(accepts(g, doc.get<std::string>())) << "valid document refused: " << doc;
    }
    for (const char* key : {"invalid", "valid_but_refused"}) {
      if (!entry.contains(key)) continue;
      for (const Json& doc : entry[key]) {
        EXPECT_FALSE(accepts(g, doc.get<std::string>())) << key << " document accepted: " << doc;
      }
    }
    // Random walks: each document parses as JSON and is accepted again by a
    // fresh matcher (schema validity is the Python test's job).
    TokenMasker masker(g, vocab.value());
    for (int i = 0; i < 15; ++i) {
      testing::WalkResult r = testing::random_walk(GrammarMatcher(g), masker, rng);
      ASSERT_TRUE(r.text.has_value()) << r.error;
      EXPECT_TRUE(Json::accept(*r.text)) << "not JSON: " << *r.text;
      EXPECT_TRUE(accepts(g, *r.text)) << *r.text;
    }
  }
}

TEST(JsonSchema, ObjectMemberOrderAndWhitespace) {
  auto g = schema_grammar(Json::parse(R"g({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
      "required": ["b"]})g"));
  for (const char* ok : {R"g({"b":"x"})g", R"g({"a":1,"b":"x"})g", R"g({"b":"x","c":true})g",
                         R"g({"a":1,"b":"x","c":false})g", "{\n\t\"b\" :\t\"x\"\n}"}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad :
       {"{}", R"g({"a":1})g", R"g({"b":"x","a":1})g", R"g({"b":"x",})g", R"g({"b":"x","b":"y"})g",
        R"g({"b":"x","d":1})g", "{  \"b\":\"x\"}", " {\"b\":\"x\"}", "{\"b\":\"x\"} "}) {
    EXPECT_FALSE(accepts(g, bad)) << bad;
  }
  // A required name without a schema: any value, once.
  auto req = schema_grammar(Json::parse(R"g({"required": ["x", "x"]})g"));
  EXPECT_TRUE(accepts(req, R"g({"x":[1]})g"));
  EXPECT_TRUE(accepts(req, R"g({"x":1,"y":2})g"));
  EXPECT_FALSE(accepts(req, R"g({"x":1,"x":2})g"));
  EXPECT_FALSE(accepts(req, R"g({"y":2})g"));
  // The whitespace is bounded: a newline and at most 24 blanks.
  EXPECT_TRUE(accepts(g, "{\n" + std::string(24, ' ') + "\"b\":\"x\"}"));
  EXPECT_FALSE(accepts(g, "{\n" + std::string(25, ' ') + "\"b\":\"x\"}"));
}

TEST(JsonSchema, GenericJsonObjectAndValue) {
  auto obj = compile_gbnf(json_object_gbnf());
  ASSERT_TRUE(obj.ok()) << obj.status().to_string();
  EXPECT_TRUE(
      accepts(*obj, R"g({"a": [1, -2.5e+3, "\u00e9\ud83d\ude00", {"b": null}], "c": true})g"));
  EXPECT_FALSE(accepts(*obj, "[1]"));
  EXPECT_FALSE(accepts(*obj, R"g({"a": "\ud800"})g"));  // lone surrogate escape
  EXPECT_FALSE(accepts(*obj, R"g({"a": "\udc00\ud800"})g"));
  EXPECT_FALSE(accepts(*obj, R"g({"a": 01})g"));
  EXPECT_FALSE(accepts(*obj, R"g({"a": 12345678901234567})g"));  // 17 digits: bounded
  auto val = compile_gbnf(json_value_gbnf());
  ASSERT_TRUE(val.ok());
  for (const char* ok : {"0", "-0.5", "1E-7", "\"\"", "[]", "[[[]]]", "false"}) {
    EXPECT_TRUE(accepts(*val, ok)) << ok;
  }
}

TEST(JsonSchema, UnsupportedKeywordsAreErrors) {
  const char* const cases[][2] = {
      {R"g({"not": {"type": "string"}})g", "'not'"},
      {R"g({"type": "object", "properties": {"a": {"if": {}, "then": {}}}})g", "#/properties/a"},
      {R"g({"type": "array", "uniqueItems": true})g", "uniqueItems"},
      {R"g({"type": "array", "contains": {"type": "integer"}})g", "contains"},
      {R"g({"type": "object", "patternProperties": {"^x": {}}})g", "patternProperties"},
      {R"g({"type": "number", "multipleOf": 2})g", "multipleOf"},
      {R"g({"type": "object", "minProperties": 1})g", "minProperties"},
      {R"g({"type": "string", "format": "email"})g", "format \"email\" is not supported"},
      {R"g({"type": "string", "pattern": "a", "maxLength": 3})g", "pattern together"},
      {R"g({"type": "string", "pattern": "(?=a)b"})g", "lookaround"},
      {R"g({"type": "string", "pattern": "(a)\\1"})g", "backreferences"},
      {R"g({"type": "string", "pattern": "a\\b"})g", "word boundaries"},
      {R"g({"type": "string", "pattern": "a^b"})g", "'^'"},
      {R"g({"type": "string", "pattern": "(a|)*"})g", "empty string"},
      {R"g({"type": "number", "minimum": 0.5})g", "only integer bounds"},
      {R"g({"type": "integer", "minimum": 5, "maximum": 4})g", "no integer between"},
      {R"g({"type": "string", "maxLength": 100000})g", "above the supported limit"},
      {R"g({"$ref": "https://example.com/s.json"})g", "only references into this document"},
      {R"g({"$ref": "#/$defs/missing"})g", "does not resolve"},
      {R"g({"type": "strange"})g", "unknown type"},
      {R"g({"oneOf": [{"type": "integer"}, {"type": "number"}]})g", "not provably exclusive"},
      {R"g({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}},
                       {"type": "object", "properties": {"k": {"const": 2}}}]})g",
       "not provably exclusive"},  // the tag is not required
      {R"g({"allOf": [{"type": "string"}, {"type": "integer"}]})g", "do not intersect"},
      {R"g({"allOf": [{"properties": {"a": {}}, "required": ["a"]},
                      {"properties": {"b": {}}, "additionalProperties": false}]})g",
       "forbidden by another"},
      {R"g({"type": "object", "properties": {"a": false}, "required": ["a"]})g", "false"},
      {R"g({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})g",
       "no array fits"},
      {R"g({"enum": [1, 2], "minimum": 1})g", "together with other constraints"},
      {R"g({"type": "string", "enum": [1, 2]})g", "no const / enum value"},
      {R"g({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})g",
       "left recursion"},
  };
  for (const auto& [schema, want] : cases) {
    // Conversion refuses the schema, or (a $ref cycle) parsing the grammar does.
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_json_schema(Json::parse(schema));
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_NE(g.status().message().find(want), std::string::npos)
        << schema << "\n -> " << g.status().message();
    EXPECT_EQ(g.status().message().rfind("json schema: ", 0), 0u) << g.status().message();
  }
}

TEST(JsonSchema, AnnotationsAndUnknownKeywordsAreIgnored) {
  auto g = schema_grammar(Json::parse(R"g({"type": "integer", "title": "n", "description": "d",
      "default": 3, "examples": [1], "x-vendor": {"not": 1}, "$comment": "c", "deprecated": true})g"));
  EXPECT_TRUE(accepts(g, "3"));
  EXPECT_FALSE(accepts(g, "\"3\""));
}

TEST(JsonSchema, TypeInferenceAndTypeLists) {
  // No type: the keywords say which types to generate.
  auto obj = schema_grammar(
      Json::parse(R"g({"properties": {"a": {"type": "null"}}, "required": ["a"]})g"));
  EXPECT_TRUE(accepts(obj, R"g({"a":null})g"));
  EXPECT_FALSE(accepts(obj, "1"));
  auto mixed = schema_grammar(
      Json::parse(R"g({"type": ["integer", "string"], "maximum": 3, "maxLength": 1})g"));
  for (const char* ok : {"3", "-7", "\"x\""}) EXPECT_TRUE(accepts(mixed, ok)) << ok;
  for (const char* bad : {"4", "\"xy\"", "null", "1.5"}) EXPECT_FALSE(accepts(mixed, bad)) << bad;
}

TEST(JsonSchema, AnyOfSiblingsAreMergedIntoEachAlternative) {
  auto g = schema_grammar(Json::parse(R"g({"type": "object", "required": ["id"],
      "properties": {"id": {"type": "integer"}},
      "anyOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]})g"));
  EXPECT_TRUE(accepts(g, R"g({"id":1,"a":"x"})g"));
  EXPECT_TRUE(accepts(g, R"g({"id":1,"b":true})g"));
  EXPECT_FALSE(accepts(g, R"g({"id":1})g"));
  EXPECT_FALSE(accepts(g, R"g({"a":"x"})g"));
}

// Random schemas from the keywords the converter knows (and some it
// refuses), nested at random: conversion gives a grammar or an error, never
// a crash; a grammar's random documents are JSON.
TEST(JsonSchema, RandomSchemasNeverCrash) {
  std::mt19937_64 rng(2024);
  Result<std::shared_ptr<const VocabTrie>> vocab =
      VocabTrie::build(testing::synthetic_vocab(), std::vector<int32_t>{testing::kSyntheticEos});
  ASSERT_TRUE(vocab.ok());
  const std::vector<Json> leaves = {
      Json::parse(R"g({"type": "integer", "minimum": -3, "maximum": 40})g"),
      Json::parse(R"g({"type": "number", "exclusiveMinimum": 0})g"),
      Json::parse(R"g({"type": "string", "maxLength": 4})g"),
      Json::parse(R"g({"type": "string", "pattern": "^[a-c]+x?$"})g"),
      Json::parse(R"g({"type": "string", "format": "date"})g"),
      Json::parse(R"g({"enum": ["a", 1, null]})g"),
      Json::parse(R"g({"const": [true]})g"),
      Json::parse(R"g({"type": ["boolean", "null"]})g"),
      Json::parse(R"g({"$ref": "#/$defs/d"})g"),
      Json::parse(R"g({"not": {}})g"),
      Json::parse(R"g({"type": "strange"})g"),
      Json(true),
      Json(false),
      Json::object(),
      Json(42),
      Json("x"),
      Json::array()};
  std::function<Json(int)> make = [&](int depth) -> Json {
    if (depth > 3 || rng() % 3 == 0) return leaves[rng() % leaves.size()];
    Json s = Json::object();
    switch (rng() % 6) {
      case 0: {
        s["type"] = "object";
        Json props = Json::object();
        const int n = static_cast<int>(rng() % 4);
        for (int i = 0; i < n; ++i)
          props[std::string(1, static_cast<char>('a' + i))] = make(depth + 1);
        s["properties"] = props;
        if (rng() % 2) s["required"] = Json::array({"a"});
        if (rng() % 3 == 0) s["additionalProperties"] = rng() % 2 ? Json(false) : make(depth + 1);
        break;
      }
      case 1:
        s["type"] = "array";
        s["items"] = make(depth + 1);
        if (rng() % 2) s["minItems"] = rng() % 3;
        if (rng() % 2) s["maxItems"] = rng() % 4;
        if (rng() % 3 == 0) s["prefixItems"] = Json::array({make(depth + 1)});
        break;
      case 2:
        s["anyOf"] = Json::array({make(depth + 1), make(depth + 1)});
        break;
      case 3:
        s["oneOf"] = Json::array({make(depth + 1), make(depth + 1)});
        break;
      case 4:
        s["allOf"] = Json::array({make(depth + 1), make(depth + 1)});
        break;
      default:
        s = make(depth + 1);
        if (s.is_object()) s["description"] = "d";
        break;
    }
    return s;
  };
  int converted = 0;
  for (int iter = 0; iter < 400; ++iter) {
    Json schema = make(0);
    if (schema.is_object()) schema["$defs"] = Json{{"d", make(2)}};
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_json_schema(schema);
    if (!g.ok()) {
      EXPECT_EQ(g.status().message().rfind("json schema: ", 0), 0u) << g.status().message();
      continue;
    }
    ++converted;
    TokenMasker masker(g.value(), vocab.value());
    testing::WalkResult r = testing::random_walk(GrammarMatcher(g.value()), masker, rng,
                                                 {.max_tokens = 1500, .soft_limit = 40});
    // A walk may end in a dead end only where the grammar allows nothing
    // the vocabulary can spell; a document it ends with is JSON.
    if (r.text) {
      EXPECT_TRUE(Json::accept(*r.text)) << schema.dump() << "\n" << *r.text;
    }
  }
  EXPECT_GT(converted, 100);
  // Deep nesting is an error, not a stack overflow.
  Json deep = Json::object();
  for (int i = 0; i < 300; ++i) deep = Json{{"type", "array"}, {"items", std::move(deep)}};
  Result<std::string> d = json_schema_to_gbnf(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("nested deeper"), std::string::npos);
}

// Random patterns: a GBNF expression or an error, never a crash.
TEST(RegexToGbnf, RandomPatternsNeverCrash) {
  std::mt19937_64 rng(77);
  const std::string alphabet = "ab.^$|()[]{}*+?\\-,0129dwsuxDW:!=<>";
  auto plain = [](const CharSet& s) { return s.to_gbnf(); };
  for (int i = 0; i < 3000; ++i) {
    std::string p;
    const size_t n = rng() % 16;
    for (size_t k = 0; k < n; ++k) p += alphabet[rng() % alphabet.size()];
    Result<std::string> e = regex_to_gbnf(p, plain);
    if (!e.ok()) continue;
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf("root ::= " + *e);
    EXPECT_TRUE(g.ok()) << p << " -> " << *e << "\n" << g.status().to_string();
  }
}

// Every integer in a window around the bounds: the grammar says yes exactly
// for lo <= v <= hi.
TEST(NumericRange, IntegersExhaustive) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges = {
      {0, 0},
      {0, 9},
      {1, 10},
      {7, 123},
      {-5, 5},
      {-123, -7},
      {99, 1000},
      {100, 199},
      {-1000, 1000},
      {5, std::nullopt},
      {std::nullopt, -3},
      {12345, 12345},
      {9, 10},
      {10, 99}};
  for (int i = 0; i < 20; ++i) {
    const int64_t a = static_cast<int64_t>(rng() % 20000) - 10000;
    const int64_t b = a + static_cast<int64_t>(rng() % 3000);
    ranges.emplace_back(a, b);
  }
  for (const auto& [lo, hi] : ranges) {
    Result<std::string> expr = int_range_gbnf(lo, hi);
    ASSERT_TRUE(expr.ok());
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf("root ::= " + *expr);
    ASSERT_TRUE(g.ok()) << g.status().to_string() << "\n" << *expr;
    const int64_t from = (lo ? *lo : (hi ? *hi : 0)) - 150;
    const int64_t to = (hi ? *hi : (lo ? *lo : 0)) + 150;
    for (int64_t v = from; v <= to; ++v) {
      const bool want = (!lo || v >= *lo) && (!hi || v <= *hi);
      ASSERT_EQ(accepts(*g, std::to_string(v)), want)
          << v << " in [" << (lo ? *lo : -1) << ", " << (hi ? *hi : -1) << "]: " << *expr;
    }
    EXPECT_FALSE(accepts(*g, "-0"));
    EXPECT_FALSE(accepts(*g, "01"));
  }
  // Unbounded sides stop at 16 digits.
  Result<std::string> open = int_range_gbnf(0, std::nullopt);
  ASSERT_TRUE(open.ok());
  auto g = compile_gbnf("root ::= " + *open);
  EXPECT_TRUE(accepts(*g, "9999999999999999"));
  EXPECT_FALSE(accepts(*g, "10000000000000000"));
}

TEST(NumericRange, NumbersAgainstArithmetic) {
  struct Case {
    std::optional<NumberBound> lo, hi;
  };
  const std::vector<Case> cases = {{NumberBound{0, false}, NumberBound{1, false}},
                                   {NumberBound{0, true}, std::nullopt},
                                   {std::nullopt, NumberBound{0, true}},
                                   {NumberBound{-10, false}, NumberBound{-1, false}},
                                   {NumberBound{-3, true}, NumberBound{3, true}},
                                   {NumberBound{2, false}, NumberBound{2, false}},
                                   {NumberBound{-2, false}, NumberBound{15, true}}};
  const char* const texts[] = {"0",  "-0",    "0.0",   "0.5",   "1",      "1.0",  "1.01",   "-0.5",
                               "-1", "-1.5",  "-10",   "-10.0", "-10.5",  "-3",   "-2.999", "2.999",
                               "3",  "3.0",   "2",     "2.00",  "2.01",   "1.99", "14.99",  "15",
                               "-2", "-2.01", "0.000", "0.001", "-0.001", "7"};
  for (const Case& c : cases) {
    Result<std::string> expr = number_range_gbnf(c.lo, c.hi);
    ASSERT_TRUE(expr.ok()) << expr.status().to_string();
    auto g = compile_gbnf("root ::= " + *expr);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    for (const char* t : texts) {
      const double v = std::stod(t);
      const bool want = (!c.lo || (c.lo->exclusive ? v > c.lo->value : v >= c.lo->value)) &&
                        (!c.hi || (c.hi->exclusive ? v < c.hi->value : v <= c.hi->value));
      // The grammar may refuse valid spellings (-0) but never accept invalid ones.
      if (accepts(*g, t)) {
        EXPECT_TRUE(want) << t << " accepted by " << *expr;
      } else if (std::string(t) != "-0" && std::string(t) != "-0.0") {
        EXPECT_FALSE(want) << t << " refused by " << *expr;
      }
    }
  }
  EXPECT_FALSE(number_range_gbnf(NumberBound{1, true}, NumberBound{1, false}).ok());
}

// Patterns rendered over plain text (no JSON escaping): what they match.
TEST(RegexToGbnf, Matches) {
  auto plain = [](const CharSet& s) { return s.to_gbnf(); };
  struct Case {
    const char* pattern;
    std::vector<const char*> yes, no;
  };
  const std::vector<Case> cases = {
      {"^abc$", {"abc"}, {"ab", "abcd", "xabc"}},
      {"abc", {"abc", "xxabcxx", "abcabc"}, {"ab", "acb"}},
      {"^a|b$", {"a", "axx", "xxb", "b"}, {"xa", "bx"}},
      {"^(ab|cd)+$", {"ab", "abcdab"}, {"", "abc"}},
      {"^[a-c]{2,3}x?$", {"ab", "abcx", "cc"}, {"a", "abcd", "abx x"}},
      {"^[^0-9\\s]+$", {"abc", "é!"}, {"a1", "a b", ""}},
      {"^\\d{3}-\\w+$", {"123-ab_9"}, {"12-a", "123-", "123-a-b"}},
      {"^.+$", {"a", "ab c"}, {"", "a\nb"}},
      {"^\\u00e9\\x41\\.\\*\\/$", {"éA.*/"}, {"éA.x/"}},
      {"^\\uD83D\\uDE00$", {"😀"}, {"\xED\xA0\xBD"}},
      {"^a{0}b$", {"b"}, {"ab"}},
      {"^(?:x|y)(?<n>z)*?$", {"x", "yzz"}, {"z"}},
      {"^[\\]\\-a]+$", {"]-a"}, {"b"}},
      {"^a{2,}$", {"aa", "aaaa"}, {"a"}},
      {"^x{,2}$", {"x{,2}"}, {"x", "xx"}},  // not a quantifier: literal braces
  };
  for (const Case& c : cases) {
    Result<std::string> expr = regex_to_gbnf(c.pattern, plain);
    ASSERT_TRUE(expr.ok()) << c.pattern << ": " << expr.status().to_string();
    auto g = compile_gbnf("root ::= " + *expr);
    ASSERT_TRUE(g.ok()) << c.pattern << ": " << g.status().to_string() << "\n" << *expr;
    for (const char* s : c.yes) EXPECT_TRUE(accepts(*g, s)) << c.pattern << " should match " << s;
    for (const char* s : c.no)
      EXPECT_FALSE(accepts(*g, s)) << c.pattern << " should not match " << s;
  }
}

}  // namespace
}  // namespace folio::grammar
