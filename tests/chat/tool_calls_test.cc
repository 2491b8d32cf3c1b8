// Tool-call parsing: format detection on real templates, each format's
// parser (whole and fed piece by piece), and the round trip through the
// model's own template: an assistant turn with tool calls rendered by the
// template parses back into the same calls.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "chat/chat_parser.h"
#include "chat/chat_template.h"

namespace folio::chat {
namespace tool_calls_test {

const std::string kTemplates = std::string(FOLIO_REFDATA_DIR) + "/templates";

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Parsed {
  std::string content;
  std::vector<ParsedToolCall> calls;
  std::vector<ToolCallDelta> deltas;
};

Parsed parse_whole(ToolCallFormat f, std::string_view text, const Json* tools = nullptr) {
  Parsed p;
  ToolCallParser parser(f, tools);
  parser.feed(text, &p.content, &p.calls);
  parser.finish(&p.content, &p.calls);
  parser.take_deltas(&p.deltas);
  Parsed all;  // parse_all gives the same
  ToolCallParser::parse_all(f, tools, text, &all.content, &all.calls);
  EXPECT_EQ(all.content, p.content);
  EXPECT_EQ(all.calls.size(), p.calls.size());
  return p;
}

// Fed one byte at a time: what a stream of single-character tokens gives.
Parsed parse_bytes(ToolCallFormat f, std::string_view text, const Json* tools = nullptr) {
  Parsed p;
  ToolCallParser parser(f, tools);
  for (char c : text) {
    parser.feed(std::string_view(&c, 1), &p.content, &p.calls);
    parser.take_deltas(&p.deltas);
  }
  parser.finish(&p.content, &p.calls);
  parser.take_deltas(&p.deltas);
  return p;
}

// The deltas tell the calls: each call's first delta carries its id and
// name (and comes after the previous call's first), the pieces of its
// arguments concatenate to the call's arguments, valid JSON.
void expect_deltas_spell_calls(const Parsed& p) {
  std::vector<std::string> args(p.calls.size());
  size_t started = 0;
  for (const ToolCallDelta& d : p.deltas) {
    ASSERT_LT(d.index, p.calls.size());
    if (d.first) {
      EXPECT_EQ(d.index, started) << "calls start in order";
      ++started;
      EXPECT_EQ(d.name, p.calls[d.index].name);
      EXPECT_EQ(d.id, p.calls[d.index].id);
    } else {
      EXPECT_LT(d.index, started) << "a piece before its call's first delta";
    }
    args[d.index] += d.arguments;
  }
  EXPECT_EQ(started, p.calls.size());
  for (size_t i = 0; i < p.calls.size(); ++i) {
    EXPECT_EQ(args[i], p.calls[i].arguments) << "call " << i;
    const Json parsed = Json::parse(args[i], nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(parsed.is_object()) << args[i];
  }
}

std::string_view trim_for_test(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

void expect_same(const Parsed& a, const Parsed& b) {
  EXPECT_EQ(a.content, b.content);
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].name, b.calls[i].name);
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments);
    EXPECT_EQ(a.calls[i].id, b.calls[i].id);
  }
}

// Fed in two pieces split at byte `at`.
Parsed parse_split(ToolCallFormat f, std::string_view text, size_t at, const Json* tools) {
  Parsed p;
  ToolCallParser parser(f, tools);
  parser.feed(text.substr(0, at), &p.content, &p.calls);
  parser.take_deltas(&p.deltas);
  parser.feed(text.substr(at), &p.content, &p.calls);
  parser.take_deltas(&p.deltas);
  parser.finish(&p.content, &p.calls);
  parser.take_deltas(&p.deltas);
  return p;
}

// Whole, a byte at a time and split in two at every byte: all agree, and
// each one's deltas spell its calls.
Parsed parse(ToolCallFormat f, std::string_view text, const Json* tools = nullptr) {
  Parsed whole = parse_whole(f, text, tools);
  expect_deltas_spell_calls(whole);
  const Parsed bytes = parse_bytes(f, text, tools);
  expect_same(whole, bytes);
  expect_deltas_spell_calls(bytes);
  for (size_t at = 1; at < text.size(); ++at) {
    SCOPED_TRACE(at);
    const Parsed split = parse_split(f, text, at, tools);
    expect_same(whole, split);
    expect_deltas_spell_calls(split);
  }
  return whole;
}

