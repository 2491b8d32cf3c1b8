// folio-grammar-walk: random documents from a JSON Schema's grammar, for an
// outside validator (tests/grammar/schema_corpus_test.py checks them with
// Python's jsonschema).
//
//   folio-grammar-walk --schema FILE [--count N] [--seed S] [--print-grammar]
//
// FILE is a corpus entry ({"schema": ..., "valid": [...], "invalid": [...]})
// or a bare schema. Each document is drawn token by token through the token
// masks over the synthetic vocabulary of walk_util.h, and printed as one
// line holding a JSON string. With --print-grammar the GBNF is printed
// instead. Exit status: 0, or 1 with a message on stderr (a schema the
// converter refuses, a walk that fails).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_gbnf.h"
#include "walk_util.h"

namespace {

using Json = nlohmann::ordered_json;

int fail(const std::string& message) {
  std::cerr << "folio-grammar-walk: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace folio::grammar;
  std::string schema_path;
  int count = 20;
  uint64_t seed = 1;
  bool print_grammar = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--schema") {
      schema_path = value();
    } else if (a == "--count") {
      count = std::atoi(value().c_str());
    } else if (a == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--print-grammar") {
      print_grammar = true;
    } else {
      return fail("unknown argument " + a);
    }
  }
  if (schema_path.empty()) return fail("usage: --schema FILE [--count N] [--seed S]");

  std::ifstream in(schema_path);
  if (!in) return fail("cannot read " + schema_path);
  std::stringstream ss;
  ss << in.rdbuf();
  Json doc = Json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) return fail(schema_path + ": not JSON");
  const Json schema = doc.is_object() && doc.contains("schema") ? doc["schema"] : doc;

  folio::Result<std::string> gbnf = json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return fail(gbnf.status().to_string());
  if (print_grammar) {
    std::cout << *gbnf;
    return 0;
  }
  folio::Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(*gbnf);
  if (!g.ok()) return fail(g.status().to_string());
  folio::Result<std::shared_ptr<const VocabTrie>> vocab =
      VocabTrie::build(testing::synthetic_vocab(), std::vector<int32_t>{testing::kSyntheticEos});
  if (!vocab.ok()) return fail(vocab.status().to_string());

  TokenMasker masker(g.value(), vocab.value());
  std::mt19937_64 rng(seed);
  const GrammarMatcher start(g.value());
  for (int i = 0; i < count; ++i) {
    testing::WalkResult r = testing::random_walk(start, masker, rng);
    if (!r.text) return fail("walk " + std::to_string(i) + ": " + r.error);
    std::cout << Json(*r.text).dump() << "\n";
  }
  return 0;
}
