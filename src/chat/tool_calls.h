// Tool calls in a model's output: which format a chat template teaches the
// model, and an incremental parser that splits generated text into content
// and OpenAI tool calls, for streamed deltas and whole answers alike.
//
// Formats (what the model writes):
//   hermes   <tool_call>{"name": N, "arguments": {...}}</tool_call>, any
//            number, between content (Hermes, Qwen 2.5 / 3, many fine-tunes)
//   qwen_xml <tool_call><function=N><parameter=P>value</parameter>...
//            </function></tool_call> (Qwen3-Coder, Qwen 3.5): a value is
//            kept as a string where the tool's schema says string, else
//            read as JSON when it is JSON
//   llama3   the whole answer is JSON: {"name": N, "parameters": {...}}
//            (or "arguments"), optionally after <|python_tag|>, several
//            separated by ';' (Llama 3.1 / 3.2 / 3.3 custom tools)
//   mistral  content, then [TOOL_CALLS] and either a JSON list of {"name",
//            "arguments", "id"?} or name[ARGS]{...} (repeated, each after
//            [TOOL_CALLS]; [CALL_ID]id before [ARGS] is accepted)
// A call that does not parse (bad JSON, no name) is not a call: its text
// goes out as content, so nothing the model wrote is lost.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace folio::chat {

using Json = nlohmann::ordered_json;

enum class ToolCallFormat { kNone, kHermes, kQwenXml, kLlama3, kMistral };

// The format a chat template's source renders tool calls in; kNone when it
// shows none folio knows.
ToolCallFormat detect_tool_call_format(std::string_view template_source);
const char* tool_call_format_name(ToolCallFormat f);
// Whether the format's markers are control tokens the detokenizer hides
// unless asked to render them (mistral's [TOOL_CALLS], llama3's
// <|python_tag|>).
bool tool_call_markers_are_special(ToolCallFormat f);

struct ParsedToolCall {
  std::string id;         // the model's own id when it wrote one, else ""
  std::string name;
  std::string arguments;  // JSON text of an object (OpenAI's wire format)
};

class ToolCallParser {
 public:
  // `tools`: the request's tool definitions (OpenAI's [{"type":
  // "function", "function": {"name", "parameters"}}]), null if none; read
  // by qwen_xml for the parameters' types. Borrowed.
  explicit ToolCallParser(ToolCallFormat format, const Json* tools = nullptr)
      : format_(format), tools_(tools) {}

  // Feeds generated text: appends to *content what is now known to be
  // content and to *calls the calls completed. Text that may still turn
  // out to start a call is held back.
  void feed(std::string_view text, std::string* content, std::vector<ParsedToolCall>* calls);
  // The end of generation: what is held goes out (an unfinished call as
  // content).
  void finish(std::string* content, std::vector<ParsedToolCall>* calls);

  // Parses a whole answer at once.
  static void parse_all(ToolCallFormat format, const Json* tools, std::string_view text,
                        std::string* content, std::vector<ParsedToolCall>* calls);

 private:
  enum class Mode { kContent, kUndecided, kCall, kCapture };

  void feed_tagged(std::string* content, std::vector<ParsedToolCall>* calls);
  bool parse_tagged_call(std::string_view body, ParsedToolCall* out) const;
  void feed_mistral(std::string* content);
  void feed_llama3(std::string* content);

  ToolCallFormat format_;
  const Json* tools_;
  Mode mode_ = Mode::kUndecided;
  std::string buf_;  // held-back text
};

}  // namespace folio::chat