TEST(ToolCalls, FormatsOfRealTemplates) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::kHermes},
      {"Qwen-Qwen3-0.6B", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::kHermes},
      {"Qwen3.5-4B", ToolCallFormat::kQwenXml},
      {"Qwen3-Coder", ToolCallFormat::kQwenXml},
      {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::kLlama3},
      {"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::kLlama3},
      {"meta-llama-Llama-3.3-70B-Instruct", ToolCallFormat::kLlama3},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::kMistral},
      {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::kMistral},
      {"unsloth-mistral-Devstral-Small-2507", ToolCallFormat::kMistral},
      {"google-gemma-2-2b-it", ToolCallFormat::kNone},
      {"GLM-4.6", ToolCallFormat::kGlm},
      {"GLM-4.7-Flash", ToolCallFormat::kGlm},
      {"NVIDIA-Nemotron-Nano-v2", ToolCallFormat::kNemotron},
      {"LFM2-8B-A1B", ToolCallFormat::kLfm2},
      {"LFM2.5-8B-A1B", ToolCallFormat::kLfm2},
      {"LFM2.5-Instruct", ToolCallFormat::kLfm2},
      {"deepseek-ai-DeepSeek-V3.1", ToolCallFormat::kDeepSeek},
      {"moonshotai-Kimi-K2", ToolCallFormat::kKimi},
      {"Kimi-K2-Instruct", ToolCallFormat::kKimi},
      {"Kimi-K2-Thinking", ToolCallFormat::kKimi},
      {"MiniMax-M2", ToolCallFormat::kMiniMax},
      {"ByteDance-Seed-OSS", ToolCallFormat::kSeed},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", ToolCallFormat::kCommand},
      {"meetkai-functionary-medium-v3.1", ToolCallFormat::kFunctionary},
      {"meetkai-functionary-medium-v3.2", ToolCallFormat::kFunctionaryV32},
      {"google-gemma-4-31B-it", ToolCallFormat::kGemma4},
      {"deepseek-ai-DeepSeek-V3.2", ToolCallFormat::kDeepSeekV32},
      {"google-gemma-4-31B-it-interleaved", ToolCallFormat::kGemma4},
      {"ibm-granite-granite-3.3-2B-Instruct", ToolCallFormat::kGranite},
      {"ibm-granite-granite-4.0", ToolCallFormat::kHermes},
      {"microsoft-Phi-4-mini-instruct", ToolCallFormat::kPhi4Mini},
      {"microsoft-Phi-3.5-mini-instruct", ToolCallFormat::kNone},
  };
  for (const auto& [name, format] : cases) {
    const std::string src = read_file(kTemplates + "/" + name + ".jinja");
    ASSERT_FALSE(src.empty()) << name;
    EXPECT_EQ(tool_call_format_name(detect_tool_call_format(src)), tool_call_format_name(format))
        << name;
  }
}

TEST(ToolCalls, Hermes) {
  const auto f = ToolCallFormat::kHermes;
  Parsed p = parse(f,
                   "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                   "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": "
                   "\"get_time\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(p.content, "Let me check.\n\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":2})");
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  // Arguments sent as a JSON string; no closing tag at the end of output.
  p = parse(f, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(p.content, "");
  // Not calls: text that only looks like the tag, bad JSON, no name.
  for (const char* text : {"a <tool_c and more", "x <tool_call>{\"name\": </tool_call> y",
                           "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"na"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
  // Content is released as soon as it cannot start a tag.
  ToolCallParser parser(f);
  std::string content;
  std::vector<ParsedToolCall> calls;
  parser.feed("Hello <tool", &content, &calls);
  EXPECT_EQ(content, "Hello ");
  parser.feed("box>", &content, &calls);
  EXPECT_EQ(content, "Hello <toolbox>");
}

// The concatenated argument pieces of call `index` among `deltas`.
std::string streamed_arguments(const std::vector<ToolCallDelta>& deltas, size_t index) {
  std::string out;
  for (const ToolCallDelta& d : deltas) {
    if (d.index == index) out += d.arguments;
  }
  return out;
}

TEST(ToolCalls, HermesStreamsArgumentsAsTheyAreDecoded) {
  ToolCallParser parser(ToolCallFormat::kHermes);
  Parsed p;
  auto feed_bytes = [&](std::string_view text) {
    for (char c : text) parser.feed(std::string_view(&c, 1), &p.content, &p.calls);
    parser.take_deltas(&p.deltas);
  };
  feed_bytes("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ");
  EXPECT_TRUE(p.deltas.empty());  // the arguments have not begun
  feed_bytes("{");
  ASSERT_FALSE(p.deltas.empty());
  EXPECT_TRUE(p.deltas[0].first);
  EXPECT_EQ(p.deltas[0].name, "get_weather");
  feed_bytes("\"city\": \"Par");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(streamed_arguments(p.deltas, 0), R"({"city":"Par)");
  EXPECT_GT(p.deltas.size(), 3u);  // piece by piece, not at the end
  // A character cut between tokens waits for its last byte.
  feed_bytes(" caf\xC3");
  EXPECT_EQ(streamed_arguments(p.deltas, 0), R"({"city":"Par caf)");
  feed_bytes("\xA9\"}}\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Par caf\xC3\xA9\"}");
  EXPECT_EQ(streamed_arguments(p.deltas, 0), p.calls[0].arguments);
  // Strings keep their spaces and escapes; nested values stream as written.
  Parsed q = parse(ToolCallFormat::kHermes,
                   "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a  b\\\"c\\n\", "
                   "\"l\": [1, {\"k\": null}]}}</tool_call>");
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].arguments, R"({"s":"a  b\"c\n","l":[1,{"k":null}]})");
}

