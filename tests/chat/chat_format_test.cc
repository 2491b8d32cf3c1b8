// chat::ChatFormat: the format detected from every template of the corpus,
// --chat-format names, earlier reasoning routed into the field each template
// reads (rendered as Python's jinja2 renders the same conversation with that
// field: scripts/gen_template_cases.py), and the generation prompts that
// open the reasoning block.
#include "chat/chat_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "chat/chat_template.h"
#include "template_corpus.h"
#include "tokenizer/test_util.h"

namespace folio::chat {
namespace chat_format_test {

using tokenizer::testing::read_file;

using namespace testing;  // template_corpus.h

ChatFormat format_of(const std::string& name) {
  return detect_chat_format(read_file(kTemplates + "/" + name + ".jinja"));
}

TEST(ChatFormat, DetectedFromTheCorpusTemplates) {
  const std::map<std::string, std::string> want = {
      {"Qwen-Qwen3-0.6B", "hermes+think"},
      {"Qwen-Qwen2.5-7B-Instruct", "hermes"},
      {"Qwen3.5-4B", "qwen_xml+think"},
      {"Qwen-QwQ-32B", "hermes+think"},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek+think"},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek+think"},
      {"MiniMax-M2", "minimax+think"},
      {"Kimi-K2-Thinking", "kimi+think"},
      {"HuggingFaceTB-SmolLM3-3B", "generic+think"},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen_xml+think"},
      {"ibm-granite-granite-3.3-2B-Instruct", "granite+think"},
      {"ByteDance-Seed-OSS", "seed+seed"},
      {"mistralai-Ministral-3-14B-Reasoning-2512", "mistral+mistral"},
      {"Cohere2MoE", "command+command"},
      {"openai-gpt-oss-120b", "none+harmony"},
      {"meta-llama-Llama-3.1-8B-Instruct", "llama3"},
      {"google-gemma-2-2b-it", "generic"},
      {"GLM-4.6", "glm+think"},
      {"GLM-4.7-Flash", "glm+think"},
      {"NVIDIA-Nemotron-Nano-v2", "nemotron+think"},
      {"LFM2-8B-A1B", "lfm2"},
      {"LFM2.5-8B-A1B", "lfm2+think"},
      {"deepseek-ai-DeepSeek-V3.1", "deepseek+think"},
      {"moonshotai-Kimi-K2", "kimi"},
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", "command+command"},
      {"meetkai-functionary-medium-v3.1", "functionary"},
      {"meetkai-functionary-medium-v3.2", "functionary_v3_2"},
      {"microsoft-Phi-3.5-mini-instruct", "generic"},
      {"google-gemma-4-31B-it", "gemma4+gemma4"},
      {"google-gemma-4-31B-it-interleaved", "gemma4+gemma4"},
      {"microsoft-Phi-4-mini-instruct", "phi4_mini"},
  };
  for (const auto& [name, format] : want) {
    EXPECT_EQ(format_of(name).name(), format) << name;
  }
  EXPECT_EQ(format_of("openai-gpt-oss-120b").reasoning_field, "thinking");
  EXPECT_EQ(format_of("upstage-Solar-Open-100B").reasoning_field, "reasoning");
  EXPECT_EQ(format_of("Qwen-Qwen3-0.6B").reasoning_field, "reasoning_content");
  EXPECT_EQ(format_of("google-gemma-4-31B-it").reasoning_field, "reasoning_content");
}

TEST(ChatFormat, NamesRoundTripAndBadNamesAreRefused) {
  for (const char* name :
       {"none",          "hermes",          "qwen_xml+think", "mistral+mistral",  "none+seed",
        "none+command",  "none+harmony",    "llama3",         "generic",          "generic+think",
        "glm+think",     "nemotron",        "lfm2+think",     "deepseek+think",   "kimi",
        "minimax+think", "command+command", "functionary",    "functionary_v3_2", "granite+think",
        "gemma4+gemma4", "phi4_mini",       "seed+seed"}) {
    Result<ChatFormat> f = parse_chat_format(name);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().to_string();
    EXPECT_EQ(f->name(), name);
  }
  EXPECT_EQ(parse_chat_format("none+harmony")->reasoning_field, "thinking");
  for (const char* bad : {"", "chatml", "hermes+", "hermes+thinking", "+think", "hermes+think+x"}) {
    Result<ChatFormat> f = parse_chat_format(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("TOOLS[+REASONING]"), std::string::npos);
  }
  EXPECT_EQ(*parse_reasoning_format("none"), ReasoningFormat::kNone);
  EXPECT_EQ(*parse_reasoning_format("auto"), ReasoningFormat::kAuto);
  EXPECT_EQ(*parse_reasoning_format("deepseek"), ReasoningFormat::kDeepseek);
  EXPECT_FALSE(parse_reasoning_format("deepseek-legacy").ok());
  EXPECT_FALSE(parse_reasoning_format("").ok());
}

// A client sends earlier reasoning as reasoning_content; routed into the
// template's own field, every corpus template renders it as jinja2 renders
// the conversation that carries that field.
TEST(ChatFormat, ReasoningSentBackRendersAsJinja2) {
  int checked = 0, differs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kTemplates)) {
    const std::string file = entry.path().filename().string();
    const std::string name = entry.path().stem().string();
    const std::string source = read_file(entry.path().string());
    const ChatFormat format = detect_chat_format(source);
    const OrderedJson expected =
        OrderedJson::parse(read_file(kData + "/expected/" + name + ".json"));
    Result<ChatTemplate> t =
        ChatTemplate::parse(source, corpus()["bos_token"], corpus()["eos_token"]);
    ASSERT_TRUE(t.ok()) << file << ": " << t.status().to_string();
    const std::string suffix = format.reasoning_field == "reasoning_content" ? "content"
                               : format.reasoning_field == "thinking"        ? "thinking"
                                                                             : "reasoning";
    for (const std::string base : {"reasoning_", "tool_reasoning_"}) {
      for (const std::string agp : {"", "+agp"}) {
        const OrderedJson& c = corpus_case(base + "content" + agp);
        ASSERT_TRUE(c.is_object()) << base;
        OrderedJson messages = c["messages"];
        route_reasoning_field(format, &messages);
        const ChatTemplateOptions options = options_of(c);
        jinja::Error error;
        Result<std::string> out = t->apply_json(messages, options, &error);
        const std::string want_case = base + suffix + agp;
        const OrderedJson& want = expected["results"][want_case];
        ASSERT_TRUE(want.is_object()) << file << " / " << want_case;
        if (want.contains("output")) {
          ASSERT_TRUE(out.ok()) << file << " / " << want_case << ": " << out.status().to_string();
          EXPECT_EQ(*out, want["output"].get<std::string>()) << file << " / " << want_case;
          const OrderedJson& plain = expected["results"][base + "content" + agp];
          differs += plain.contains("output") && plain["output"] != want["output"];
        } else {
          ASSERT_FALSE(out.ok()) << file << " / " << want_case;
          EXPECT_EQ(error.message, want["error"]["message"].get<std::string>()) << file;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 71 * 4);
  // gpt-oss (thinking) and Solar (reasoning) render the routed field where
  // reasoning_content alone renders nothing.
  EXPECT_GE(differs, 2);
}

// Templates that open the block in the generation prompt leave the reply
// inside it; enable_thinking=false closes it again.
TEST(ChatFormat, GenerationPromptsThatOpenTheReasoningBlock) {
  struct Case {
    const char* name;
    bool enable_thinking_set;
    bool enable_thinking;
    bool opens;
  };
  const Case cases[] = {
      // These two close the block again unless enable_thinking is set.
      {"Qwen-QwQ-32B", true, true, true},
      {"Qwen-QwQ-32B", false, false, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", true, true, true},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", false, false, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", false, false, true},
      {"MiniMax-M2", false, false, true},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", false, false, true},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", true, false, false},
      {"Qwen-Qwen3-0.6B", false, false, false},
      {"Qwen-Qwen3-0.6B", true, false, false},
      {"GLM-4.6", false, false, false},
      {"HuggingFaceTB-SmolLM3-3B", false, false, false},
  };
  for (const Case& c : cases) {
    Result<ChatTemplate> t =
        ChatTemplate::parse(read_file(kTemplates + "/" + c.name + ".jinja"), "<s>", "</s>");
    ASSERT_TRUE(t.ok()) << c.name;
    ChatTemplateOptions o;
    if (c.enable_thinking_set) o.kwargs["enable_thinking"] = c.enable_thinking;
    OrderedJson messages = OrderedJson::array({{{"role", "user"}, {"content", "2+2?"}}});
    Result<std::string> prompt = t->apply_json(messages, o);
    ASSERT_TRUE(prompt.ok()) << c.name << ": " << prompt.status().to_string();
    EXPECT_EQ(prompt_opens_reasoning(format_of(c.name).reasoning, *prompt), c.opens)
        << c.name << " enable_thinking " << c.enable_thinking_set << ": ..."
        << prompt->substr(prompt->size() > 40 ? prompt->size() - 40 : 0);
  }
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningSyntax::kNone, "<think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning(ReasoningSyntax::kSeed, "x<seed:think>"));
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningSyntax::kThink, "<think></think>\n"));
}

