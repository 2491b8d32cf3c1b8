// tool_choice "required" / a named function on the formats whose call
// starts at a marker after text the model may write first: the grammar is
// lazy, triggered by the marker; the call it accepts (from the trigger on)
// is read back by the format's own parser as the call, after free text.
#include "server/tool_call_grammar.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "chat/chat_parser.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "server/output_grammar.h"
#include "scripted_server.h"

namespace folio::server {
namespace tool_call_grammar_test {

using testing::HttpAnswer;
using testing::ScriptedService;

struct Case {
  const char* format;  // --chat-format name
  const char* call;    // the call as the model writes it, from its trigger on
  const char* tail;    // what ends the reply after the grammar (an end token's text)
};

// get_weather(city: string, required; days: integer) called with Paris.
const Case kCases[] = {
    {"mistral", R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}])", ""},
    {"mistral", R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"})", ""},
    {"glm", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
            "</tool_call>", ""},
    {"nemotron",
     R"(<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>)", ""},
    {"lfm2", R"(<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>)", ""},
    {"deepseek",
     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}"
     "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", ""},
    {"deepseek",
     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
     "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", ""},
    {"kimi",
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
     "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
     "<|tool_calls_section_end|>", ""},
    {"minimax",
     "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris"
     "</parameter>\n</invoke>\n</minimax:tool_call>", ""},
    {"command",
     R"(<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": )"
     R"({"city": "Paris"}}]<|END_ACTION|>)", ""},
    {"functionary", R"(<function=get_weather>{"city": "Paris"}</function>)", ""},
    {"granite", R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}])", ""},
    {"phi4_mini",
     R"(<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|/tool_call|>)", ""},
    {"gemma4", R"(<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>)", ""},
    {"deepseek_v3_2",
     "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter "
     "name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
     "</｜DSML｜function_calls>", ""},
    {"none+harmony",
     R"( to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"})", "<|call|>"},
    {"none+harmony",
     R"( to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"})",
     "<|call|>"},
};

// The text the model writes before its call (the trigger comes within the
// free text for Harmony, whose call header starts mid-message).
std::string before(std::string_view format) {
  if (format == "none+harmony") {
    return "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
           "<|channel|>commentary";
  }
  return "Let me check. ";
}

OpenAiRequest request(const char* tool_choice, bool parallel = true) {
  const Json body = Json::parse(fmt::format(R"({{"messages": [{{"role": "user", "content": "x"}}],
      "tool_choice": {}, "parallel_tool_calls": {}, "tools": [
      {{"type": "function", "function": {{"name": "get_weather", "parameters": {{"type": "object",
        "properties": {{"city": {{"type": "string"}}, "days": {{"type": "integer"}}}},
        "required": ["city"]}}}}}},
      {{"type": "function", "function": {{"name": "now", "parameters": {{"type": "object",
        "properties": {{}}}}}}}}]}})",
                                            tool_choice, parallel ? "true" : "false"));
  OpenAiRequest r;
  ApiError err;
  EXPECT_TRUE(parse_openai_request(body, ApiKind::kChat, &r, &err)) << err.message;
  return r;
}

struct Built {
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  grammar::GrammarTriggers triggers;
};

Built build(const OpenAiRequest& r, const chat::ChatFormat& f) {
  Built b;
  ApiError err;
  EXPECT_TRUE(output_grammar(r, f.tool_calls, &b.grammar, &err, f.reasoning, false, &b.triggers))
      << err.message;
  return b;
}

bool accepts(const Built& b, std::string_view text) {
  if (!b.grammar) return false;
  grammar::GrammarMatcher m(b.grammar);
  return m.accept_bytes(text) && m.is_accepting();
}

TEST(LazyToolCallGrammar, EveryFormatsCallIsAcceptedAndParsedBack) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.format) + ": " + c.call);
    Result<chat::ChatFormat> f = chat::parse_chat_format(c.format);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    const OpenAiRequest r = request(R"("required")");
    const Built b = build(r, *f);
    ASSERT_NE(b.grammar, nullptr);
    ASSERT_EQ(b.triggers.words.size(), 1u);
    EXPECT_FALSE(b.triggers.end_before_trigger);
    // The grammar starts at its trigger.
    EXPECT_TRUE(std::string_view(c.call).starts_with(b.triggers.words[0]));
    EXPECT_TRUE(accepts(b, c.call));
    // The format's parser reads text, then the call.
    const std::string reply = before(c.format) + c.call + c.tail;
    const chat::ChatDelta d = chat::ChatParser::parse_all(*f, chat::ReasoningFormat::kAuto, false,
                                                          true, &r.tools, reply);
    ASSERT_EQ(d.calls.size(), 1u) << d.content;
    EXPECT_EQ(d.calls[0].name, "get_weather");
    EXPECT_EQ(Json::parse(d.calls[0].arguments), Json::parse(R"({"city": "Paris"})"));
  }
}

