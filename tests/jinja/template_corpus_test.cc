// The chat-template corpus: every template in refdata/templates rendered on
// every conversation of tests/jinja/data/conversations.json must give exactly
// what Python's jinja2 (configured as Hugging Face does) gave, recorded by
// scripts/gen_template_cases.py: the same bytes, or the same exception class
// and message (raise_exception texts included).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "jinja/template.h"
#include "test_util.h"

namespace folio::jinja {
namespace template_corpus_test {

using testing::data_dir;
using testing::read_file;
using testing::templates_dir;
using Json = nlohmann::ordered_json;

std::string fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

const Json& conversations() {
  static const Json j = Json::parse(read_file(data_dir() + "/conversations.json"));
  return j;
}

// The fixed date of the corpus (gen_template_cases.py FIXED_NOW).
std::tm fixed_now() {
  std::tm tm{};
  std::string s = conversations()["now"].get<std::string>();  // YYYY-MM-DDTHH:MM:SS
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  tm.tm_hour = std::stoi(s.substr(11, 2));
  tm.tm_min = std::stoi(s.substr(14, 2));
  tm.tm_sec = std::stoi(s.substr(17, 2));
  std::tm copy = tm;
  timegm(&copy);  // fills tm_wday / tm_yday
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return tm;
}

Json case_variables(const Json& c) {
  const Json& conv = conversations();
  Json vars = Json::object();
  vars["messages"] = c["messages"];
  vars["tools"] = c["tools"];
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = c["add_generation_prompt"];
  vars["bos_token"] = conv["bos_token"];
  vars["eos_token"] = conv["eos_token"];
  for (const auto& [k, v] : c["kwargs"].items()) vars[k] = v;
  return vars;
}

std::string describe_mismatch(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  return fmt::format("first difference at byte {}\n  want: {}\n  got:  {}", i,
                     Json(want.substr(from, 160)).dump(), Json(got.substr(from, 160)).dump());
}

std::vector<std::string> expected_files() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(data_dir() + "/expected")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Tally {
  int passed = 0, total = 0;
};
Tally& tally() {
  static Tally t;
  return t;
}

class TemplateCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(TemplateCorpus, MatchesJinja2) {
  const std::string name = GetParam();
  Json expected = Json::parse(read_file(data_dir() + "/expected/" + name + ".json"));
  std::string source = read_file(templates_dir() + "/" + name + ".jinja");
  ASSERT_FALSE(source.empty()) << "missing template " << name;
  ASSERT_EQ(fnv1a64(source), expected["fnv1a64"].get<std::string>())
      << name << " changed since the expectations were recorded: run scripts/gen_template_cases.py";

  Error parse_error;
  Result<Template> t = Template::parse(source, {}, &parse_error);
  ASSERT_TRUE(t.ok()) << name << ": " << t.status().to_string();

  RenderOptions options;
  options.now = fixed_now();
  for (const Json& c : conversations()["cases"]) {
    std::string key = c["name"].get<std::string>();
    const Json& want = expected["results"][key];
    Error error;
    Result<std::string> out = t->render(case_variables(c), options, &error);
    ++tally().total;
    if (want.contains("output")) {
      std::string w = want["output"].get<std::string>();
      if (!out.ok()) {
        ADD_FAILURE() << name << " / " << key << ": expected output, got " << error.to_string();
        continue;
      }
      if (*out != w) {
        ADD_FAILURE() << name << " / " << key << ": " << describe_mismatch(w, *out);
        continue;
      }
    } else {
      std::string type = want["error"]["type"].get<std::string>();
      std::string message = want["error"]["message"].get<std::string>();
      if (out.ok()) {
        ADD_FAILURE() << name << " / " << key << ": expected " << type << ": " << message
                      << ", got output";
        continue;
      }
      if (type != error_kind_name(error.kind) || message != error.message) {
        ADD_FAILURE() << name << " / " << key << ": expected " << type << ": " << message
                      << "\n  got " << error_kind_name(error.kind) << ": " << error.message;
        continue;
      }
    }
    ++tally().passed;
  }
}

INSTANTIATE_TEST_SUITE_P(Refdata, TemplateCorpus, ::testing::ValuesIn(expected_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// Every refdata template has recorded expectations (so a new one is not
// silently skipped) and the run tally is printed.
TEST(TemplateCorpusSummary, AllTemplatesCovered) {
  std::vector<std::string> have = expected_files();
  for (const auto& e : std::filesystem::directory_iterator(templates_dir())) {
    if (e.path().extension() != ".jinja") continue;
    EXPECT_TRUE(std::binary_search(have.begin(), have.end(), e.path().stem().string()))
        << e.path().filename() << " has no expectations: run scripts/gen_template_cases.py";
  }
}

class TallyPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    if (tally().total)
      std::printf("[ corpus   ] %d / %d template renders match jinja2\n", tally().passed,
                  tally().total);
  }
};
const auto* const kTallyPrinter = ::testing::AddGlobalTestEnvironment(new TallyPrinter);

}  // namespace
}  // namespace folio::jinja
