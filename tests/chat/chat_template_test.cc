// ChatTemplate: ChatMessage lists rendered through the model's
// chat template exactly as Hugging Face renders them (expectations from
// scripts/gen_template_cases.py, Python jinja2), the template and BOS / EOS
// read from GGUF metadata, and the ChatML fallback.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "template_corpus.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace folio::chat {
namespace chat_template_test {

using tokenizer::testing::read_file;

using namespace testing;  // template_corpus.h

// Builds ChatMessage structs from the corpus JSON (what a server does with a
// request body), so the test covers ChatMessage::to_json as well.
std::vector<ChatMessage> to_messages(const OrderedJson& list) {
  std::vector<ChatMessage> out;
  for (const auto& j : list) {
    ChatMessage m;
    m.role = j["role"].get<std::string>();
    m.content = j.contains("content") ? j["content"] : OrderedJson();
    if (j.contains("reasoning_content"))
      m.reasoning_content = j["reasoning_content"].get<std::string>();
    if (j.contains("tool_calls")) {
      for (const auto& c : j["tool_calls"]) {
        ChatToolCall call;
        call.id = c["id"].get<std::string>();
        call.name = c["function"]["name"].get<std::string>();
        call.arguments = c["function"]["arguments"];
        m.tool_calls.push_back(std::move(call));
      }
    }
    if (j.contains("tool_call_id")) m.tool_call_id = j["tool_call_id"].get<std::string>();
    if (j.contains("name")) m.name = j["name"].get<std::string>();
    out.push_back(std::move(m));
  }
  return out;
}

TEST(ChatMessage, ToJsonMatchesTheCorpusShape) {
  const OrderedJson& c = corpus_case("tool_call_roundtrip");
  ASSERT_TRUE(c.is_object());
  std::vector<ChatMessage> messages = to_messages(c["messages"]);
  OrderedJson back = OrderedJson::array();
  for (const auto& m : messages) back.push_back(m.to_json());
  EXPECT_EQ(back.dump(), c["messages"].dump());
}

// Refdata templates x corpus conversations through the ChatMessage API.
TEST(ChatTemplate, MatchesHuggingFaceOnRefdataTemplates) {
  int checked = 0;
  for (const char* name :
       {"Qwen-Qwen2.5-7B-Instruct", "meta-llama-Llama-3.1-8B-Instruct", "Qwen-Qwen3-0.6B",
        "mistralai-Mistral-Nemo-Instruct-2407", "openai-gpt-oss-120b"}) {
    std::string source = read_file(kTemplates + "/" + name + ".jinja");
    ASSERT_FALSE(source.empty()) << name;
    OrderedJson expected = OrderedJson::parse(read_file(kData + "/expected/" + name + ".json"));
    Result<ChatTemplate> t =
        ChatTemplate::parse(source, corpus()["bos_token"], corpus()["eos_token"]);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    for (const char* case_name :
         {"multi_turn+agp", "tool_call_roundtrip+agp", "unicode_quotes", "thinking_off+agp"}) {
      const OrderedJson& c = corpus_case(case_name);
      ASSERT_TRUE(c.is_object()) << case_name;
      const ChatTemplateOptions options = options_of(c);
      jinja::Error error;
      Result<std::string> out = t->apply(to_messages(c["messages"]), options, &error);
      const OrderedJson& want = expected["results"][case_name];
      if (want.contains("output")) {
        ASSERT_TRUE(out.ok()) << name << " / " << case_name << ": " << out.status().to_string();
        EXPECT_EQ(*out, want["output"].get<std::string>()) << name << " / " << case_name;
      } else {
        ASSERT_FALSE(out.ok()) << name << " / " << case_name;
        EXPECT_EQ(error.message, want["error"]["message"].get<std::string>());
        EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);
}

TEST(ChatTemplate, RaiseExceptionBecomesAnInvalidArgument) {
  std::string source = read_file(kTemplates + "/google-gemma-2-2b-it.jinja");
  ChatTemplate t = ChatTemplate::load(source, "<bos>", "<eos>");
  ASSERT_FALSE(t.is_fallback());
  std::vector<ChatMessage> messages = {ChatMessage::text("system", "sys"),
                                       ChatMessage::text("user", "hi")};
  Result<std::string> out = t.apply(messages);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("TemplateError"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("System role not supported"), std::string::npos);

  messages.erase(messages.begin());
  out = t.apply(messages);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, FallbackWhenMissingOrBroken) {
  ChatTemplate none = ChatTemplate::load("", "<s>", "</s>");
  EXPECT_TRUE(none.is_fallback());
  EXPECT_NE(none.fallback_reason().find("no chat template"), std::string::npos);

  ChatTemplate broken = ChatTemplate::load("{% for m in messages %}{{ m.content }}", "<s>", "</s>");
  EXPECT_TRUE(broken.is_fallback());
  EXPECT_NE(broken.fallback_reason().find("TemplateSyntaxError at line 1"), std::string::npos)
      << broken.fallback_reason();

  ChatTemplate unsupported = ChatTemplate::load("{% extends 'base' %}", "<s>", "</s>");
  EXPECT_TRUE(unsupported.is_fallback());

  std::vector<ChatMessage> messages = {ChatMessage::text("system", "Be brief."),
                                       ChatMessage::text("user", "Hi")};
  ChatMessage parts;
  parts.role = "user";
  parts.content = OrderedJson::parse(
      R"([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])");
  messages.push_back(parts);
  ChatMessage null_content;
  null_content.role = "assistant";
  null_content.content = nullptr;
  messages.push_back(null_content);
  Result<std::string> out = broken.apply(messages);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(
      *out,
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n");
  ChatTemplateOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  out = broken.apply(std::span<const ChatMessage>(messages.data(), 1), no_prompt);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|im_start|>system\nBe brief.<|im_end|>\n");
}

TEST(ChatTemplate, StrictParseReportsThePosition) {
  Result<ChatTemplate> t = ChatTemplate::parse("ok\n{{ messages[0 }}", "", "");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().message();
}

TEST(ChatTemplate, ExtraKwargsAndBadInputs) {
  ChatTemplate t =
      ChatTemplate::load("{{ greeting }} {{ messages|length }} {{ tools is none }}", "", "");
  ChatTemplateOptions options;
  options.kwargs = {{"greeting", "hey"}};
  Result<std::string> out = t.apply({}, options);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "hey 0 True");
  EXPECT_FALSE(t.apply_json(OrderedJson::object()).ok());
  options.kwargs = OrderedJson::array();
  EXPECT_FALSE(t.apply({}, options).ok());
}

TEST(ChatTemplate, LimitsApply) {
  ChatTemplate t = ChatTemplate::load("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", "", "");
  ChatTemplateOptions options;
  options.limits.max_output_bytes = 4096;
  Result<std::string> out = t.apply({}, options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

// tokenizer.chat_template and BOS / EOS texts from refdata vocabulary files.
TEST(ChatTemplate, FromGguf) {
  OrderedJson cases = OrderedJson::parse(read_file(kData + "/gguf_chat.json"));
  int rendered = 0;
  for (const auto& entry : cases["cases"]) {
    std::string vocab = entry["vocab"].get<std::string>();
    std::string path = std::string(FOLIO_REFDATA_DIR) + "/tokenizer/ggml-vocab-" + vocab + ".gguf";
    Result<gguf::GgufFile> file = gguf::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const tokenizer::Tokenizer* tok =
        tokenizer::testing::cached_tokenizer(path);
    ASSERT_NE(tok, nullptr);
    ChatTemplate t = ChatTemplate::from_gguf(*file, tok->vocab());
    EXPECT_EQ(t.is_fallback(), !entry["has_template"].get<bool>()) << vocab;
    for (const auto& [case_name, want] : entry["results"].items()) {
      const OrderedJson& c = corpus_case(case_name);
      ChatTemplateOptions options;
      options.tools = c["tools"];
      options.now = fixed_now();
      jinja::Error error;
      Result<std::string> out = t.apply_json(c["messages"], options, &error);
      if (want.contains("output")) {
        ASSERT_TRUE(out.ok()) << vocab << " / " << case_name << ": " << out.status().to_string();
        EXPECT_EQ(*out, want["output"].get<std::string>()) << vocab << " / " << case_name;
      } else {
        ASSERT_FALSE(out.ok());
        EXPECT_EQ(error.message, want["error"]["message"].get<std::string>());
      }
      ++rendered;
    }
  }
  EXPECT_EQ(rendered, 4);
}

}  // namespace
}  // namespace folio::chat