// Functionary v3.2 concatenates a call's arguments as text; the server has
// made them objects (for every other template), so they go back to JSON
// text there, and the conversation renders as with string arguments
// (which the corpus renders as jinja2 does: tool_call_string_args).
TEST(ChatFormat, FunctionaryV32GetsArgumentsAsText) {
  const std::string source = read_file(kTemplates + "/meetkai-functionary-medium-v3.2.jinja");
  const ChatFormat format = detect_chat_format(source);
  ASSERT_EQ(format.name(), "functionary_v3_2");
  Result<ChatTemplate> t = ChatTemplate::parse(source, "<s>", "</s>");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  OrderedJson messages = OrderedJson::parse(R"([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
       "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "21 C"}])");
  OrderedJson as_objects = messages;
  route_call_arguments(format, &messages);
  EXPECT_EQ(messages[1]["tool_calls"][0]["function"]["arguments"],
            R"({"city":"Paris","days":[1,2]})");
  ChatTemplateOptions o;
  o.add_generation_prompt = true;
  Result<std::string> out = t->apply_json(messages, o);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_NE(out->find("<|start_header_id|>assistant<|end_header_id|>\n\n>>>get_weather\n"
                      "{\"city\":\"Paris\",\"days\":[1,2]}<|eot_id|>"),
            std::string::npos)
      << *out;
  // Other formats keep the objects.
  route_call_arguments(*parse_chat_format("hermes"), &as_objects);
  EXPECT_TRUE(as_objects[1]["tool_calls"][0]["function"]["arguments"].is_object());
}

}  // namespace chat_format_test
}  // namespace folio::chat