TEST(ToolCalls, HermesCallCutShortEndsWithWhatWasStreamed) {
  // Once its name went out the call stays a call; the arguments are what
  // the model wrote before it stopped (the client saw the same pieces).
  Parsed p = parse_bytes(ToolCallFormat::kHermes,
                         "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(p.calls[0].arguments, R"({"a":[1,2)");
  EXPECT_EQ(streamed_arguments(p.deltas, 0), p.calls[0].arguments);
  EXPECT_EQ(p.content, "");
  // A head in another order is parsed whole at the end: one delta.
  p = parse_bytes(ToolCallFormat::kHermes,
                  "<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  ASSERT_EQ(p.deltas.size(), 1u);
  EXPECT_EQ(p.deltas[0].arguments, R"({"a":1})");
}

TEST(ToolCalls, QwenXmlUsesTheSchemaTypes) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"},
      "limit": {"type": "integer"}, "zip": {"type": "string"}, "opts": {"type": "object"}}}}}])");
  Parsed p = parse(ToolCallFormat::kQwenXml,
                   "Searching.\n<tool_call>\n<function=search>\n<parameter=query>\nfolio "
                   "engine\nwith two lines\n</parameter>\n<parameter=limit>\n5\n</parameter>\n"
                   "<parameter=zip>\n01234\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2]}\n"
                   "</parameter>\n</function>\n</tool_call>",
                   &tools);
  EXPECT_EQ(p.content, "Searching.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "search");
  EXPECT_EQ(p.calls[0].arguments,
            R"({"query":"folio engine\nwith two lines","limit":5,"zip":"01234","opts":{"a":[1,2]}})");
  // Cut off inside a value: the call was reported when its name was read,
  // so it stays a call with the value as written.
  p = parse(ToolCallFormat::kQwenXml, "<tool_call>\n<function=f>\n<parameter=x>\n1\n</tool_call>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"x":1})");
  // Not a call: no function tag, an empty name.
  for (const char* text : {"<tool_call>\n{\"name\": \"f\"}\n</tool_call>",
                           "<tool_call><function=>\n</function></tool_call>"}) {
    p = parse(ToolCallFormat::kQwenXml, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

// qwen_xml and glm stream a call's arguments as the values arrive: a
// string-typed value piece by piece, other values when they close.
TEST(ToolCalls, XmlFormatsStreamArgumentsAsTheValuesArrive) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"},
      "limit": {"type": "integer"}}}}}])");
  for (const bool glm : {false, true}) {
    SCOPED_TRACE(glm ? "glm" : "qwen_xml");
    const ToolCallFormat f = glm ? ToolCallFormat::kGlm : ToolCallFormat::kQwenXml;
    ToolCallParser parser(f, &tools);
    Parsed p;
    auto feed_bytes = [&](std::string_view text) {
      for (char c : text) parser.feed(std::string_view(&c, 1), &p.content, &p.calls);
      parser.take_deltas(&p.deltas);
    };
    feed_bytes(glm ? "Looking.<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>caf"
                   : "Looking.<tool_call>\n<function=search>\n<parameter=query>\ncaf");
    ASSERT_FALSE(p.deltas.empty());
    EXPECT_TRUE(p.deltas[0].first);
    EXPECT_EQ(p.deltas[0].name, "search");
    EXPECT_TRUE(p.calls.empty());
    EXPECT_EQ(streamed_arguments(p.deltas, 0), R"({"query":"caf)");
    // A character cut between tokens waits for its last byte; a newline
    // that may be the one the value loses waits for what follows.
    feed_bytes("\xC3");
    EXPECT_EQ(streamed_arguments(p.deltas, 0), R"({"query":"caf)");
    feed_bytes("\xA9 \"A\"\n");
    EXPECT_EQ(streamed_arguments(p.deltas, 0),
              glm ? "{\"query\":\"caf\xC3\xA9 \\\"A\\\"\\n" : "{\"query\":\"caf\xC3\xA9 \\\"A\\\"");
    feed_bytes(glm ? "x</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>1"
                   : "x\n</parameter>\n<parameter=limit>\n1");
    // The integer goes out when its value closes.
    EXPECT_EQ(streamed_arguments(p.deltas, 0), "{\"query\":\"caf\xC3\xA9 \\\"A\\\"\\nx\",\"limit\":");
    feed_bytes(glm ? "2</arg_value>\n</tool_call>Done." : "2\n</parameter>\n</function>\n</tool_call>Done.");
    parser.finish(&p.content, &p.calls);
    parser.take_deltas(&p.deltas);
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].name, "search");
    EXPECT_EQ(p.calls[0].arguments, "{\"query\":\"caf\xC3\xA9 \\\"A\\\"\\nx\",\"limit\":12}");
    EXPECT_EQ(streamed_arguments(p.deltas, 0), p.calls[0].arguments);
    EXPECT_GT(p.deltas.size(), 5u);  // piece by piece, not at the end
    EXPECT_EQ(p.content, "Looking.Done.");
  }
  // Split at every byte, the same calls, and the pieces spell them.
  Parsed q = parse(ToolCallFormat::kQwenXml,
                   "<tool_call>\n<function=search>\n<parameter=query>\n\na\n\n</parameter>\n"
                   "<parameter=limit>\n[1, 2]\n</parameter>\n</function>\n</tool_call>"
                   "<tool_call>\n<function=now>\n</function>\n</tool_call>",
                   &tools);
  ASSERT_EQ(q.calls.size(), 2u);
  EXPECT_EQ(q.calls[0].arguments, R"({"query":"\na\n","limit":[1,2]})");
  EXPECT_EQ(q.calls[1].arguments, "{}");
}

