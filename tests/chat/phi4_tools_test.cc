// Phi-4-mini's tools: the conversation rewritten for its template equals the
// Python reference's (scripts/gen_template_cases.py), the template renders
// it as jinja2 does, and the call the rewrite writes into an assistant turn
// parses back into the same call.
#include "chat/phi4_tools.h"

#include <gtest/gtest.h>

#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "template_corpus.h"
#include "tokenizer/test_util.h"

namespace folio::chat {
namespace phi4_tools_test {

using namespace testing;  // template_corpus.h
using tokenizer::testing::read_file;

const std::string kPhi4 = "microsoft-Phi-4-mini-instruct";

TEST(Phi4Tools, RewriteAndRenderingEqualThePythonReference) {
  const std::string source = read_file(kTemplates + "/" + kPhi4 + ".jinja");
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(detect_chat_format(source).tool_calls, ToolCallFormat::kPhi4Mini);
  Result<ChatTemplate> t = ChatTemplate::parse(source, corpus()["bos_token"], corpus()["eos_token"]);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const OrderedJson expected = OrderedJson::parse(read_file(kData + "/expected/" + kPhi4 + ".json"));
  int n = 0;
  for (const auto& c : corpus()["cases"]) {
    if (!c.contains("phi4")) continue;
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    const OrderedJson& src = corpus_case(c["phi4"]["source"].get<std::string>());
    ASSERT_FALSE(src.is_null());
    const Json got =
        phi4_tool_messages(Json::parse(src["messages"].dump()), Json::parse(c["phi4"]["tools"].dump()));
    EXPECT_EQ(got.dump(1), Json::parse(c["messages"].dump()).dump(1));
    // Rendered as the server renders it: the template gets no `tools`.
    ChatTemplateOptions o = options_of(c);
    o.tools = nullptr;
    Result<std::string> out = t->apply_json(OrderedJson::parse(got.dump()), o);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out, expected["results"][name]["output"].get<std::string>());
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST(Phi4Tools, TheRenderedCallParsesBack) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
  const Json messages = Json::parse(R"([{"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "21 C"}])");
  const Json m = phi4_tool_messages(messages, tools);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["tools"],
            R"([{"name": "get_weather", "parameters": {"type": "object", "properties": )"
            R"({"city": {"type": "string"}}}}])");
  EXPECT_EQ(m[3]["role"], "tool");
  std::string content;
  std::vector<ParsedToolCall> calls;
  ToolCallParser::parse_all(ToolCallFormat::kPhi4Mini, &tools, m[2]["content"].get<std::string>(),
                            &content, &calls);
  EXPECT_EQ(content, "");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city":"Paris"})");
  // Without tools the conversation is left as it is.
  EXPECT_EQ(phi4_tool_messages(messages, Json::array()), messages);
}

}  // namespace phi4_tools_test
}  // namespace folio::chat
