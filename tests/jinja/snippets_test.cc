// Feature snippets: small templates, one language feature each (whitespace
// control, literals, operators, scoping, macros, filters, tests, methods,
// error messages), rendered by Python's jinja2 in scripts/gen_template_cases.py
// (tests/jinja/data/snippets.json). folio must give the same bytes, or the
// same exception class and message (and line, for syntax errors).
#include <gtest/gtest.h>

#include "jinja/template.h"
#include "test_util.h"

namespace folio::jinja {
namespace snippets_test {

using Json = nlohmann::ordered_json;

const Json& snippets() {
  static const Json j = Json::parse(testing::read_file(testing::data_dir() + "/snippets.json"));
  return j;
}

std::vector<std::string> snippet_names() {
  std::vector<std::string> names;
  for (const auto& s : snippets()["snippets"]) names.push_back(s["name"].get<std::string>());
  return names;
}

const Json& find_snippet(const std::string& name) {
  for (const auto& s : snippets()["snippets"]) {
    if (s["name"] == name) return s;
  }
  static const Json none;
  return none;
}

class Snippet : public ::testing::TestWithParam<std::string> {};

TEST_P(Snippet, MatchesJinja2) {
  const Json& s = find_snippet(GetParam());
  ASSERT_TRUE(s.is_object());
  std::string source = s["template"].get<std::string>();
  const Json& want = s["expected"];
  RenderOptions options;
  std::tm tm{};
  tm.tm_year = 124, tm.tm_mon = 6, tm.tm_mday = 26, tm.tm_hour = 14, tm.tm_min = 5, tm.tm_sec = 9;
  tm.tm_wday = 5, tm.tm_yday = 207;  // 2024-07-26 (snippets.json "now")
  ASSERT_EQ(snippets()["now"].get<std::string>(), "2024-07-26T14:05:09");
  options.now = tm;

  Error error;
  Result<std::string> out = Status(StatusCode::kInternal, "not run");
  Result<Template> t = Template::parse(source, {}, &error);
  if (t.ok()) out = t->render(s["vars"], options, &error);
  SCOPED_TRACE("template: " + source);
  if (want.contains("output")) {
    ASSERT_TRUE(out.ok()) << error.to_string();
    EXPECT_EQ(*out, want["output"].get<std::string>());
  } else {
    ASSERT_FALSE(out.ok()) << "rendered: " << *out;
    EXPECT_EQ(error_kind_name(error.kind), want["error"]["type"].get<std::string>());
    EXPECT_EQ(error.message, want["error"]["message"].get<std::string>());
    if (want["error"].contains("line")) {
      EXPECT_EQ(error.line, want["error"]["line"].get<int>());
      EXPECT_GT(error.column, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jinja2, Snippet, ::testing::ValuesIn(snippet_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace folio::jinja