// Replies made of the XML formats' pieces in random order (a fixed seed):
// whole, byte by byte and split anywhere they agree, and every call's
// streamed pieces spell its arguments as a JSON object, whatever the model
// got wrong.
TEST(ToolCalls, XmlFormatsHoldOnScrambledReplies) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}}])");
  const std::vector<std::string> qwen = {"<tool_call>", "</tool_call>", "\n", "<function=f>",
                                         "</function>", "<parameter=s>", "<parameter=n>",
                                         "</parameter>", "x", "\"", "1", "\xC3\xA9", "<", " "};
  const std::vector<std::string> glm = {"<tool_call>", "</tool_call>", "\n", "f", "<arg_key>",
                                        "</arg_key>", "<arg_value>", "</arg_value>", "s", "n",
                                        "x", "\"", "1", "\xC3\xA9", "<", " "};
  uint64_t state = 12345;
  auto next = [&](size_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>((state >> 33) % n);
  };
  for (const bool is_glm : {false, true}) {
    const auto& pieces = is_glm ? glm : qwen;
    const ToolCallFormat f = is_glm ? ToolCallFormat::kGlm : ToolCallFormat::kQwenXml;
    for (int i = 0; i < 150; ++i) {
      std::string text = "<tool_call>";
      text += is_glm ? "f<arg_key>" : "\n<function=f>\n";
      const size_t n = 1 + next(12);
      for (size_t k = 0; k < n; ++k) text += pieces[next(pieces.size())];
      SCOPED_TRACE(text);
      parse(f, text, &tools);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(ToolCalls, Llama3) {
  const auto f = ToolCallFormat::kLlama3;
  Parsed p = parse(f, "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.content, "");
  p = parse(f, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
               "\"arguments\": {\"k\": true}}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].name, "b");
  EXPECT_EQ(p.calls[1].arguments, R"({"k":true})");
  for (const char* text : {"The answer is {\"name\": 1}", "{\"not\": \"a call\"}",
                           "{\"name\": \"f\", \"parameters\": {}} and then text", "<|python"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, Mistral) {
  const auto f = ToolCallFormat::kMistral;
  Parsed p = parse(f, "Sure.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": "
                      "\"abcDEF123\"}, {\"name\": \"g\", \"arguments\": {}}]");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].id, "abcDEF123");
  EXPECT_EQ(p.calls[1].name, "g");
  p = parse(f, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]now[CALL_ID]"
               "x1y2z3w4v[ARGS]{}");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(p.calls[1].id, "x1y2z3w4v");
  for (const char* text : {"[TOOL_CALLS]oops", "[TOOL_CALLS][{\"name\": 3}]", "[TOOL_CA"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, Glm) {
  const auto f = ToolCallFormat::kGlm;
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}, "zip": {"type": "string"}}}}}])");
  // GLM-4.6 puts newlines between the parts, GLM-4.7 none; a string value
  // stays a string even when it reads as JSON.
  Parsed p = parse(f,
                   "Checking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris"
                   "</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
                   "<tool_call>get_weather<arg_key>zip</arg_key><arg_value>75001</arg_value>"
                   "<arg_key>days</arg_key><arg_value>[1, 2]</arg_value></tool_call>",
                   &tools);
  EXPECT_EQ(p.content, "Checking.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(p.calls[1].arguments, R"({"zip":"75001","days":[1,2]})");
  // A call without arguments; a value that is not JSON stays text.
  p = parse(f,
            "<tool_call>now</tool_call><tool_call>f<arg_key>q</arg_key><arg_value>a < b"
            "</arg_value></tool_call>");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  EXPECT_EQ(p.calls[1].arguments, R"({"q":"a < b"})");
  // Not calls: no name, a name that cannot be one.
  for (const char* text : {"<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
                           "<tool_call>f g<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
  // Reported once the name was read, a call that goes wrong later (a key
  // without a value, an unclosed key) ends with the values read before.
  for (const char* text : {"<tool_call>f<arg_key>a</arg_key></tool_call>",
                           "<tool_call>f<arg_key>b</arg_key><arg_value>2</arg_value><arg_key>a"
                           "<arg_value>1</arg_value></tool_call>"}) {
    p = parse(f, text);
    ASSERT_EQ(p.calls.size(), 1u) << text;
    EXPECT_EQ(p.calls[0].name, "f");
    EXPECT_EQ(p.calls[0].arguments, std::string(text).find("<arg_key>b") != std::string::npos
                                        ? R"({"b":2})"
                                        : "{}");
    EXPECT_EQ(p.content, "");
  }
}

TEST(ToolCalls, Nemotron) {
  const auto f = ToolCallFormat::kNemotron;
  Parsed p = parse(f,
                   "Let me look.<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": "
                   "{\"city\": \"Oslo\"}}, {\"name\": \"now\", \"arguments\": {}}]</TOOLCALL>");
  EXPECT_EQ(p.content, "Let me look.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.calls[1].name, "now");
  // The end of generation before the closing tag still gives the calls.
  p = parse(f, "<TOOLCALL>[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]");
  ASSERT_EQ(p.calls.size(), 1u);
  for (const char* text :
       {"<TOOLCALL>[]</TOOLCALL>", "<TOOLCALL>{\"name\": \"f\"}</TOOLCALL>",
        "<TOOLCALL>[{\"name\": \"f\", \"arguments\": 3}]</TOOLCALL>", "<TOOLCA"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, Lfm2) {
  const auto f = ToolCallFormat::kLfm2;
  Parsed p = parse(f,
                   "Sure.<|tool_call_start|>[get_weather(city='Paris', days=3), "
                   "search(q=\"a \\\"b\\\" \\u00e9\", tags=['x', \"y\",], opts={\"k\": true, "
                   "'n': [1, (2, 3)]}, f=None, ok=True, x=-1.5, y=.5, z=2e3)]<|tool_call_end|>"
                   "Done.");
  EXPECT_EQ(p.content, "Sure.Done.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(nlohmann::json::parse(p.calls[1].arguments),
            nlohmann::json::parse("{\"q\": \"a \\\"b\\\" \xc3\xa9\", \"tags\": [\"x\", \"y\"], "
                                  "\"opts\": {\"k\": true, \"n\": [1, [2, 3]]}, \"f\": null, "
                                  "\"ok\": true, \"x\": -1.5, \"y\": 0.5, \"z\": 2000.0}"));
  p = parse(f, "<|tool_call_start|>[now()]<|tool_call_end|>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  for (const char* text :
       {"<|tool_call_start|>[]<|tool_call_end|>", "<|tool_call_start|>now()<|tool_call_end|>",
        "<|tool_call_start|>[f(1)]<|tool_call_end|>",
        "<|tool_call_start|>[f(a='x)]<|tool_call_end|>",
        "<|tool_call_start|>[f(a=b)]<|tool_call_end|>",
        "<|tool_call_start|>[a.b()]<|tool_call_end|>", "<|tool_call_st"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, DeepSeekV31) {
  const auto f = ToolCallFormat::kDeepSeek;
  Parsed p =
      parse(f,
            "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
            "{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>now<｜tool▁sep｜>{}"
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(p.calls[1].name, "now");
  // R1 / V3 write the type, then the name and fenced JSON.
  p = parse(
      f,
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  for (const char* text : {"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f{}<｜tool▁call▁end｜>"
                           "<｜tool▁calls▁end｜>",
                           "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>[1]"
                           "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                           "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>", "<｜tool▁calls"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, DeepSeekV32) {
  const auto f = ToolCallFormat::kDeepSeekV32;
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}}}}}])");
  Parsed p = parse(f,
                   "Checking.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
                   "<｜DSML｜parameter name=\"city\" string=\"true\">42</｜DSML｜parameter>\n"
                   "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
                   "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"now\">\n</｜DSML｜invoke>\n"
                   "</｜DSML｜function_calls>",
                   &tools);
  EXPECT_EQ(p.content, "Checking.\n\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"42","days":3})");
  EXPECT_EQ(p.calls[1].name, "now");
  for (const char* text : {"<｜DSML｜function_calls>text</｜DSML｜function_calls>",
                           "<｜DSML｜function_calls><｜DSML｜invoke>x</｜DSML｜invoke>"
                           "</｜DSML｜function_calls>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, KimiK2) {
  const auto f = ToolCallFormat::kKimi;
  Parsed p = parse(f,
                   "Sure.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
                   "<|tool_call_argument_begin|>{\"city\": \"Oslo\"}<|tool_call_end|>\n"
                   "<|tool_call_begin|>functions.now:1<|tool_call_argument_begin|>{}"
                   "<|tool_call_end|><|tool_calls_section_end|>");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.calls[1].name, "now");
  for (const char* text :
       {"<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0{}<|tool_call_end|>"
        "<|tool_calls_section_end|>",
        "<|tool_calls_section_begin|>text<|tool_calls_section_end|>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, MiniMaxM2) {
  const auto f = ToolCallFormat::kMiniMax;
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}}}}}])");
  Parsed p = parse(f,
                   "Let me see.\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter "
                   "name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n"
                   "</invoke>\n<invoke name=\"now\">\n</invoke>\n</minimax:tool_call>",
                   &tools);
  EXPECT_EQ(p.content, "Let me see.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  for (const char* text : {"<minimax:tool_call><invoke>x</invoke></minimax:tool_call>",
                           "<minimax:tool_call><invoke name=\"f\"><parameter name=\"a\">1"
                           "</invoke></minimax:tool_call>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

// Seed-OSS: qwen_xml's calls inside <seed:tool_call>, the values as its
// template writes them (no newlines around them) or with qwen_xml's
// newlines; schema types apply.
TEST(ToolCalls, SeedOss) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}}}}}])");
  const auto f = ToolCallFormat::kSeed;
  Parsed p = parse(f,
                   "Checking.\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris"
                   "</parameter>\n<parameter=days>3</parameter>\n</function>\n</seed:tool_call>"
                   "<seed:tool_call>\n<function=now>\n</function>\n</seed:tool_call>",
                   &tools);
  EXPECT_EQ(p.content, "Checking.\n");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":3})");
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  p = parse(f,
            "<seed:tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n"
            "</parameter>\n</function>\n</seed:tool_call>",
            &tools);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"New York"})");
  // qwen_xml's <tool_call> is text to this format.
  p = parse(f, "<tool_call>\n<function=now>\n</function>\n</tool_call>", &tools);
  EXPECT_TRUE(p.calls.empty());
}

