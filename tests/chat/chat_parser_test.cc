// chat::ChatParser: replies written by hand in each family's syntax parse to
// the expected reasoning, content and tool calls, whole, fed one byte at a
// time, and split in two at every byte.
#include "chat/chat_parser.h"

#include <gtest/gtest.h>

namespace folio::chat {
namespace chat_parser_test {

struct Want {
  std::string reasoning;
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

ChatFormat format(const char* name) {
  Result<ChatFormat> f = parse_chat_format(name);
  EXPECT_TRUE(f.ok()) << name;
  return f.ok() ? *f : ChatFormat{};
}

void expect_delta(const ChatDelta& got, const Want& want, const std::string& how) {
  EXPECT_EQ(got.reasoning, want.reasoning) << how;
  EXPECT_EQ(got.content, want.content) << how;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << how;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].first) << how;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << how;
  }
  // The stream's deltas: each call's first one names it, and the pieces
  // spell its arguments.
  std::vector<std::string> args(got.calls.size());
  size_t started = 0;
  for (const ToolCallDelta& d : got.call_deltas) {
    ASSERT_LT(d.index, got.calls.size()) << how;
    if (d.first) {
      EXPECT_EQ(d.index, started++) << how;
      EXPECT_EQ(d.name, got.calls[d.index].name) << how;
    }
    args[d.index] += d.arguments;
  }
  EXPECT_EQ(started, got.calls.size()) << how;
  for (size_t i = 0; i < got.calls.size(); ++i) EXPECT_EQ(args[i], got.calls[i].arguments) << how;
}

