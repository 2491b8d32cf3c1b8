#include "chat/tool_calls.h"

namespace folio::chat {

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// The longest suffix of `text` that is a proper prefix of `marker`: text
// that may become the marker once more arrives.
size_t partial_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Where the JSON object or array starting at s[0] ends (one past its
// closing bracket), or npos when it does not close within s.
size_t json_value_end(std::string_view s) {
  if (s.empty() || (s[0] != '{' && s[0] != '[')) return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool parse_json(std::string_view text, Json* out) {
  *out = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

// Arguments as OpenAI sends them: the JSON text of an object. An object is
// dumped; a string must itself hold a JSON object.
bool arguments_text(const Json& args, std::string* out) {
  if (args.is_object()) {
    *out = args.dump(-1, ' ', false, Json::error_handler_t::replace);
    return true;
  }
  if (args.is_string()) {
    Json inner;
    if (!parse_json(args.get<std::string>(), &inner) || !inner.is_object()) return false;
    *out = inner.dump(-1, ' ', false, Json::error_handler_t::replace);
    return true;
  }
  return false;
}

// {"name": N, <args_key>: {...}, "id"?} -> a call.
bool call_from_object(const Json& o, std::initializer_list<const char*> args_keys,
                      ParsedToolCall* out) {
  if (!o.is_object()) return false;
  auto name = o.find("name");
  if (name == o.end() || !name->is_string() || name->get<std::string>().empty()) return false;
  ParsedToolCall c;
  c.name = name->get<std::string>();
  c.arguments = "{}";
  for (const char* key : args_keys) {
    if (auto a = o.find(key); a != o.end()) {
      if (!arguments_text(*a, &c.arguments)) return false;
      break;
    }
  }
  if (auto id = o.find("id"); id != o.end() && id->is_string()) c.id = id->get<std::string>();
  *out = std::move(c);
  return true;
}

bool parse_hermes_call(std::string_view body, ParsedToolCall* out) {
  Json j;
  return parse_json(trim(body), &j) && call_from_object(j, {"arguments", "parameters"}, out);
}

// The JSON type a tool's schema gives parameter `param`, "" if unknown.
std::string schema_type(const Json* tools, std::string_view tool, std::string_view param) {
  if (tools == nullptr || !tools->is_array()) return "";
  for (const Json& t : *tools) {
    const Json* f = t.is_object() && t.contains("function") ? &t["function"] : &t;
    if (!f->is_object() || f->value("name", "") != tool) continue;
    auto params = f->find("parameters");
    if (params == f->end() || !params->is_object()) return "";
    auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    auto p = props->find(std::string(param));
    if (p == props->end() || !p->is_object()) return "";
    auto type = p->find("type");
    return type != p->end() && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

// <function=N>\n<parameter=P>\nvalue\n</parameter>...</function>
bool parse_qwen_xml_call(std::string_view body, const Json* tools, ParsedToolCall* out) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
  std::string_view s = trim(body);
  if (!starts_with(s, kFunction)) return false;
  const size_t name_end = s.find('>');
  if (name_end == std::string_view::npos) return false;
  ParsedToolCall c;
  c.name = std::string(trim(s.substr(kFunction.size(), name_end - kFunction.size())));
  if (c.name.empty()) return false;
  s = trim(s.substr(name_end + 1));
  Json args = Json::object();
  while (starts_with(s, kParam)) {
    const size_t pname_end = s.find('>');
    if (pname_end == std::string_view::npos) return false;
    const std::string name(trim(s.substr(kParam.size(), pname_end - kParam.size())));
    s = s.substr(pname_end + 1);
    const size_t end = s.find(kParamEnd);
    if (name.empty() || end == std::string_view::npos) return false;
    std::string_view value = s.substr(0, end);
    if (starts_with(value, "\n")) value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    Json v;
    if (schema_type(tools, c.name, name) != "string" && parse_json(value, &v)) {
      args[name] = std::move(v);
    } else {
      args[name] = std::string(value);
    }
    s = trim(s.substr(end + kParamEnd.size()));
  }
  if (!starts_with(s, kFunctionEnd) || !trim(s.substr(kFunctionEnd.size())).empty()) return false;
  c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
  *out = std::move(c);
  return true;
}

// Everything from [TOOL_CALLS] on.
bool parse_mistral_calls(std::string_view s, std::vector<ParsedToolCall>* calls) {
  std::vector<ParsedToolCall> out;
  s = trim(s);
  while (!s.empty()) {
    if (!starts_with(s, kMistralCalls)) return false;
    s = trim(s.substr(kMistralCalls.size()));
    if (!s.empty() && s[0] == '[') {  // a JSON list of calls
      const size_t end = json_value_end(s);
      Json list;
      if (end == std::string_view::npos || !parse_json(s.substr(0, end), &list) ||
          !list.is_array() || list.empty()) {
        return false;
      }
      for (const Json& o : list) {
        ParsedToolCall c;
        if (!call_from_object(o, {"arguments", "parameters"}, &c)) return false;
        out.push_back(std::move(c));
      }
      s = trim(s.substr(end));
      continue;
    }
    // name[CALL_ID]id?[ARGS]{...}
    const size_t args = s.find(kMistralArgs);
    if (args == std::string_view::npos) return false;
    std::string_view head = s.substr(0, args);
    ParsedToolCall c;
    if (const size_t id = head.find(kMistralCallId); id != std::string_view::npos) {
      c.id = std::string(trim(head.substr(id + kMistralCallId.size())));
      head = head.substr(0, id);
    }
    c.name = std::string(trim(head));
    if (c.name.empty() || c.name.find_first_of(" \n{}[]\"") != std::string::npos) return false;
    s = trim(s.substr(args + kMistralArgs.size()));
    const size_t end = json_value_end(s);
    Json a;
    if (end == std::string_view::npos || !parse_json(s.substr(0, end), &a) ||
        !arguments_text(a, &c.arguments)) {
      return false;
    }
    out.push_back(std::move(c));
    s = trim(s.substr(end));
  }
  if (out.empty()) return false;
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// The whole answer: [<|python_tag|>] {...} [; {...}]...
bool parse_llama3_calls(std::string_view s, std::vector<ParsedToolCall>* calls) {
  std::vector<ParsedToolCall> out;
  s = trim(s);
  if (starts_with(s, kPythonTag)) s = trim(s.substr(kPythonTag.size()));
  while (!s.empty()) {
    const size_t end = json_value_end(s);
    Json o;
    ParsedToolCall c;
    if (end == std::string_view::npos || s[0] != '{' || !parse_json(s.substr(0, end), &o) ||
        !call_from_object(o, {"parameters", "arguments"}, &c)) {
      return false;
    }
    out.push_back(std::move(c));
    s = trim(s.substr(end));
    while (!s.empty() && (s[0] == ';' || is_space(s[0]))) s.remove_prefix(1);
  }
  if (out.empty()) return false;
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
  if (src.find(kHermesOpen) != std::string_view::npos &&
      src.find("<function=") != std::string_view::npos) {
    return ToolCallFormat::kQwenXml;
  }
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (src.find(kMistralCalls) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (src.find(kPythonTag) != std::string_view::npos) return ToolCallFormat::kLlama3;
  if (src.find("<|start_header_id|>") != std::string_view::npos &&
      src.find("\"parameters\"") != std::string_view::npos) {
    return ToolCallFormat::kLlama3;
  }
  return ToolCallFormat::kNone;
}

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kQwenXml:
      return "qwen_xml";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kNone:
      break;
  }
  return "none";
}

bool tool_call_markers_are_special(ToolCallFormat f) {
  return f == ToolCallFormat::kMistral || f == ToolCallFormat::kLlama3;
}

void ToolCallParser::feed(std::string_view text, std::string* content,
                          std::vector<ParsedToolCall>* calls) {
  buf_ += text;
  switch (format_) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
      return feed_tagged(content, calls);
    case ToolCallFormat::kMistral:
      return feed_mistral(content);
    case ToolCallFormat::kLlama3:
      return feed_llama3(content);
    case ToolCallFormat::kNone:
      break;
  }
  *content += buf_;
  buf_.clear();
}

bool ToolCallParser::parse_tagged_call(std::string_view body, ParsedToolCall* out) const {
  return format_ == ToolCallFormat::kQwenXml ? parse_qwen_xml_call(body, tools_, out)
                                              : parse_hermes_call(body, out);
}

void ToolCallParser::feed_tagged(std::string* content, std::vector<ParsedToolCall>* calls) {
  for (;;) {
    if (mode_ != Mode::kCall) {
      const size_t open = buf_.find(kHermesOpen);
      if (open == std::string::npos) {
        const size_t keep = partial_suffix(buf_, kHermesOpen);
        content->append(buf_, 0, buf_.size() - keep);
        buf_.erase(0, buf_.size() - keep);
        mode_ = Mode::kContent;
        return;
      }
      content->append(buf_, 0, open);
      buf_.erase(0, open + kHermesOpen.size());
      mode_ = Mode::kCall;
    }
    const size_t close = buf_.find(kHermesClose);
    if (close == std::string::npos) return;  // the call is still coming
    ParsedToolCall c;
    if (parse_tagged_call(std::string_view(buf_).substr(0, close), &c)) {
      calls->push_back(std::move(c));
    } else {
      content->append(kHermesOpen);
      content->append(buf_, 0, close + kHermesClose.size());
    }
    buf_.erase(0, close + kHermesClose.size());
    mode_ = Mode::kContent;
  }
}

void ToolCallParser::feed_mistral(std::string* content) {
  if (mode_ == Mode::kCapture) return;  // parsed at the end
  const size_t at = buf_.find(kMistralCalls);
  if (at != std::string::npos) {
    content->append(buf_, 0, at);
    buf_.erase(0, at);
    mode_ = Mode::kCapture;
    return;
  }
  const size_t keep = partial_suffix(buf_, kMistralCalls);
  content->append(buf_, 0, buf_.size() - keep);
  buf_.erase(0, buf_.size() - keep);
}

void ToolCallParser::feed_llama3(std::string* content) {
  if (mode_ == Mode::kCapture) return;  // parsed at the end
  if (mode_ == Mode::kUndecided) {
    const std::string_view t = trim(buf_);
    if (t.empty()) return;
    if (t[0] == '{' || starts_with(t, kPythonTag)) {
      mode_ = Mode::kCapture;
      return;
    }
    if (starts_with(kPythonTag, t)) return;  // may still become the tag
    mode_ = Mode::kContent;
  }
  *content += buf_;
  buf_.clear();
}

void ToolCallParser::finish(std::string* content, std::vector<ParsedToolCall>* calls) {
  switch (format_) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
      if (mode_ == Mode::kCall) {
        // A model that ends right after the call, without the closing tag.
        ParsedToolCall c;
        if (parse_tagged_call(buf_, &c)) {
          calls->push_back(std::move(c));
        } else {
          content->append(kHermesOpen);
          content->append(buf_);
        }
        buf_.clear();
      }
      break;
    case ToolCallFormat::kMistral:
      if (mode_ == Mode::kCapture && parse_mistral_calls(buf_, calls)) buf_.clear();
      break;
    case ToolCallFormat::kLlama3:
      if (mode_ == Mode::kCapture && parse_llama3_calls(buf_, calls)) buf_.clear();
      break;
    case ToolCallFormat::kNone:
      break;
  }
  *content += buf_;
  buf_.clear();
  mode_ = Mode::kContent;
}

void ToolCallParser::parse_all(ToolCallFormat format, const Json* tools, std::string_view text,
                               std::string* content, std::vector<ParsedToolCall>* calls) {
  ToolCallParser p(format, tools);
  p.feed(text, content, calls);
  p.finish(content, calls);
}

}  // namespace folio::chat