TEST(ToolCalls, CommandR7b) {
  const auto f = ToolCallFormat::kCommand;
  Parsed p = parse(f,
                   "<|START_ACTION|>[\n{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", "
                   "\"parameters\": {\"city\": \"Rome\"}},\n{\"tool_call_id\": \"1\", "
                   "\"tool_name\": \"now\", \"parameters\": {}}\n]<|END_ACTION|>");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(p.calls[1].name, "now");
  // The answer's response markers are markup.
  p = parse(f, "<|START_RESPONSE|>It is 21 C.<|END_RESPONSE|>");
  EXPECT_EQ(p.content, "It is 21 C.");
  EXPECT_TRUE(p.calls.empty());
  p = parse(f, "<|START_ACTION|>[{\"tool_name\": 3}]<|END_ACTION|>");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "<|START_ACTION|>[{\"tool_name\": 3}]<|END_ACTION|>");
}

TEST(ToolCalls, FunctionaryV31) {
  const auto f = ToolCallFormat::kFunctionary;
  Parsed p = parse(f,
                   "Looking.<function=get_weather>{\"city\": \"Oslo\"}</function>"
                   "<function=now>{}</function>");
  EXPECT_EQ(p.content, "Looking.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  for (const char* text : {"<function=f>not json</function>", "<function=>{}</function>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, FunctionaryV32) {
  const auto f = ToolCallFormat::kFunctionaryV32;
  // The prompt ends with ">>>": the reply opens with its recipient.
  Parsed p = parse(f,
                   "all\nLet me check >> both.>>>get_weather\n{\"city\": \"a>>>b\"}\n"
                   ">>>now\n{}>>>all\nDone.");
  EXPECT_EQ(p.content, "Let me check >> both.Done.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"a>>>b"})");
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  p = parse(f, "get_weather\n{\"city\": \"Oslo\"}");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.content, "");
  // Not calls: a body that is not an object, one cut off, no recipient line.
  for (const char* text : {"f\nnot json", "f\n[1]", "f\n{\"a\": ", "Just text.", "all"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text) << text;
  }
}