TEST(LazyToolCallGrammar, TheSchemaAndTheChoiceHold) {
  for (const char* name : {"mistral", "nemotron", "kimi", "functionary", "none+harmony"}) {
    SCOPED_TRACE(name);
    Result<chat::ChatFormat> f = chat::parse_chat_format(name);
    ASSERT_TRUE(f.ok());
    const Case* c = nullptr;
    for (const Case& k : kCases) {
      if (std::string_view(k.format) == name) c = c ? c : &k;
    }
    ASSERT_NE(c, nullptr);
    const std::string call = c->call;
    const size_t at = call.find("\"Paris\"");
    ASSERT_NE(at, std::string::npos);
    Built b = build(request(R"("required")"), *f);
    // The city must be a string; another tool may be called instead.
    EXPECT_FALSE(accepts(b, call.substr(0, at) + "3" + call.substr(at + 7)));
    std::string now = call;
    now.replace(now.find("get_weather"), 11, "now");
    now.replace(now.find("{\"city\": \"Paris\"}"), 17, "{}");
    EXPECT_TRUE(accepts(b, now));
    // A named function: only that one.
    b = build(request(R"({"type": "function", "function": {"name": "get_weather"}})"), *f);
    EXPECT_TRUE(accepts(b, call));
    EXPECT_FALSE(accepts(b, now));
  }
}

TEST(LazyToolCallGrammar, ParallelCallsOnlyWhenAllowed) {
  Result<chat::ChatFormat> f = chat::parse_chat_format("nemotron");
  ASSERT_TRUE(f.ok());
  const std::string two = R"(<TOOLCALL>[{"name": "now", "arguments": {}}, )"
                          R"({"name": "now", "arguments": {}}]</TOOLCALL>)";
  EXPECT_TRUE(accepts(build(request(R"("required")"), *f), two));
  EXPECT_FALSE(accepts(build(request(R"("required")", false), *f), two));
  f = chat::parse_chat_format("lfm2");
  ASSERT_TRUE(f.ok());
  // Keyword arguments: optional ones anywhere, commas only between.
  const Built b = build(request(R"("required")"), *f);
  EXPECT_TRUE(accepts(b, R"(<|tool_call_start|>[get_weather(city="a", days=2)]<|tool_call_end|>)"));
  EXPECT_FALSE(accepts(b, R"(<|tool_call_start|>[get_weather(days=2)]<|tool_call_end|>)"));
  EXPECT_FALSE(accepts(b, R"(<|tool_call_start|>[get_weather(, city="a")]<|tool_call_end|>)"));
  EXPECT_TRUE(accepts(b, R"(<|tool_call_start|>[now(), now()]<|tool_call_end|>)"));
}

TEST(LazyToolCallGrammar, FunctionaryV32HoldsFromTheStart) {
  Result<chat::ChatFormat> f = chat::parse_chat_format("functionary_v3_2");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const OpenAiRequest r = request(R"("required")");
  const Built b = build(r, *f);
  EXPECT_TRUE(b.triggers.empty());  // the reply opens with its recipient
  const std::string call = "get_weather\n{\"city\": \"Paris\"}";
  for (const std::string& reply : {call, "all\nLet me check.>>>" + call}) {
    EXPECT_TRUE(accepts(b, reply)) << reply;
    const chat::ChatDelta d = chat::ChatParser::parse_all(*f, chat::ReasoningFormat::kAuto, false,
                                                          true, &r.tools, reply);
    ASSERT_EQ(d.calls.size(), 1u) << reply;
    EXPECT_EQ(d.calls[0].name, "get_weather");
  }
  EXPECT_FALSE(accepts(b, "Let me check."));
  EXPECT_FALSE(accepts(b, "all\nLet me check."));
  EXPECT_FALSE(accepts(b, "all\na>>>b>>>" + call));
  EXPECT_TRUE(accepts(b, call + ">>>now\n{}"));
  EXPECT_FALSE(accepts(build(request(R"("required")", false), *f), call + ">>>now\n{}"));
}