// Whole, byte by byte, and in two pieces at every split point.
void check(const char* fmt, std::string_view reply, const Want& want, bool starts_inside = false,
           ReasoningFormat rf = ReasoningFormat::kAuto, bool tools = true) {
  const ChatFormat f = format(fmt);
  expect_delta(ChatParser::parse_all(f, rf, starts_inside, tools, nullptr, reply), want,
               std::string(fmt) + " whole");
  {
    ChatParser p(f, rf, starts_inside, tools);
    ChatDelta d;
    for (char c : reply) p.feed(std::string_view(&c, 1), &d);
    p.finish(&d);
    expect_delta(d, want, std::string(fmt) + " byte by byte");
  }
  for (size_t cut = 1; cut < reply.size(); ++cut) {
    ChatParser p(f, rf, starts_inside, tools);
    ChatDelta d;
    p.feed(reply.substr(0, cut), &d);
    p.feed(reply.substr(cut), &d);
    p.finish(&d);
    expect_delta(d, want, std::string(fmt) + " split at " + std::to_string(cut));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ChatParser, Qwen3ThinksThenCallsATool) {
  check("hermes+think",
        "<think>\nThe user wants the weather. I should call get_weather.\n</think>\n\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
        "</tool_call>",
        {"The user wants the weather. I should call get_weather.", "",
         {{"get_weather", "{\"city\":\"Paris\"}"}}});
  check("hermes+think", "<think>\n\n</think>\n\nParis is sunny.", {"", "Paris is sunny.", {}});
}

TEST(ChatParser, ThinkingModelsInTheGenericFormat) {
  // A distill whose prompt opened <think>, then the generic JSON reply (the
  // forced-call grammar lets the block come first).
  check("generic+think",
        "The user wants Oslo.\n</think>\n\n{\"tool_call\": {\"name\": \"get_weather\", "
        "\"arguments\": {\"city\": \"Oslo\"}}}",
        {"The user wants Oslo.", "", {{"get_weather", "{\"city\":\"Oslo\"}"}}}, true);
  check("generic+think", "<think>Easy.</think>{\"response\": \"Hi \\u00e9\"}",
        {"Easy.", "Hi \xc3\xa9", {}});
}

TEST(ChatParser, DeepSeekR1DistillStartsInsideTheBlock) {
  // The generation prompt ended with "<｜Assistant｜><think>\n".
  check("none+think", "Okay, 2 + 2 is 4.\nLet me double-check: yes.\n</think>\n\nThe answer is **4**.",
        {"Okay, 2 + 2 is 4.\nLet me double-check: yes.", "The answer is **4**.", {}}, true);
}

TEST(ChatParser, QwQAndMiniMaxStartInside) {
  check("hermes+think", "Hmm.   \n</think>Done.", {"Hmm.", "Done.", {}}, true);
  check("none+think", "I think\n</think>\n\n<b>Answer</b> x < y", {"I think", "<b>Answer</b> x < y", {}},
        true);
}

TEST(ChatParser, GlmKimiSmolLm3WriteTheOpenTag) {
  check("none+think", "<think>Let me see.</think>\nHello!", {"Let me see.", "Hello!", {}});
  check("none+think", "  \n<think>a</think>b", {"a", "b", {}});
}

TEST(ChatParser, TagsOnlyCountAtTheStart) {
  check("none+think", "Use <think> tags like </think> this.",
        {"", "Use <think> tags like </think> this.", {}});
  check("none+think", "<thinking>x", {"", "<thinking>x", {}});
  check("none+think", "<thi", {"", "<thi", {}});
  check("none+think", "   ", {"", "   ", {}});
}

TEST(ChatParser, AnUnfinishedBlockIsAllReasoning) {
  check("none+think", "<think>\nStill thinking about </thi", {"Still thinking about </thi", "", {}});
  check("none+think", "step one\n\n", {"step one", "", {}}, true);
  check("none+think", "</think>   ", {"", "", {}}, true);
}

TEST(ChatParser, OtherTagSyntaxes) {
  check("none+seed", "<seed:think>plan</seed:think>answer", {"plan", "answer", {}});
  check("mistral+mistral", "[THINK]plan[/THINK]answer", {"plan", "answer", {}});
  check("none+command", "<|START_THINKING|>plan<|END_THINKING|>answer", {"plan", "answer", {}});
}

TEST(ChatParser, Gemma4ThinkingChannel) {
  // With thinking on the reply opens the thought channel itself; with it off
  // the prompt closed an empty one, so the reply is content.
  check("gemma4+gemma4",
        "<|channel>thought\nThe user wants the weather in Paris.\n<channel|>"
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
        {"The user wants the weather in Paris.", "", {{"get_weather", "{\"city\":\"Paris\"}"}}});
  check("gemma4+gemma4", "<|channel>thought\nEasy.<channel|>It is **4**.", {"Easy.", "It is **4**.", {}});
  check("gemma4+gemma4", "Paris is sunny.", {"", "Paris is sunny.", {}});
  // Interleaved: thinking again after a first part; a stray close marker at
  // the end of the content is dropped.
  check("gemma4+gemma4",
        "<|channel>thought\nFirst.<channel|>Part one. <|channel>thought\nSecond.\n<channel|>\nPart "
        "two.<channel|>",
        {"First.\n\nSecond.", "Part one. Part two.", {}});
  // An empty block adds no gap; an unfinished one is all reasoning.
  check("gemma4+gemma4", "<|channel>thought\n<channel|>A<|channel>thought\nB", {"B", "A", {}});
  // Marker look-alikes stay content.
  check("gemma4+gemma4", "a <|channel or <channel| b", {"", "a <|channel or <channel| b", {}});
  // --reasoning-format none: the channel stays in the content as written.
  check("gemma4+gemma4", "<|channel>thought\nx<channel|>y", {"", "<|channel>thought\nx<channel|>y", {}},
        false, ReasoningFormat::kNone, false);
}

TEST(ChatParser, ReasoningFormatNoneKeepsTheReplyAsWritten) {
  check("hermes+think", "<think>x</think>y", {"", "<think>x</think>y", {}}, false,
        ReasoningFormat::kNone);
  check("none+harmony", "<|channel|>final<|message|>hi", {"", "<|channel|>final<|message|>hi", {}},
        false, ReasoningFormat::kNone, /*tools=*/false);
  check("hermes+think", "<think>x</think>y", {"x", "y", {}}, false, ReasoningFormat::kDeepseek);
}

TEST(ChatParser, WithoutToolsATagIsContent) {
  check("hermes+think", "<think>a</think><tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>",
        {"a", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", {}}, false,
        ReasoningFormat::kAuto, /*tools=*/false);
}

TEST(ChatParser, HarmonyAnalysisThenFinal) {
  check("none+harmony",
        "<|channel|>analysis<|message|>User asks 2+2. Simple: 4.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.",
        {"User asks 2+2. Simple: 4.", "2 + 2 = 4.", {}});
  // <|return|> ends the final message when the detokenizer renders it.
  check("none+harmony", "<|channel|>final<|message|>Hi!<|return|>", {"", "Hi!", {}});
  // A reply without channels is an answer.
  check("none+harmony", "Hello there", {"", "Hello there", {}});
  // Control text never reaches the content, even cut short.
  check("none+harmony", "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|chan",
        {"x", "", {}});
  // Text that looks like a marker but is none stays in the message.
  check("none+harmony", "<|channel|>final<|message|>a <|b|> c < d <|", {"", "a <|b|> c < d <|", {}});
}

TEST(ChatParser, HarmonyCallStreamsItsArguments) {
  // gpt-oss's call is reported once its body opens, and its arguments go
  // out as they are decoded, before <|call|>.
  ChatParser p(format("none+harmony"), ReasoningFormat::kAuto, false, true);
  ChatDelta d;
  const std::string head =
      "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
      "<|message|>{\"city\": \"Pa";
  for (char c : head) p.feed(std::string_view(&c, 1), &d);
  ASSERT_GE(d.call_deltas.size(), 2u);
  EXPECT_TRUE(d.call_deltas[0].first);
  EXPECT_EQ(d.call_deltas[0].name, "get_weather");
  std::string args;
  for (const ToolCallDelta& x : d.call_deltas) args += x.arguments;
  EXPECT_EQ(args, R"({"city":"Pa)");
  EXPECT_TRUE(d.calls.empty());
  p.feed("ris\"}<|call|>", &d);
  p.finish(&d);
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].arguments, R"({"city":"Paris"})");
}

TEST(ChatParser, HarmonyToolCalls) {
  check("none+harmony",
        "<|channel|>analysis<|message|>Need the weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{\"city\": \"Paris\"}<|call|>",
        {"Need the weather.", "", {{"get_weather", "{\"city\":\"Paris\"}"}}});
  // The recipient before the channel, a preamble, and two calls.
  check("none+harmony",
        "<|channel|>commentary<|message|>Checking both.<|end|>"
        "<|start|>assistant to=functions.a<|channel|>commentary json<|message|>{}<|call|>"
        "<|start|>assistant to=functions.b<|channel|>commentary json<|message|>{\"x\": [1]}<|call|>",
        {"", "Checking both.", {{"a", "{}"}, {"b", "{\"x\":[1]}"}}});
  // --reasoning-format none: the calls are still read, the analysis is content.
  check("none+harmony",
        "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.f <|constrain|>json<|message|>{}<|call|>",
        {"", "Need it.", {{"f", "{}"}}}, false, ReasoningFormat::kNone);
  // A body that is not a JSON object is not a call; one that opens as an
  // object was streamed as a call from its '{' and stays one, with what the
  // model wrote before it stopped.
  check("none+harmony",
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]<|call|>",
        {"", "[1]", {}});
  check("none+harmony",
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"x\": <|call|>",
        {"", "", {{"f", "{\"x\":"}}});
}

}  // namespace chat_parser_test
}  // namespace folio::chat