TEST(ToolCalls, Gemma4) {
  const auto f = ToolCallFormat::kGemma4;
  Parsed p = parse(f,
                   "Checking.<|tool_call>call:get_weather{city:<|\"|>Paris, \"FR\"<|\"|>,"
                   "days:3,opts:{deep:true,tags:[<|\"|>a<|\"|>,-1.5,null]}}<tool_call|>"
                   "<|tool_call>call:now{}<tool_call|>Done.");
  EXPECT_EQ(p.content, "Checking.Done.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(p.calls[0].arguments),
            nlohmann::json::parse(R"({"city": "Paris, \"FR\"", "days": 3,
                                      "opts": {"deep": true, "tags": ["a", -1.5, null]}})"));
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  // Not calls: no "call:", an unquoted string, an unclosed object, a bad name.
  for (const char* text :
       {"<|tool_call>get_weather{}<tool_call|>", "<|tool_call>call:f{a:b}<tool_call|>",
        "<|tool_call>call:f{a:1<tool_call|>", "<|tool_call>call:a b{}<tool_call|>",
        "<|tool_call>call:f{a:[1,}<tool_call|>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, Granite) {
  const auto f = ToolCallFormat::kGranite;
  Parsed p = parse(f,
                   "<response>Checking.</response><|tool_call|>[{\"name\": \"get_weather\", "
                   "\"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"now\", \"arguments\": {}}]");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.calls[1].name, "now");
  p = parse(f, "<response>It is 21 C.</response>");
  EXPECT_EQ(p.content, "It is 21 C.");
  for (const char* text : {"<|tool_call|>[{\"name\": 1}]", "<|tool_call|>not json", "<|tool_ca"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, LongArgumentsStreamInLinearTime) {
  // A 1 MB argument string fed in 16-byte pieces (a streamed reply) parses
  // into one call, as a whole reply does.
  const std::string big(1 << 20, 'x');
  const std::string reply =
      "<tool_call>\n{\"name\": \"save\", \"arguments\": {\"text\": \"" + big + "\"}}\n</tool_call>";
  ToolCallParser parser(ToolCallFormat::kHermes);
  Parsed p;
  for (size_t at = 0; at < reply.size(); at += 16) {
    parser.feed(std::string_view(reply).substr(at, 16), &p.content, &p.calls);
  }
  parser.finish(&p.content, &p.calls);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"text\":\"" + big + "\"}");
  EXPECT_EQ(p.content, "");
}

TEST(ToolCalls, Generic) {
  const auto f = ToolCallFormat::kGeneric;
  Parsed p = parse(f, R"( {"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}})");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(p.content, "");
  p = parse(f, R"({"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments":)"
               R"( {"k": [1]}, "id": "c1"}]})");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].arguments, R"({"k":[1]})");
  EXPECT_EQ(p.calls[1].id, "c1");
  // The response string is the content, escapes decoded (a surrogate pair,
  // an escaped quote, a newline), its closing brace dropped.
  p = parse(f, R"({ "response" : "Hi \"you\"\n\u00e9\ud83d\ude00 \\ done" }  )");
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "Hi \"you\"\n\xc3\xa9\xf0\x9f\x98\x80 \\ done");
  // A response cut off mid-string keeps what was decoded.
  p = parse(f, R"({"response": "partial ans)");
  EXPECT_EQ(p.content, "partial ans");
  // Not the format: plain text, other objects, a call without a name.
  for (const char* text : {"Just text.", R"({"answer": 42})", R"({"tool_call": {"arguments": {}}})",
                           R"({"tool_call": {"name": "f", "arguments": 1}})", "{\"tool_ca"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

// An assistant turn with tool calls, rendered by the model's own template,
// parses back into the same calls.
TEST(ToolCalls, Phi4Mini) {
  const auto f = ToolCallFormat::kPhi4Mini;
  Parsed p = parse(f,
                   "Checking.<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": "
                   "{\"city\": \"Oslo\"}}, {\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>");
  EXPECT_EQ(p.content, "Checking.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  // One call object; the end of generation before the closing tag.
  p = parse(f, "<|tool_call|>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2]}}<|/tool_call|>ok");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, R"({"a":[1,2]})");
  EXPECT_EQ(p.content, "ok");
  p = parse(f, "<|tool_call|>[{\"name\": \"f\", \"arguments\": {}}]");
  ASSERT_EQ(p.calls.size(), 1u);
  for (const char* text : {"<|tool_call|>[]<|/tool_call|>", "<|tool_call|>{\"arguments\": {}}<|/tool_call|>",
                           "<|tool_call|>[{\"name\": \"f\", \"arguments\": 3}]<|/tool_call|>",
                           "a <|tool_ca", "<|tool|>x<|/tool|>"}) {
    p = parse(f, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCalls, RoundTripThroughTheTemplates) {
  const OrderedJson tools = OrderedJson::parse(R"([{"type": "function",
      "function": {"name": "get_weather", "description": "Weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}}, "required": ["city"]}}}])");
  const OrderedJson user = {{"role", "user"}, {"content", "Weather in Paris?"}};
  const OrderedJson call = OrderedJson::parse(R"({"role": "assistant",
      "content": null, "tool_calls": [{"id": "abcDEF123", "type": "function", "function":
      {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]})");
  const char* names[] = {"Qwen-Qwen2.5-7B-Instruct",
                         "Qwen3.5-4B",
                         "Qwen3-Coder",
                         "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
                         "meta-llama-Llama-3.1-8B-Instruct",
                         "meta-llama-Llama-3.2-3B-Instruct",
                         "mistralai-Mistral-Nemo-Instruct-2407",
                         "GLM-4.6",
                         "GLM-4.7-Flash",
                         "NVIDIA-Nemotron-Nano-v2",
                         "LFM2.5-8B-A1B",
                         "deepseek-ai-DeepSeek-V3.1",
                         "moonshotai-Kimi-K2",
                         "MiniMax-M2",
                         "ByteDance-Seed-OSS",
                         "Cohere2MoE",
                         "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                         "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
                         "meetkai-functionary-medium-v3.1",
                         "meetkai-functionary-medium-v3.2",
                         "google-gemma-4-31B-it",
                         "deepseek-ai-DeepSeek-V3.2",
                         "ibm-granite-granite-4.0",
                         "unsloth-mistral-Devstral-Small-2507",
                         "Mistral-Small-3.2-24B-Instruct-2506",
                         "meta-llama-Llama-3.3-70B-Instruct",
                         "google-gemma-4-31B-it-interleaved"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const std::string src = read_file(kTemplates + "/" + name + ".jinja");
    auto t = ChatTemplate::parse(src, "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ChatTemplateOptions o;
    o.tools = tools;
    o.add_generation_prompt = true;
    auto prefix = t->apply_json(OrderedJson::array({user}), o);
    o.add_generation_prompt = false;
    // GLM and MiniMax render a null content as "None", LFM2.5, Devstral and
    // Mistral Small 3.2 cannot index or iterate one: their clients send "".
    OrderedJson c = call;
    const std::string_view family = std::string_view(name).substr(0, 3);
    if (family == "GLM" || family == "LFM" || family == "Min" || family == "uns" ||
        family == "Mis") {
      c["content"] = "";
    }
    // Functionary v3.2 concatenates the arguments: OpenAI's string form.
    if (std::string_view(name).ends_with("v3.2")) {
      c["tool_calls"][0]["function"]["arguments"] = R"({"city": "Paris", "days": 3})";
    }
    auto full = t->apply_json(OrderedJson::array({user, c}), o);
    ASSERT_TRUE(prefix.ok()) << prefix.status().to_string();
    ASSERT_TRUE(full.ok()) << full.status().to_string();
    // The turn is what the full rendering adds to the conversation before it.
    // A generation prompt may open a reasoning block that the history turn
    // writes differently (GLM-4.7, Nemotron Nano v2, Command A, DeepSeek R1):
    // the turn then starts where the two part.
    size_t common = 0;
    while (common < prefix->size() && common < full->size() &&
           (*prefix)[common] == (*full)[common]) {
      ++common;
    }
    if (common < prefix->size()) {
      // Not inside a marker: back to the '<' that starts the one they part in.
      const size_t lt = full->rfind('<', common);
      if (lt != std::string::npos && common - lt < 24) common = lt;
    }
    // (Gemma 4's empty thought channel is the longest: 28 bytes.)
    ASSERT_GE(common, prefix->size() - std::min<size_t>(prefix->size(), 32)) << *prefix << "\n---\n"
                                                                             << *full;
    prefix->resize(common);
    std::string turn = full->substr(prefix->size());
    for (const char* end : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<SPECIAL_12>",
                            "<｜end▁of▁sentence｜>", "[e~[", "<|END_OF_TURN_TOKEN|>",
                            "<|end_of_text|>", "<|tool_response>", "<turn|>", "<seed:eos>"}) {
      if (const size_t at = turn.rfind(end); at != std::string::npos) turn.erase(at);
    }
    // Thinking templates open <think> in the generation prompt and close an
    // empty one in history: that is reasoning, not tool-call text.
    for (std::string_view close : {"</think>", "<|END_THINKING|>"}) {
      if (const size_t think = turn.find(close); think != std::string::npos) {
        turn.erase(0, think + close.size());
      }
    }
    const ToolCallFormat f = detect_tool_call_format(src);
    const Json tool_defs = Json::parse(tools.dump());
    Parsed p = parse(f, turn, &tool_defs);
    ASSERT_EQ(p.calls.size(), 1u) << "rendered turn: " << turn;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(nlohmann::json::parse(p.calls[0].arguments),
              nlohmann::json::parse(R"({"city": "Paris", "days": 3})"));
    EXPECT_EQ(std::string(trim_for_test(p.content)), "") << turn;
  }
}

// gpt-oss: the call its Harmony template renders in an assistant turn is
// read back by the ChatParser (Harmony's calls come with its channels).
TEST(ToolCalls, HarmonyRoundTripThroughTheTemplate) {
  const std::string src = read_file(kTemplates + "/openai-gpt-oss-120b.jinja");
  auto t = ChatTemplate::parse(src, "<s>", "</s>");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const OrderedJson tools = OrderedJson::parse(R"([{"type": "function", "function": {"name":
      "get_weather", "description": "Weather in a city", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])");
  const OrderedJson user = {{"role", "user"}, {"content", "Weather in Paris?"}};
  const OrderedJson call = OrderedJson::parse(R"({"role": "assistant", "content": "",
      "thinking": "Need the weather.", "tool_calls": [{"id": "c1", "type": "function", "function":
      {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]})");
  ChatTemplateOptions o;
  o.tools = tools;
  o.add_generation_prompt = true;
  auto prefix = t->apply_json(OrderedJson::array({user}), o);
  o.add_generation_prompt = false;
  auto full = t->apply_json(OrderedJson::array({user, call}), o);
  ASSERT_TRUE(prefix.ok()) << prefix.status().to_string();
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  ASSERT_EQ(full->substr(0, prefix->size()), *prefix);
  const std::string turn = full->substr(prefix->size());
  const ChatFormat f = detect_chat_format(src);
  const Json tool_defs = Json::parse(tools.dump());
  const ChatDelta d = ChatParser::parse_all(f, ReasoningFormat::kAuto, false, true, &tool_defs, turn);
  ASSERT_EQ(d.calls.size(), 1u) << turn;
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(d.calls[0].arguments), Json::parse(R"({"city": "Paris", "days": 3})"));
  EXPECT_EQ(d.reasoning, "Need the weather.") << turn;
  EXPECT_EQ(d.content, "") << turn;
}

}  // namespace
}  // namespace folio::chat
