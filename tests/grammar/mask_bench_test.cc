// Token-mask timing on Gemma 3's vocabulary (262144 tokens). Not a test:
// disabled by default; run it with
//   build/tests/folio_grammar_tests --gtest_also_run_disabled_tests
//       --gtest_filter='MaskBench.*'
// It prints, per grammar and state, the allowed-token count and the time of
// one fill_mask: cold (a fresh masker: every automaton transition computed),
// walk (the automaton built: the trie walk alone) and reuse (the state seen
// again: a copy of the recent mask), then the per-token time along random
// generations (one masker per stream, as a server would keep).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gemma_vocab.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/token_masker.h"

namespace folio::grammar {
namespace mask_bench_test {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Case {
  const char* name;
  std::string gbnf;
  std::vector<std::pair<const char*, std::string>> states;  // label, text so far
};

TEST(MaskBench, DISABLED_GemmaJson) {
  const Clock::time_point t_load = Clock::now();
  const testing::ModelVocab* gv = testing::gemma_vocab();
  ASSERT_NE(gv, nullptr);
  std::printf("vocabulary: %d tokens, trie %zu nodes, max token %zu bytes (load + trie %.0f ms)\n",
              gv->trie->size(), gv->trie->num_nodes(), gv->trie->max_depth(), ms_since(t_load));
  const Clock::time_point t_trie = Clock::now();
  Result<std::shared_ptr<const VocabTrie>> rebuilt = VocabTrie::build(gv->tokens, gv->eog);
  ASSERT_TRUE(rebuilt.ok());
  std::printf("trie build alone: %.1f ms\n\n", ms_since(t_trie));

  const nlohmann::ordered_json person = nlohmann::ordered_json::parse(R"g({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "email": {"type": "string", "format": "uuid"},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
      "address": {"type": "object", "properties": {"city": {"type": "string"},
                  "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["city"]}
    },
    "required": ["name", "age"]
  })g");
  Result<std::string> person_gbnf = json_schema_to_gbnf(person);
  ASSERT_TRUE(person_gbnf.ok());
  // Non-ASCII literals split the non-ASCII code points into several classes.
  const nlohmann::ordered_json tagged = nlohmann::ordered_json::parse(R"g({
    "type": "object",
    "properties": {"name": {"type": "string"},
                   "tags": {"type": "array", "items": {"enum": ["a b", "ünï", "中文"]}}},
    "required": ["name", "tags"]
  })g");
  Result<std::string> tagged_gbnf = json_schema_to_gbnf(tagged);
  ASSERT_TRUE(tagged_gbnf.ok());
  const std::vector<Case> cases = {
      {"json_object",
       json_object_gbnf(),
       {{"start", ""},
        {"after {", "{"},
        {"in key", "{\"na"},
        {"after key", "{\"name\""},
        {"in string value", "{\"name\": \"Jo"},
        {"after string value", "{\"name\": \"John\""},
        {"in number", "{\"age\": 4"},
        {"nested array", "{\"a\": [1, {\"b\": [true, "}}},
      {"person schema",
       *person_gbnf,
       {{"start", ""},
        {"in required key", "{\"na"},
        {"in string value", "{\"name\": \"Jo"},
        {"after string value", "{\"name\": \"John\""},
        {"in bounded int", "{\"name\": \"John\", \"age\": 4"},
        {"optional keys", "{\"name\": \"John\", \"age\": 42, "}}},
      {"non-ASCII enum",
       *tagged_gbnf,
       {{"in string value", "{\"name\": \"Jo"},
        {"in enum", "{\"name\": \"Jo\", \"tags\": [\"\xC3"}}},
  };

  std::printf("%-14s %-20s %8s %10s %10s %10s\n", "grammar", "state", "allowed", "cold ms",
              "walk ms", "reuse ms");
  for (const Case& c : cases) {
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(c.gbnf);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    for (const auto& [label, text] : c.states) {
      GrammarMatcher m(g.value());
      ASSERT_TRUE(m.accept_bytes(text)) << label;
      std::vector<uint64_t> mask;
      // cold: a new masker (every transition computed, caches cold); walk:
      // its automaton built, the trie walked again; reuse: the default
      // masker seeing the state again (its recent-mask copy).
      TokenMasker walker(g.value(), gv->trie, /*recent_masks=*/0);
      const Clock::time_point t0 = Clock::now();
      const size_t allowed = walker.fill_mask(m, &mask);
      const double cold = ms_since(t0);
      const int reps = 20;
      const Clock::time_point t1 = Clock::now();
      for (int i = 0; i < reps; ++i) walker.fill_mask(m, &mask);
      const double walk = ms_since(t1) / reps;
      TokenMasker reuser(g.value(), gv->trie);
      reuser.fill_mask(m, &mask);
      const Clock::time_point t2 = Clock::now();
      for (int i = 0; i < reps; ++i) reuser.fill_mask(m, &mask);
      const double reuse = ms_since(t2) / reps;
      std::printf("%-14s %-20s %8zu %10.3f %10.3f %10.3f\n", c.name, label, allowed, cold, walk,
                  reuse);
    }
  }

  // Generation-like: one masker per stream, a random allowed token per step
  // (long strings end sooner: tokens with a quote are preferred 1 in 4).
  std::printf("\nper-token mask time along random generations (200 tokens each, 5 streams):\n");
  for (const Case& c : cases) {
    Result<std::shared_ptr<const CompiledGrammar>> g = compile_gbnf(c.gbnf);
    ASSERT_TRUE(g.ok());
    std::vector<double> times;
    std::mt19937_64 rng(3);
    for (int stream = 0; stream < 5; ++stream) {
      TokenMasker masker(g.value(), gv->trie);
      GrammarMatcher m(g.value());
      std::vector<uint64_t> mask;
      std::vector<int32_t> allowed, quoted;
      for (int step = 0; step < 200; ++step) {
        const Clock::time_point t0 = Clock::now();
        masker.fill_mask(m, &mask);
        times.push_back(ms_since(t0));
        allowed.clear();
        quoted.clear();
        for (int32_t id = 0; id < gv->trie->size(); ++id) {
          if (!TokenMasker::allowed(mask, id) || gv->trie->is_eog(id)) continue;
          allowed.push_back(id);
          if (gv->trie->token(id).find_first_of("\"]}") != std::string_view::npos) {
            quoted.push_back(id);
          }
        }
        if (allowed.empty()) break;
        const auto& pool = (!quoted.empty() && rng() % 4 == 0) ? quoted : allowed;
        ASSERT_TRUE(m.accept_token(*gv->trie, pool[rng() % pool.size()]));
      }
    }
    std::sort(times.begin(), times.end());
    double sum = 0;
    for (double t : times) sum += t;
    std::printf("%-14s tokens %zu  mean %.3f ms  p50 %.3f ms  p90 %.3f ms  max %.3f ms\n", c.name,
                times.size(), sum / times.size(), times[times.size() / 2],
                times[times.size() * 9 / 10], times.back());
  }
}

}  // namespace
}  // namespace folio::grammar
