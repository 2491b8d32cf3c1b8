// Hostile and broken templates: every one ends in a clear error (kind,
// position, Status code), never a crash or a hang. Limits are lowered where
// the default would only make the test slower.
#include <gtest/gtest.h>

#include <chrono>

#include "jinja/template.h"
#include "test_util.h"

namespace folio::jinja {
namespace limits_test {

using Json = nlohmann::ordered_json;

struct Outcome {
  bool ok = false;
  std::string output;
  Error error;
  Status status;
};

Outcome run(std::string_view source, const RenderOptions& options = {},
            const Json& vars = Json::object()) {
  Outcome o;
  Result<Template> t = Template::parse(source, {}, &o.error);
  if (!t.ok()) {
    o.status = t.status();
    return o;
  }
  Result<std::string> out = t->render(vars, options, &o.error);
  if (!out.ok()) {
    o.status = out.status();
    return o;
  }
  o.ok = true;
  o.output = *out;
  return o;
}

// Renders `source`, which must fail with an error of `kind`; the outcome,
// for the checks of its position and Status.
Outcome run_failing(std::string_view source, ErrorKind kind, const RenderOptions& options = {},
                    const Json& vars = Json::object()) {
  Outcome o = run(source, options, vars);
  EXPECT_FALSE(o.ok) << source;
  EXPECT_EQ(o.error.kind, kind) << source << ": " << o.status.to_string();
  return o;
}

TEST(JinjaErrors, SyntaxErrorHasLineAndColumn) {
  Outcome o = run_failing("line one\nline two {{ a +* b }}\n", ErrorKind::kSyntax);
  EXPECT_EQ(o.error.line, 2);
  EXPECT_EQ(o.error.column, 16);  // the `*`
  EXPECT_EQ(o.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(o.status.message().find("TemplateSyntaxError at line 2, column 16"), std::string::npos)
      << o.status.message();
}

TEST(JinjaErrors, RuntimeErrorHasPosition) {
  Outcome o = run_failing("ok\n  {{ 'a' + 1 }}", ErrorKind::kType);
  EXPECT_EQ(o.error.line, 2);
  EXPECT_GT(o.error.column, 0);
}

TEST(JinjaErrors, RaiseExceptionKeepsTheMessage) {
  Outcome o = run_failing(
      "{% if messages|length == 0 %}{{ raise_exception('No messages provided.') }}{% endif %}",
      ErrorKind::kTemplate, {}, Json{{"messages", Json::array()}});
  EXPECT_EQ(o.error.message, "No messages provided.");
  EXPECT_EQ(o.error.line, 1);
}

TEST(JinjaErrors, UnsupportedTagsAreRejectedClearly) {
  for (const char* src : {"{% extends 'base.html' %}", "{% include 'x' %}",
                          "{% block b %}{% endblock %}", "{% import 'm' as m %}"}) {
    Outcome o = run(src);
    ASSERT_FALSE(o.ok) << src;
    EXPECT_EQ(o.error.kind, ErrorKind::kUnsupported) << src;
    EXPECT_EQ(o.status.code(), StatusCode::kUnsupported) << src;
  }
}

TEST(JinjaErrors, BreakOutsideLoop) {
  run_failing("{% break %}", ErrorKind::kSyntax);
}

TEST(JinjaErrors, InvalidUtf8Source) {
  Outcome o = run_failing(std::string("ok\n\xff{{ x }}"), ErrorKind::kSyntax);
  EXPECT_EQ(o.error.line, 2);
}

TEST(JinjaLimits, DeepNestingIsAParseError) {
  Outcome o = run_failing("{{ " + std::string(20000, '(') + "1" + std::string(20000, ')') + " }}",
                          ErrorKind::kSyntax);
  EXPECT_NE(o.error.message.find("nesting"), std::string::npos) << o.error.message;

  std::string blocks;
  for (int i = 0; i < 2000; ++i) blocks += "{% if x %}";
  o = run(blocks);
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.message.find("nesting"), std::string::npos) << o.error.message;

  std::string nots;
  for (int i = 0; i < 20000; ++i) nots += "not ";
  o = run("{{ " + nots + "x }}");
  ASSERT_FALSE(o.ok);
  std::string negs(20000, '-');
  o = run("{{ " + negs + "1 }}");
  ASSERT_FALSE(o.ok);
  std::string filters;
  for (int i = 0; i < 20000; ++i) filters += "|trim";
  o = run("{{ x" + filters + " }}");
  ASSERT_FALSE(o.ok);
  EXPECT_NE(o.error.message.find("nested deeper"), std::string::npos) << o.error.message;
  std::string attrs;
  for (int i = 0; i < 20000; ++i) attrs += ".a";
  o = run("{{ x" + attrs + " }}");
  ASSERT_FALSE(o.ok);
  std::string sum = "1";
  for (int i = 0; i < 20000; ++i) sum += "+1";
  run_failing("{{ " + sum + " }}", ErrorKind::kSyntax);
}

TEST(JinjaLimits, DeepRuntimeStructuresDieQuietly) {
  // Chains of namespaces (100000 then 50000 long), dropped mid-render and at
  // the end: destruction must not recurse.
  RenderOptions options;
  Outcome o = run(
      "{% set h = namespace(c=none) %}{% for i in range(100000) %}{% set h.c = namespace(p=h.c) %}"
      "{% endfor %}{% set h.c = none %}{% for i in range(50000) %}{% set h.c = namespace(p=h.c) %}"
      "{% endfor %}done",
      options);
  ASSERT_TRUE(o.ok) << o.error.to_string();
  EXPECT_EQ(o.output, "done");
  // Nested lists built in a loop.
  o =
      run("{% set h = namespace(l=[]) %}{% for i in range(100000) %}{% set h.l = [h.l] %}{% endfor "
          "%}ok");
  ASSERT_TRUE(o.ok) << o.error.to_string();
}

TEST(JinjaLimits, DeepEvaluationThroughMacros) {
  // Each macro level nests a deep expression: the evaluation depth guard
  // stops it before the C++ stack runs out.
  std::string expr = "n";
  for (int i = 0; i < 60; ++i) expr = "(" + expr + " + 0)";
  RenderOptions options;
  options.max_call_depth = 1000;
  run_failing("{% macro f(n) %}{{ f(" + expr + " + 1) }}{% endmacro %}{{ f(0) }}",
              ErrorKind::kRecursion, options);
}

TEST(JinjaLimits, InfiniteMacroRecursion) {
  Outcome o =
      run_failing("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ErrorKind::kRecursion);
  EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted);
  EXPECT_GT(o.error.line, 0);
}

TEST(JinjaLimits, MutualRecursionThroughCaller) {
  run_failing(
      "{% macro a() %}{% call b() %}x{% endcall %}{% endmacro %}"
      "{% macro b() %}{{ caller() }}{{ a() }}{% endmacro %}{{ a() }}",
      ErrorKind::kRecursion);
}

// How soon a limit must stop a render that would otherwise run for hours.
// Sanitized or unoptimised builds (scripts/test.sh's -O0 ASan/UBSan run)
// interpret about ten times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__)
constexpr auto kLimitStopsWithin = std::chrono::seconds(20);
#else
constexpr auto kLimitStopsWithin = std::chrono::seconds(2);
#endif

TEST(JinjaLimits, EnormousOutput) {
  RenderOptions options;
  options.max_output_bytes = 1 << 20;
  auto start = std::chrono::steady_clock::now();
  Outcome o = run_failing(
      "{% for i in range(100000) %}{% for j in range(100000) %}0123456789{% endfor %}{% endfor %}",
      ErrorKind::kLimit, options);
  EXPECT_EQ(o.status.code(), StatusCode::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kLimitStopsWithin);
}

TEST(JinjaLimits, OutputCountsCapturedText) {
  RenderOptions options;
  options.max_output_bytes = 1 << 16;
  run_failing(
      "{% macro m() %}{% for i in range(100000) %}xxxxxxxx{% endfor %}{% endmacro %}{% set y = "
      "m() %}",
      ErrorKind::kLimit, options);
}

TEST(JinjaLimits, LoopsWithoutOutputHitTheStepBudget) {
  RenderOptions options;
  options.max_steps = 200000;
  auto start = std::chrono::steady_clock::now();
  run_failing("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
              ErrorKind::kLimit, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kLimitStopsWithin);
}

TEST(JinjaLimits, ExponentialStrings) {
  RenderOptions small;
  small.max_value_bytes = 1 << 20;
  run_failing(
      "{% set ns = namespace(s='xy') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% "
      "endfor %}",
      ErrorKind::kLimit, small);
  run_failing(
      "{% set ns = namespace(s='xy') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% "
      "endfor %}",
      ErrorKind::kLimit, small);
  run_failing("{{ 'x' * 1000000000000 }}", ErrorKind::kLimit);
  EXPECT_FALSE(run("{{ '{:>999999999}'.format(1) }}").ok);
}

TEST(JinjaLimits, ExponentialLists) {
  RenderOptions small;
  small.max_list_items = 1 << 16;
  run_failing(
      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% "
      "endfor %}",
      ErrorKind::kLimit, small);
  run_failing("{{ [1, 2] * 1000000000000 }}", ErrorKind::kLimit);
}

TEST(JinjaLimits, IntegerOverflowIsAnError) {
  run_failing("{{ 2 ** 64 }}", ErrorKind::kOverflow);
  EXPECT_FALSE(run("{{ 9223372036854775807 + 1 }}").ok);
  run_failing("{{ 99999999999999999999 }}", ErrorKind::kSyntax);
}

TEST(JinjaLimits, SelfReferencingNamespacePrints) {
  Outcome o = run("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  ASSERT_TRUE(o.ok) << o.error.to_string();
  EXPECT_EQ(o.output.rfind("<Namespace {'me': <Namespace {'me': ", 0), 0u);
  run_failing("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|tojson }}", ErrorKind::kType);
}

TEST(JinjaLimits, DeepJsonInput) {
  Json deep = Json::array();
  Json* cur = &deep;
  for (int i = 0; i < 500; ++i) {
    cur->push_back(Json::array());
    cur = &(*cur)[0];
  }
  run_failing("{{ x|length }}", ErrorKind::kValue, {}, Json{{"x", deep}});
}

TEST(JinjaLimits, NonObjectVariables) {
  Result<Template> t = Template::parse("x");
  ASSERT_TRUE(t.ok());
  Error error;
  EXPECT_FALSE(t->render(Json::array(), {}, &error).ok());
  EXPECT_EQ(error.kind, ErrorKind::kType);
  EXPECT_TRUE(t->render(nullptr).ok());
}

TEST(JinjaTemplate, ParseOnceRenderMany) {
  Result<Template> t =
      Template::parse("{% for m in messages %}{{ m.role }}:{{ m.content }}\n{% endfor %}");
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 3; ++i) {
    Json vars = {
        {"messages", Json::array({Json{{"role", "user"}, {"content", std::to_string(i)}}})}};
    Result<std::string> out = t->render(vars);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "user:" + std::to_string(i) + "\n");
  }
}

TEST(JinjaTemplate, StrftimeNowUsesTheClockByDefault) {
  Result<Template> t = Template::parse("{{ strftime_now('%Y') }}");
  ASSERT_TRUE(t.ok());
  Result<std::string> out = t->render(nullptr);
  ASSERT_TRUE(out.ok());
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  EXPECT_EQ(*out, std::to_string(tm.tm_year + 1900));
}

TEST(JinjaTemplate, ParseOptionsKeepWhitespace) {
  ParseOptions raw;
  raw.trim_blocks = false;
  raw.lstrip_blocks = false;
  raw.keep_trailing_newline = true;
  Result<Template> t = Template::parse("  {% if true %}\nx\n  {% endif %}\n", raw);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->render(nullptr), "  \nx\n  \n");
}

}  // namespace
}  // namespace folio::jinja