TEST(LazyToolCallGrammar, Gemma4KeepsTypesAndRequiredKeys) {
  Result<chat::ChatFormat> f = chat::parse_chat_format("gemma4");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const Built b = build(request(R"("required")"), *f);
  EXPECT_TRUE(accepts(b, R"(<|tool_call>call:get_weather{city:<|"|>a<b<|"|>,days:3}<tool_call|>)"));
  EXPECT_TRUE(accepts(b, R"(<|tool_call>call:now{}<tool_call|><|tool_call>call:now{}<tool_call|>)"));
  EXPECT_FALSE(accepts(b, R"(<|tool_call>call:get_weather{days:3}<tool_call|>)"));
  EXPECT_FALSE(accepts(b, R"(<|tool_call>call:get_weather{city:3}<tool_call|>)"));
  EXPECT_FALSE(accepts(b, R"(<|tool_call>call:get_weather{city:<|"|>a<|"|>,days:1.5}<tool_call|>)"));
  // Keys in the template's (sorted) order.
  EXPECT_FALSE(accepts(b, R"(<|tool_call>call:get_weather{days:3,city:<|"|>a<|"|>}<tool_call|>)"));
  // A strict tool's schema cannot be kept in this notation.
  OpenAiRequest r = request(R"("required")");
  r.tools[0]["function"]["strict"] = true;
  std::shared_ptr<const grammar::CompiledGrammar> g;
  grammar::GrammarTriggers t;
  ApiError err;
  EXPECT_FALSE(output_grammar(r, f->tool_calls, &g, &err, f->reasoning, false, &t));
  EXPECT_EQ(err.param, "tools");
}

TEST(LazyToolCallGrammar, WithoutTriggersItIsA400) {
  Result<chat::ChatFormat> f = chat::parse_chat_format("mistral");
  ASSERT_TRUE(f.ok());
  std::shared_ptr<const grammar::CompiledGrammar> g;
  ApiError err;
  EXPECT_FALSE(output_grammar(request(R"("required")"), f->tool_calls, &g, &err, f->reasoning));
  EXPECT_EQ(err.param, "tool_choice");
}


// Through the server: a required call on each lazy format is accepted (no
// 400), submitted with its grammar, trigger and control tokens rendered,
// and the model's reply (text, then the call) comes back as the call.
class LazyToolChoiceServerTest : public testing::ScriptedServerTest {};

TEST_F(LazyToolChoiceServerTest, RequiredWorksOnEveryLazyFormat) {
  size_t k = 0;
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.format) + ": " + c.call);
    Result<chat::ChatFormat> f = chat::parse_chat_format(c.format);
    ASSERT_TRUE(f.ok());
    if (server_) server_->stop();
    start();
    ServedModel m;
    m.id = "tiny";
    m.n_ctx = 2048;
    m.n_vocab = tok_->vocab().size();
    m.tokenizer = tok_.get();
    m.chat_template = tmpl_.get();
    m.chat_format = *f;
    m.service = &service_;
    server_->set_model(m);
    const std::string body = R"({"messages": [{"role": "user", "content": "weather?"}],
        "tool_choice": "required", "tools": [{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}}]})";
    HttpAnswer a;
    std::thread client([&] { a = testing::post(port_, "/v1/chat/completions", body); });
    ScriptedService::Submitted s;
    if (!service_.wait_submitted(k++, &s)) {
      client.join();
      FAIL() << "not submitted: " << a.status << " " << a.body;
    }
    ASSERT_NE(s.request.grammar, nullptr);
    ASSERT_EQ(s.request.grammar_triggers.words.size(), 1u);
    EXPECT_FALSE(s.request.grammar_triggers.end_before_trigger);
    EXPECT_TRUE(s.request.render_special || std::string_view(c.format) == "functionary");
    // The call's text from the trigger on is what the grammar holds to.
    const std::string reply = before(c.format) + c.call;
    const size_t at = reply.find(s.request.grammar_triggers.words[0]);
    ASSERT_NE(at, std::string::npos);
    grammar::GrammarMatcher matcher(s.request.grammar);
    EXPECT_TRUE(matcher.accept_bytes(std::string_view(reply).substr(at)));
    EXPECT_TRUE(matcher.is_accepting());
    // The model's reply in a few pieces, then its end.
    const std::string text = reply + c.tail;
    for (size_t i = 0; i < text.size(); i += 7) {
      s.callbacks.on_token(testing::token_event(0, 5, text.substr(i, 7)));
    }
    RequestResult done;
    done.choices.resize(1);
    done.choices[0].stop = StopReason::kEndOfGeneration;
    s.callbacks.on_done(done);
    client.join();
    ASSERT_EQ(a.status, 200) << a.body;
    const Json choice = testing::json_of(a)["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << a.body;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << a.body;
    EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(Json::parse(choice["message"]["tool_calls"][0]["function"]["arguments"]
                              .get<std::string>()),
              Json::parse(R"({"city": "Paris"})"));
  }
}

}  // namespace tool_call_grammar_test
}  // namespace folio::server
