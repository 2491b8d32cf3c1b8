#include "server/chat_prompt.h"

#include <fmt/format.h>

#include <random>
#include <string_view>

namespace folio::server {

namespace {

constexpr std::string_view kChatPromptMarkerEnd = "]]";

// Calls f(std::string&) for every string value in j (object keys are not
// rendered as content by templates and stay as sent).
template <typename F>
void chat_prompt_each_string(Json* j, F&& f) {
  if (j->is_string()) {
    f(j->get_ref<std::string&>());
  } else if (j->is_structured()) {
    for (Json& v : *j) chat_prompt_each_string(&v, f);
  }
}

template <typename F>
void chat_prompt_each_string(const Json& j, F&& f) {
  if (j.is_string()) {
    f(j.get_ref<const std::string&>());
  } else if (j.is_structured()) {
    for (const Json& v : j) chat_prompt_each_string(v, f);
  }
}

std::string chat_prompt_nonce() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  // 19 digits: any value below 10^19 fits a uint64_t.
  return fmt::format("{:019}", rng() % 10'000'000'000'000'000'000ull);
}

// One rendering attempt with markers under `prefix` ("[[NONCE#"). False
// (nothing rendered) when a request string holds the prefix already.
struct ChatPromptDefused {
  Json messages, tools, kwargs;
  std::vector<std::string> texts;  // marker K stands for texts[K]
};

bool chat_prompt_defuse(const tokenizer::Tokenizer& tok, const std::string& prefix,
                        ChatPromptDefused* d) {
  bool clash = false;
  std::vector<tokenizer::TextSpan> spans;
  auto defuse = [&](std::string& s) {
    if (s.find(prefix) != std::string::npos) clash = true;
    spans.clear();
    tok.find_control_texts(s, &spans);
    if (spans.empty()) return;
    std::string out;
    out.reserve(s.size() + spans.size() * (prefix.size() + 8));
    size_t at = 0;
    for (const tokenizer::TextSpan& span : spans) {
      out.append(s, at, span.begin - at);
      out += prefix;
      out += std::to_string(d->texts.size());
      out += kChatPromptMarkerEnd;
      d->texts.emplace_back(s, span.begin, span.end - span.begin);
      at = span.end;
    }
    out.append(s, at);
    s = std::move(out);
  };
  chat_prompt_each_string(&d->messages, defuse);
  chat_prompt_each_string(&d->tools, defuse);
  chat_prompt_each_string(&d->kwargs, defuse);
  return !clash;
}

// Replaces the markers in `rendered` by their texts; the spans they take.
Result<ChatPrompt> chat_prompt_restore(const std::string& rendered, const std::string& prefix,
                                       const std::vector<std::string>& texts) {
  ChatPrompt p;
  p.text.reserve(rendered.size());
  size_t at = 0;
  for (size_t m = rendered.find(prefix); m != std::string::npos; m = rendered.find(prefix, at)) {
    p.text.append(rendered, at, m - at);
    size_t i = m + prefix.size();
    size_t k = 0;
    const size_t digits_begin = i;
    while (i < rendered.size() && rendered[i] >= '0' && rendered[i] <= '9' &&
           i - digits_begin < 9) {
      k = k * 10 + static_cast<size_t>(rendered[i] - '0');
      ++i;
    }
    if (i == digits_begin || k >= texts.size() ||
        std::string_view(rendered).substr(i, kChatPromptMarkerEnd.size()) != kChatPromptMarkerEnd) {
      return invalid_argument(
          "the chat template cut apart message text that holds control-token text; such text "
          "cannot be placed safely (the server's --allow-special-in-content passes it as tokens)");
    }
    const size_t begin = p.text.size();
    p.text += texts[k];
    if (!p.literal.empty() && p.literal.back().end == begin) {
      p.literal.back().end = p.text.size();  // adjacent texts: one span
    } else {
      p.literal.push_back({begin, p.text.size()});
    }
    at = i + kChatPromptMarkerEnd.size();
  }
  p.text.append(rendered, at);
  return p;
}

}  // namespace

Result<ChatPrompt> render_chat_prompt(const chat::ChatTemplate& tmpl,
                                      const tokenizer::Tokenizer& tok, const Json& messages,
                                      const chat::ChatTemplateOptions& options,
                                      bool special_in_content) {
  bool any = false;
  if (!special_in_content) {
    std::vector<tokenizer::TextSpan> spans;
    auto look = [&](const std::string& s) {
      if (any) return;
      tok.find_control_texts(s, &spans);
      any = !spans.empty();
    };
    chat_prompt_each_string(messages, look);
    chat_prompt_each_string(options.tools, look);
    chat_prompt_each_string(options.kwargs, look);
  }
  if (!any) {
    Result<std::string> text = tmpl.apply_json(messages, options);
    if (!text.ok()) return text.status();
    return ChatPrompt{std::move(*text), {}};
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string prefix = "[[" + chat_prompt_nonce() + "#";
    if (tmpl.source().find(prefix) != std::string::npos) continue;
    ChatPromptDefused d{messages, options.tools, options.kwargs, {}};
    if (!chat_prompt_defuse(tok, prefix, &d)) continue;
    chat::ChatTemplateOptions o = options;
    o.tools = std::move(d.tools);
    o.kwargs = std::move(d.kwargs);
    Result<std::string> rendered = tmpl.apply_json(d.messages, o);
    if (!rendered.ok()) return rendered.status();
    return chat_prompt_restore(*rendered, prefix, d.texts);
  }
  return internal_error("no marker nonce absent from the request was found");
}

}  // namespace folio::server
