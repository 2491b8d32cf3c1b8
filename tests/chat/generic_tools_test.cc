// The generic tool format's prompt side: the conversation rewritten for a
// template that knows no tools, the reply schema, and every corpus template
// detected as generic rendering a tool round trip that way.
#include "chat/generic_tools.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "chat/chat_format.h"
#include "chat/chat_template.h"
#include "template_corpus.h"

namespace folio::chat {
namespace generic_tools_test {

using namespace testing;  // template_corpus.h

const Json kTools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "Weather in a city", "parameters": {"type": "object", "properties":
    {"city": {"type": "string"}}, "required": ["city"]}}}, {"type": "function", "function":
    {"name": "now"}}])");

const Json kConversation = Json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris and the time?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "get_weather",
       "arguments": "{\"city\": \"Paris\"}"}},
      {"id": "c2", "type": "function", "function": {"name": "now", "arguments": {}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "22 C"},
    {"role": "tool", "tool_call_id": "c2", "content": "14:05"},
    {"role": "assistant", "content": "22 C at 14:05."},
    {"role": "user", "content": "Thanks"}])");

TEST(GenericTools, MessagesDescribeTheToolsAndWriteCallsAsTheModelWould) {
  GenericToolOptions o;
  const Json m = generic_tool_messages(kConversation, kTools, o, /*system_in_user=*/false);
  ASSERT_EQ(m.size(), 6u) << m.dump(1);
  EXPECT_EQ(m[0]["role"], "system");
  const std::string sys = m[0]["content"];
  EXPECT_EQ(sys.rfind("Be brief.\n\nYou can call these tools:\n", 0), 0u) << sys;
  EXPECT_NE(sys.find(R"({"name": "get_weather", "description": "Weather in a city", )"
                     R"("parameters": {"type": "object")"),
            std::string::npos)
      << sys;
  EXPECT_NE(sys.find(R"({"name": "now", "parameters": {}})"), std::string::npos) << sys;
  EXPECT_NE(sys.find(R"({"response": "<your answer>"})"), std::string::npos) << sys;
  EXPECT_EQ(m[2]["role"], "assistant");
  EXPECT_FALSE(m[2].contains("tool_calls"));
  EXPECT_EQ(
      m[2]["content"],
      R"({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}, )"
      R"({"name": "now", "arguments": {}, "id": "c2"}]})");
  // Both results in one user message, each naming its tool by the call id.
  EXPECT_EQ(m[3]["role"], "user");
  EXPECT_EQ(m[3]["content"],
            R"({"tool_response": {"tool": "get_weather", "tool_call_id": "c1", "content": "22 C"}})"
            "\n\n"
            R"({"tool_response": {"tool": "now", "tool_call_id": "c2", "content": "14:05"}})");
  EXPECT_EQ(m[4]["content"], "22 C at 14:05.");
  // Without a system message one is added; in-user placement opens the
  // first user message; one call without parallel calls is "tool_call".
  o.parallel = false;
  o.allow_response = false;
  Json conv = kConversation;
  conv.erase(conv.begin());
  conv[1]["tool_calls"].erase(1);
  Json n = generic_tool_messages(conv, kTools, o, false);
  EXPECT_EQ(n[0]["role"], "system");
  EXPECT_EQ(
      n[2]["content"],
      R"({"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}})");
  EXPECT_EQ(std::string(n[0]["content"]).find("{\"response\""), std::string::npos);
  n = generic_tool_messages(conv, kTools, o, true);
  EXPECT_EQ(n[0]["role"], "user");
  EXPECT_EQ(std::string(n[0]["content"]).rfind("You can call these tools:", 0), 0u);
  EXPECT_NE(std::string(n[0]["content"]).find("\n\nWeather in Paris and the time?"),
            std::string::npos);
}

TEST(GenericTools, ReplySchema) {
  GenericToolOptions o;
  Result<Json> s = generic_reply_schema(kTools, o);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->contains("anyOf"));
  EXPECT_EQ((*s)["anyOf"][0]["properties"]["tool_calls"]["items"]["anyOf"].size(), 2u);
  EXPECT_EQ((*s)["anyOf"][1]["required"], Json::array({"response"}));
  o.allow_response = false;
  o.parallel = false;
  o.only_tool = "now";
  s = generic_reply_schema(kTools, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)["properties"]["tool_call"]["properties"]["name"]["const"], "now");
  EXPECT_EQ((*s)["properties"]["tool_call"]["properties"]["arguments"], Json({{"type", "object"}}));
  o.only_tool = "missing";
  EXPECT_FALSE(generic_reply_schema(kTools, o).ok());
}

// Every corpus template detected as generic renders the rewritten round
// trip (with the tools in a system message, or in the first user message
// where the template refuses a system role), showing the call and the
// results.
TEST(GenericTools, EveryGenericCorpusTemplateRendersTheRoundTrip) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kTemplates)) {
    const std::string src = tokenizer::testing::read_file(e.path().string());
    if (detect_chat_format(src).tool_calls != ToolCallFormat::kGeneric) continue;
    SCOPED_TRACE(e.path().filename().string());
    auto t = ChatTemplate::parse(src, "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ChatTemplateOptions o;
    o.now = fixed_now();
    GenericToolOptions g;
    Result<std::string> r =
        t->apply_json(generic_tool_messages(kConversation, kTools, g, false), o);
    if (!r.ok()) {
      Json conv = kConversation;
      conv.erase(conv.begin());  // a template without a system role
      r = t->apply_json(generic_tool_messages(conv, kTools, g, true), o);
    }
    // A template that fails on a plain question too (it needs variables of
    // its own, e.g. firefunction's `functions`) says nothing about tools.
    if (!r.ok() && !t->apply_json(Json::parse(R"([{"role": "user", "content": "Hi"}])"), o).ok()) {
      continue;
    }
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_NE(r->find("You can call these tools:"), std::string::npos) << *r;
    EXPECT_NE(r->find(R"({"tool_calls": [{"name": "get_weather")"), std::string::npos) << *r;
    EXPECT_NE(r->find(R"({"tool_response": {"tool": "now")"), std::string::npos) << *r;
    ++n;
  }
  EXPECT_GE(n, 10);
}

// The rewrite equals the Python reference's (scripts/gen_template_cases.py)
// for the corpus's generic cases, whose renderings by every corpus template
// the jinja tests compare with jinja2's.
TEST(GenericTools, RewriteEqualsThePythonReference) {
  int n = 0;
  for (const auto& c : corpus()["cases"]) {
    if (!c.contains("generic")) continue;
    SCOPED_TRACE(c["name"].get<std::string>());
    const OrderedJson& g = c["generic"];
    const OrderedJson& source = corpus_case(g["source"].get<std::string>());
    ASSERT_FALSE(source.is_null());
    GenericToolOptions o;
    o.allow_response = g["options"].value("allow_response", true);
    o.only_tool = g["options"].value("only_tool", "");
    o.parallel = g["options"].value("parallel", true);
    const Json got = generic_tool_messages(Json::parse(source["messages"].dump()),
                                           Json::parse(g["tools"].dump()), o,
                                           g["options"].value("system_in_user", false));
    EXPECT_EQ(got.dump(1), Json::parse(c["messages"].dump()).dump(1));
    ++n;
  }
  EXPECT_EQ(n, 6);
}

}  // namespace generic_tools_test
}  // namespace folio::chat
