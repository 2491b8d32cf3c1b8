// What the chat tests read: the conversations rendered by Python's jinja2
// (tests/jinja/data/conversations.json: each case's messages, options and
// rendering per template) and the template corpus (tests/data/templates),
// and the fixed "now" the renderings were made with.
#pragma once

#include <ctime>
#include <string>

#include "chat/chat_template.h"
#include "tokenizer/test_util.h"

namespace folio::chat::testing {

inline const std::string kData = std::string(FOLIO_SOURCE_DIR) + "/tests/jinja/data";
inline const std::string kTemplates = std::string(FOLIO_REFDATA_DIR) + "/templates";

inline const OrderedJson& corpus() {
  static const OrderedJson j =
      OrderedJson::parse(tokenizer::testing::read_file(kData + "/conversations.json"));
  return j;
}

// The corpus case of that name (a null value if there is none).
inline const OrderedJson& corpus_case(const std::string& name) {
  for (const auto& c : corpus()["cases"]) {
    if (c["name"] == name) return c;
  }
  static const OrderedJson none;
  return none;
}

// 2024-07-26 14:05:09, a Friday: the time the reference renderings used.
inline std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 124, tm.tm_mon = 6, tm.tm_mday = 26, tm.tm_hour = 14, tm.tm_min = 5, tm.tm_sec = 9;
  tm.tm_wday = 5, tm.tm_yday = 207;
  return tm;
}

// A corpus case's rendering options (generation prompt, tools, kwargs, the
// fixed "now").
inline ChatTemplateOptions options_of(const OrderedJson& c) {
  ChatTemplateOptions options;
  options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  options.tools = c["tools"];
  options.kwargs = c["kwargs"];
  options.now = fixed_now();
  return options;
}

}  // namespace folio::chat::testing
