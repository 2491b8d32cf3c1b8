// The grammars behind response_format, grammar and tool_choice: what they
// accept, and the 400s naming the field at fault.
#include "server/output_grammar.h"

#include <gtest/gtest.h>

#include "grammar/grammar_matcher.h"
#include "chat/tool_calls.h"

namespace folio::server {
namespace output_grammar_test {

bool accepts(const std::shared_ptr<const grammar::CompiledGrammar>& g, std::string_view text) {
  grammar::GrammarMatcher m(g);
  return m.accept_bytes(text) && m.is_accepting();
}

OpenAiRequest chat_request(const char* body) {
  OpenAiRequest r;
  ApiError err;
  EXPECT_TRUE(parse_openai_request(Json::parse(body), ApiKind::kChat, &r, &err)) << err.message;
  return r;
}

TEST(OutputGrammar, RenameTouchesOnlyTheRule) {
  EXPECT_EQ(rename_gbnf_rule("root ::= \"root\" [root] item # root\nitem ::= root-x | root\n",
                             "root", "doc"),
            "doc ::= \"root\" [root] item # root\nitem ::= root-x | doc\n");
  EXPECT_EQ(rename_gbnf_rule(R"(root ::= "a\"root" root)", "root", "r"), R"(r ::= "a\"root" r)");
  EXPECT_EQ(rename_gbnf_rule("root ::= x{0,3} root{2}", "root", "r"), "r ::= x{0,3} r{2}");
}

TEST(OutputGrammar, ResponseFormats) {
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  OpenAiRequest r = chat_request(R"({"messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err));
  EXPECT_EQ(g, nullptr);

  r = chat_request(R"({"messages": [{"role": "user", "content": "x"}],
      "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, R"({"a": [1, true]})"));
  EXPECT_FALSE(accepts(g, "[1]"));

  r = chat_request(R"({"messages": [{"role": "user", "content": "x"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema":
      {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}})");
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, R"({"n": 12})"));
  EXPECT_FALSE(accepts(g, R"({"n": "12"})"));

  r = chat_request(R"({"messages": [{"role": "user", "content": "x"}],
      "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema":
      {"type": "object", "patternProperties": {"a": {}}}}}})");
  EXPECT_FALSE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err));
  EXPECT_EQ(err.param, "response_format");

  r = chat_request(R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= x"})");
  EXPECT_FALSE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err));
  EXPECT_EQ(err.param, "grammar");
  EXPECT_NE(err.message.find("line 1"), std::string::npos) << err.message;
}

TEST(OutputGrammar, ParsingRefusesConflicts) {
  OpenAiRequest r;
  ApiError err;
  EXPECT_FALSE(parse_openai_request(
      Json::parse(R"({"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}})"),
      ApiKind::kCompletion, &r, &err));
  EXPECT_FALSE(parse_openai_request(
      Json::parse(R"({"prompt": "x", "grammar": "root ::= \"a\"", "ignore_eos": true})"),
      ApiKind::kCompletion, &r, &err));
  EXPECT_EQ(err.param, "ignore_eos");
  EXPECT_FALSE(parse_openai_request(
      Json::parse(R"({"prompt": "x", "response_format": {"type": "yaml"}})"), ApiKind::kCompletion,
      &r, &err));
  EXPECT_EQ(err.param, "response_format");
}

TEST(OutputGrammar, ToolChoiceForcesACallInTheTemplatesFormat) {
  const char* body = R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"a": {"type": "integer"}}, "required": ["a"]}}},
      {"type": "function", "function": {"name": "g"}}], "tool_choice": "required"})";
  OpenAiRequest r = chat_request(body);
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kHermes, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 3}}\n</tool_call>"));
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>\n"
                         "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"h\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "Sure! <tool_call>"));

  r.tool_choice = {ToolChoiceMode::kNamed, "f"};
  r.parallel_tool_calls = false;
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kLlama3, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, R"({"name": "f", "parameters": {"a": 3}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "g", "parameters": {}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "f", "parameters": {"a": 3}}; {"name": "f", "parameters": {"a": 3}})"));

  // A format folio does not read calls in (lazy formats: tool_call_grammar_test).
  EXPECT_FALSE(output_grammar(r, chat::ToolCallFormat::kNone, &g, &err));
  EXPECT_EQ(err.param, "tool_choice");
}

