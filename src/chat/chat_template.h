// Chat templates: a conversation -> the prompt text a model was trained on,
// by rendering the model's `tokenizer.chat_template` (GGUF metadata) with
// folio's Jinja engine (src/jinja) the way Hugging Face's apply_chat_template
// renders it. The template sees:
//   messages               the conversation (role, content, tool_calls, ...)
//   tools                  OpenAI-style tool definitions, or None
//   documents              retrieval documents, or None
//   add_generation_prompt  open an assistant turn at the end
//   bos_token, eos_token   the vocabulary's BOS / EOS texts
//   ... any extra kwargs   (enable_thinking, reasoning_effort, ...)
// and the helpers raise_exception(msg), strftime_now(fmt), tojson.
//
// Fallback (documented behaviour): a model without a chat template, or with
// one folio cannot parse (syntax error, unsupported tag or filter), gets
// ChatML, with an error logged at load time naming the reason:
//   <|im_start|>{role}\n{text content}<|im_end|>\n ... [<|im_start|>assistant\n]
// (text parts of list contents are concatenated; tool calls are not
// rendered by the fallback). A template that parses but fails on a given
// conversation (its own raise_exception, missing tools, ...) is not replaced:
// apply() returns that error for that request.
#pragma once

#include <nlohmann/json.hpp>

#include <ctime>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "jinja/template.h"
#include "tokenizer/vocab.h"

namespace folio::chat {

using OrderedJson = nlohmann::ordered_json;

struct ChatToolCall {
  std::string id;
  std::string name;
  // As the client sent it: an object (what most templates expect) or a JSON
  // string (OpenAI's wire format); passed to the template unchanged.
  OrderedJson arguments = OrderedJson::object();
};

struct ChatMessage {
  std::string role;
  // A string, null, or a list of parts ([{"type": "text", "text": "..."}]).
  OrderedJson content = "";
  std::optional<std::string> reasoning_content;
  std::vector<ChatToolCall> tool_calls;     // assistant messages
  std::optional<std::string> tool_call_id;  // tool results
  std::optional<std::string> name;

  static ChatMessage text(std::string role, std::string content);
  // The message as the template sees it; optional fields only when set:
  // {"role", "content", "reasoning_content"?, "tool_calls"?: [{"id", "type":
  // "function", "function": {"name", "arguments"}}], "tool_call_id"?, "name"?}.
  OrderedJson to_json() const;
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  OrderedJson tools;                           // null (-> None) or a list of tool definitions
  OrderedJson documents;                       // null (-> None) or a list of documents
  OrderedJson kwargs = OrderedJson::object();  // extra template variables
  // strftime_now() date; the local clock when unset.
  std::optional<std::tm> now;
  jinja::RenderOptions limits;  // output / step / recursion limits (now is taken from above)
};

class ChatTemplate {
 public:
  // Strict: the template must parse.
  static Result<ChatTemplate> parse(std::string_view source, std::string bos_token,
                                    std::string eos_token);
  // Never fails: an empty or unparsable source logs an error and gives the
  // ChatML fallback (is_fallback(), fallback_reason()).
  static ChatTemplate load(std::string_view source, std::string bos_token, std::string eos_token);
  // From GGUF metadata (`tokenizer.chat_template`) and the vocabulary's
  // BOS / EOS texts, with the same fallback as load().
  static ChatTemplate from_gguf(const gguf::GgufFile& file, const tokenizer::Vocab& vocab);
  static ChatTemplate chatml(std::string bos_token, std::string eos_token);

  // Renders a conversation. Errors (InvalidArgument) carry the template's
  // message, e.g. "template: TemplateError at line 3, column 5: Conversation
  // roles must alternate user/assistant/user/assistant/...".
  Result<std::string> apply(std::span<const ChatMessage> messages,
                            const ChatTemplateOptions& options = {},
                            jinja::Error* error = nullptr) const;
  // Same with messages already in JSON form (a list of message objects).
  Result<std::string> apply_json(const OrderedJson& messages,
                                 const ChatTemplateOptions& options = {},
                                 jinja::Error* error = nullptr) const;

  bool is_fallback() const { return fallback_; }
  const std::string& fallback_reason() const { return fallback_reason_; }
  const std::string& source() const { return source_; }
  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }

 private:
  ChatTemplate(jinja::Template t, std::string source, std::string bos, std::string eos)
      : template_(std::move(t)),
        source_(std::move(source)),
        bos_(std::move(bos)),
        eos_(std::move(eos)) {}

  jinja::Template template_;
  std::string source_;
  std::string bos_, eos_;
  bool fallback_ = false;
  std::string fallback_reason_;
};

}  // namespace folio::chat
