#include "chat/chat_template.h"

#include "core/check.h"
#include "core/log.h"

namespace folio::chat {

namespace {

constexpr std::string_view kChatMl =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
    "{%- if message['content'] is string -%}\n"
    "{{- message['content'] -}}\n"
    "{%- elif message['content'] is iterable and message['content'] is not mapping -%}\n"
    "{%- for part in message['content'] -%}\n"
    "{%- if part is mapping and part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- endif -%}\n"
    "{{- '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";

}  // namespace

ChatMessage ChatMessage::text(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

OrderedJson ChatMessage::to_json() const {
  OrderedJson j = OrderedJson::object();
  j["role"] = role;
  j["content"] = content;
  if (reasoning_content) j["reasoning_content"] = *reasoning_content;
  if (!tool_calls.empty()) {
    OrderedJson calls = OrderedJson::array();
    for (const auto& c : tool_calls) {
      OrderedJson call = OrderedJson::object();
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = OrderedJson{{"name", c.name}, {"arguments", c.arguments}};
      calls.push_back(std::move(call));
    }
    j["tool_calls"] = std::move(calls);
  }
  if (tool_call_id) j["tool_call_id"] = *tool_call_id;
  if (name) j["name"] = *name;
  return j;
}

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, std::string bos_token,
                                         std::string eos_token) {
  Result<jinja::Template> t = jinja::Template::parse(source);
  if (!t.ok()) return t.status().with_context("chat template");
  return ChatTemplate(std::move(t).value(), std::string(source), std::move(bos_token),
                      std::move(eos_token));
}

ChatTemplate ChatTemplate::chatml(std::string bos_token, std::string eos_token) {
  Result<jinja::Template> t = jinja::Template::parse(kChatMl);
  FOLIO_CHECK_MSG(t.ok(), "ChatML fallback template: {}", t.status().to_string());
  return ChatTemplate(std::move(t).value(), std::string(kChatMl), std::move(bos_token),
                      std::move(eos_token));
}

ChatTemplate ChatTemplate::load(std::string_view source, std::string bos_token,
                                std::string eos_token) {
  std::string reason;
  if (source.empty()) {
    reason = "the model has no chat template";
  } else {
    Result<ChatTemplate> t = parse(source, bos_token, eos_token);
    if (t.ok()) return std::move(t).value();
    reason = t.status().message();
  }
  FOLIO_LOG_ERROR("chat template unusable ({}); using the ChatML fallback", reason);
  ChatTemplate fallback = chatml(std::move(bos_token), std::move(eos_token));
  fallback.fallback_ = true;
  fallback.fallback_reason_ = std::move(reason);
  return fallback;
}

ChatTemplate ChatTemplate::from_gguf(const gguf::GgufFile& file, const tokenizer::Vocab& vocab) {
  auto token_text = [&](tokenizer::TokenId id) {
    return vocab.valid(id) ? std::string(vocab.text(id)) : std::string();
  };
  std::string bos = token_text(vocab.bos());
  std::string eos = token_text(vocab.eos());
  Result<std::string_view> source = file.get_string("tokenizer.chat_template", "");
  if (!source.ok()) {
    FOLIO_LOG_ERROR("tokenizer.chat_template: {}", source.status().to_string());
    return load("", std::move(bos), std::move(eos));
  }
  return load(*source, std::move(bos), std::move(eos));
}

Result<std::string> ChatTemplate::apply(std::span<const ChatMessage> messages,
                                        const ChatTemplateOptions& options,
                                        jinja::Error* error) const {
  OrderedJson list = OrderedJson::array();
  for (const auto& m : messages) list.push_back(m.to_json());
  return apply_json(list, options, error);
}

Result<std::string> ChatTemplate::apply_json(const OrderedJson& messages,
                                             const ChatTemplateOptions& options,
                                             jinja::Error* error) const {
  if (!messages.is_array()) return invalid_argument("chat template: messages must be a list");
  if (!options.kwargs.is_object())
    return invalid_argument("chat template: extra kwargs must be an object");
  // Hugging Face: render(messages=..., tools=..., documents=...,
  // add_generation_prompt=..., **special_tokens, **kwargs); later keys win.
  OrderedJson vars = OrderedJson::object();
  vars["messages"] = messages;
  vars["tools"] = options.tools;
  vars["documents"] = options.documents;
  vars["add_generation_prompt"] = options.add_generation_prompt;
  vars["bos_token"] = bos_;
  vars["eos_token"] = eos_;
  for (const auto& [k, v] : options.kwargs.items()) vars[k] = v;
  jinja::RenderOptions render = options.limits;
  render.now = options.now;
  return template_.render(vars, render, error);
}

}  // namespace folio::chat