TEST(OutputGrammar, ToolChoiceInQwenXml) {
  const char* body = R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type":
      "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer",
      "minimum": 1, "maximum": 50}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
      "required": ["query", "limit"]}}}, {"type": "function", "function": {"name": "now"}}],
      "tool_choice": {"type": "function", "function": {"name": "search"}}})";
  OpenAiRequest r = chat_request(body);
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kQwenXml, &g, &err)) << err.message;
  const std::string call =
      "<tool_call>\n<function=search>\n<parameter=query>\nfolio <b> engine\n</parameter>\n"
      "<parameter=limit>\n7\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n"
      "</function>\n</tool_call>";
  ASSERT_TRUE(accepts(g, call));
  // What the grammar lets through, the parser reads back, typed.
  std::string content;
  std::vector<chat::ParsedToolCall> calls;
  chat::ToolCallParser::parse_all(chat::ToolCallFormat::kQwenXml, &r.tools, call, &content, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"query":"folio <b> engine","limit":7,"tags":["a","b"]})");
  // Optional parameters may be left out; required ones may not; bounds hold.
  EXPECT_TRUE(accepts(g, "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
                         "<parameter=limit>\n50\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
                          "</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
                          "<parameter=limit>\n51\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=now>\n</function>\n</tool_call>"));
  // "required": any tool, and one that takes no parameters.
  r.tool_choice = {ToolChoiceMode::kRequired, ""};
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kQwenXml, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, "<tool_call>\n<function=now>\n</function>\n</tool_call>"));
}

// Seed-OSS: qwen_xml's calls inside <seed:tool_call>, the values without
// the newlines around them, as its template writes them.
TEST(OutputGrammar, ToolChoiceInSeed) {
  const char* body = R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "search", "parameters": {"type":
      "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
      "required": ["query"]}}}, {"type": "function", "function": {"name": "now"}}],
      "tool_choice": "required"})";
  OpenAiRequest r = chat_request(body);
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kSeed, &g, &err)) << err.message;
  const std::string call =
      "<seed:tool_call>\n<function=search>\n<parameter=query>folio</parameter>\n"
      "<parameter=limit>7</parameter>\n</function>\n</seed:tool_call>";
  ASSERT_TRUE(accepts(g, call));
  std::string content;
  std::vector<chat::ParsedToolCall> calls;
  chat::ToolCallParser::parse_all(chat::ToolCallFormat::kSeed, &r.tools, call, &content, &calls);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, R"({"query":"folio","limit":7})");
  EXPECT_TRUE(accepts(g, "<seed:tool_call>\n<function=now>\n</function>\n</seed:tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n<function=now>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<seed:tool_call>\n<function=search>\n</function>\n</seed:tool_call>"));
}

TEST(OutputGrammar, GenericFormatConstrainsEveryReplyOfARequestWithTools) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
      "required": ["a"]}}}, {"type": "function", "function": {"name": "g"}}])";
  const std::string msgs = R"({"messages": [{"role": "user", "content": "x"}], )";
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  // auto: a call or an answer.
  OpenAiRequest r = chat_request((msgs + tools + "}").c_str());
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err)) << err.message;
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(accepts(g, R"({"tool_calls": [{"name": "f", "arguments": {"a": 1}}]})"));
  EXPECT_TRUE(accepts(
      g,
      R"({"tool_calls": [{"name": "g", "arguments": {}}, {"name": "f", "arguments": {"a": 2}}]})"));
  EXPECT_TRUE(accepts(g, R"({"response": "Hello"})"));
  EXPECT_FALSE(accepts(g, R"({"tool_calls": [{"name": "h", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(g, R"({"tool_calls": [{"name": "f", "arguments": {}}]})"));
  EXPECT_FALSE(accepts(g, "Hello"));
  // Without tools nothing is constrained.
  r = chat_request((msgs + R"("tools": []})").c_str());
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err));
  EXPECT_EQ(g, nullptr);
  // required, one call: no answer, no list.
  r = chat_request(
      (msgs + tools + R"(, "tool_choice": "required", "parallel_tool_calls": false})").c_str());
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, R"({"tool_call": {"name": "g", "arguments": {}}})"));
  EXPECT_FALSE(accepts(g, R"({"response": "Hello"})"));
  EXPECT_FALSE(accepts(g, R"({"tool_calls": [{"name": "g", "arguments": {}}]})"));
  // A named function.
  r = chat_request(
      (msgs + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})")
          .c_str());
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err)) << err.message;
  EXPECT_TRUE(accepts(g, R"({"tool_calls": [{"name": "f", "arguments": {"a": 7}}]})"));
  EXPECT_FALSE(accepts(g, R"({"tool_calls": [{"name": "g", "arguments": {}}]})"));
}

