// Robustness: seeded random mutations of the refdata chat templates (spans
// deleted, duplicated, swapped; template syntax, operators and odd bytes
// inserted) must parse and render to a result or an error, never crash or
// hang, and give the same outcome twice (no hidden state between renders).
// Run under the asan preset for memory errors (see the report in the brief).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "jinja/template.h"
#include "test_util.h"

namespace folio::jinja {
namespace fuzz_test {

using Json = nlohmann::ordered_json;

const char* const kInserts[] = {
    "{%",
    "%}",
    "{{",
    "}}",
    "{#",
    "#}",
    "-",
    "+",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "'",
    "\"",
    "|",
    ".",
    ",",
    ":",
    "endfor",
    "endif",
    "{% endif %}",
    "{% endfor %}",
    "{% for x in messages %}",
    "{% if x %}",
    "{% else %}",
    "{% macro m(a, b=1) %}",
    "{% endmacro %}",
    "{{ m(1) }}",
    "{{ m(m) }}",
    "loop",
    " is ",
    " not ",
    " in ",
    "\\",
    "\n",
    "range(99999)",
    "namespace(",
    "*",
    "**",
    "%",
    "~",
    "|tojson",
    "|items",
    "|map(attribute='x')",
    "|join(",
    ".split(",
    "[::-1]",
    "[0]",
    "recursive",
    "{% raw %}",
    "{% endraw %}",
    "{% set ns.x = 1 %}",
    "{% call m() %}",
    "{% endcall %}",
    "{% filter upper %}",
    "{% break %}",
    "\xff",
    "\xc3",
    "\xe2\x80\xa8",
    "0x",
    "1e999",
    "9999999999999999999",
    "{%-",
    "-%}",
    "{{-",
    "-}}",
    "{%+",
    "caller()",
    "varargs",
    "none",
    "raise_exception('x')",
};

std::string mutate(const std::string& src, std::mt19937& rng) {
  std::string s = src;
  int n_mut = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < n_mut; ++k) {
    auto pos = [&]() { return s.empty() ? 0 : rng() % (s.size() + 1); };
    auto span = [&]() { return 1 + rng() % 24; };
    switch (rng() % 6) {
      case 0: {  // delete
        size_t p = pos();
        s.erase(p, std::min(span(), s.size() - std::min(p, s.size())));
        break;
      }
      case 1: {  // duplicate
        size_t p = pos();
        std::string piece = s.substr(std::min(p, s.size()), span());
        s.insert(pos(), piece);
        break;
      }
      case 2:
      case 3: {  // insert syntax
        s.insert(pos(), kInserts[rng() % std::size(kInserts)]);
        break;
      }
      case 4: {  // random byte
        if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() % 256);
        break;
      }
      case 5: {  // truncate
        s.resize(pos());
        break;
      }
    }
  }
  return s;
}

Json conversation() {
  return Json::parse(R"({
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
      {"role": "assistant", "content": "It is sunny."}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
}

std::string outcome(const std::string& source, const Json& vars, const RenderOptions& options) {
  Error error;
  Result<Template> t = Template::parse(source, {}, &error);
  if (!t.ok()) return "parse:" + error.to_string();
  Result<std::string> out = t->render(vars, options, &error);
  if (!out.ok()) return "render:" + error.to_string();
  return "ok:" + *out;
}

TEST(JinjaFuzz, MutatedCorpusTemplatesNeverCrash) {
  std::vector<std::string> sources;
  for (const auto& e : std::filesystem::directory_iterator(testing::templates_dir())) {
    if (e.path().extension() == ".jinja") sources.push_back(testing::read_file(e.path().string()));
  }
  ASSERT_FALSE(sources.empty());
  std::sort(sources.begin(), sources.end());
  RenderOptions options;
  options.max_steps = 20000;
  options.max_output_bytes = 1 << 16;
  options.max_value_bytes = 1 << 16;
  options.max_list_items = 1 << 12;
  std::tm tm{};
  tm.tm_year = 124;
  tm.tm_mday = 1;
  options.now = tm;
  Json vars = conversation();
  std::mt19937 rng(20240726);
  int parsed = 0, rendered = 0, total = 0;
  for (int round = 0; round < 20; ++round) {
    for (const auto& src : sources) {
      std::string mutant = mutate(src, rng);
      std::string first = outcome(mutant, vars, options);
      ++total;
      parsed += first.rfind("parse:", 0) != 0;
      rendered += first.rfind("ok:", 0) == 0;
      // Same input, same outcome.
      if ((total % 7) == 0) {
        ASSERT_EQ(first, outcome(mutant, vars, options));
      }
    }
  }
  // The mutations must exercise both the parser's errors and the renderer.
  EXPECT_GT(parsed, total / 10);
  EXPECT_GT(rendered, total / 20);
  std::printf("[ fuzz     ] %d mutants: %d parsed, %d rendered\n", total, parsed, rendered);
}

// Random byte strings and random token soups.
TEST(JinjaFuzz, RandomTokenSoup) {
  std::mt19937 rng(7);
  RenderOptions options;
  options.max_steps = 20000;
  options.max_output_bytes = 1 << 16;
  Json vars = conversation();
  int total = 0, parse_errors = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string s;
    int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      if (rng() % 4 == 0) {
        s.push_back(static_cast<char>(rng() % 256));
      } else {
        s += kInserts[rng() % std::size(kInserts)];
      }
    }
    const std::string first = outcome(s, vars, options);
    ++total;
    parse_errors += first.rfind("parse:", 0) == 0;
    // An error names what went wrong; the same input gives the same outcome.
    if (first.rfind("ok:", 0) != 0) {
      ASSERT_GT(first.size(), first.find(':') + 1) << "an error without a message for: " << s;
    }
    if ((i % 5) == 0) {
      ASSERT_EQ(first, outcome(s, vars, options)) << s;
    }
  }
  // Most soups are not templates, but some are: both paths ran.
  EXPECT_GT(parse_errors, total / 2);
  EXPECT_LT(parse_errors, total);
}

}  // namespace
}  // namespace folio::jinja