TEST(OutputGrammar, StrictToolsMustBeEnforceable) {
  // A schema the grammar engine refuses: a strict tool is a 400, any other
  // tool's arguments become any object.
  const char* loose = R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type":
      "function", "function": {"name": "f", "parameters": {"type": "object", "properties":
      {"a": {"$ref": "#/nowhere"}}}}}], "tool_choice": "required"})";
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  OpenAiRequest r = chat_request(loose);
  for (auto f : {chat::ToolCallFormat::kGeneric, chat::ToolCallFormat::kHermes}) {
    ASSERT_TRUE(output_grammar(r, f, &g, &err)) << err.message;
  }
  EXPECT_TRUE(
      accepts(g, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"z\": [1]}}\n</tool_call>"));
  std::string strict = loose;
  strict.replace(strict.find("\"parameters\""), 0, "\"strict\": true, ");
  r = chat_request(strict.c_str());
  for (auto f : {chat::ToolCallFormat::kGeneric, chat::ToolCallFormat::kHermes}) {
    EXPECT_FALSE(output_grammar(r, f, &g, &err));
    EXPECT_EQ(err.param, "tools");
    EXPECT_NE(err.message.find("strict tool 'f'"), std::string::npos) << err.message;
  }
}

TEST(OutputGrammar, MalformedToolsAreRefused) {
  const std::string msgs = R"({"messages": [{"role": "user", "content": "x"}], "tools": )";
  for (const char* tools : {"[42]", R"([{"type": "retrieval", "function": {"name": "f"}}])",
                            R"([{"type": "function"}])", R"([{"function": {"name": ""}}])",
                            R"([{"function": {"name": "a b"}}])",
                            R"([{"function": {"name": "f"}}, {"function": {"name": "f"}}])",
                            R"([{"function": {"name": "f", "parameters": "object"}}])",
                            R"([{"function": {"name": "f", "description": 3}}])",
                            R"([{"function": {"name": "f", "strict": "yes"}}])"}) {
    OpenAiRequest r;
    ApiError err;
    EXPECT_FALSE(parse_openai_request(Json::parse(msgs + tools + "}"), ApiKind::kChat, &r, &err))
        << tools;
    EXPECT_EQ(err.param, "tools") << tools;
    EXPECT_EQ(err.http_status, 400) << tools;
  }
}

TEST(OutputGrammar, ThinkingModelsThinkBeforeTheForcedCall) {
  const char* body = R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type":
      "function", "function": {"name": "g"}}], "tool_choice": "required",
      "parallel_tool_calls": false})";
  OpenAiRequest r = chat_request(body);
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  const std::string call = "{\"tool_call\": {\"name\": \"g\", \"arguments\": {}}}";
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err,
                             chat::ReasoningSyntax::kThink, false))
      << err.message;
  EXPECT_TRUE(accepts(g, call));
  EXPECT_TRUE(accepts(g, "<think>a < b, </thin x </think>\n" + call));
  EXPECT_FALSE(accepts(g, "<think>a</think> b</think>" + call));
  EXPECT_FALSE(accepts(g, "Sure. " + call));
  // The prompt opened the block: the reply starts inside it.
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kGeneric, &g, &err,
                             chat::ReasoningSyntax::kThink, true));
  EXPECT_TRUE(accepts(g, "plan</think>\n\n" + call));
  EXPECT_TRUE(accepts(g, "</think>" + call));
  EXPECT_FALSE(accepts(g, call));
  // Tags with characters that need escaping in a class.
  ASSERT_TRUE(output_grammar(r, chat::ToolCallFormat::kHermes, &g, &err,
                             chat::ReasoningSyntax::kMistral, false))
      << err.message;
  EXPECT_TRUE(accepts(g,
                      "[THINK]x [/THIN] ^-\\[/THINK]<tool_call>\n{\"name\": \"g\", "
                      "\"arguments\": {}}\n</tool_call>"));
}

}  // namespace
}  // namespace folio::server
