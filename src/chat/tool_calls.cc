#include "chat/tool_calls.h"

#include "chat/gemma4_calls.h"
#include "chat/recipient_calls.h"
#include "chat/tool_schema.h"
#include "chat/xml_call_stream.h"

#include <algorithm>

#include "core/json_brackets.h"

namespace folio::chat {

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kDeepSeekOpen = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDeepSeekClose = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDeepSeekCall = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";
constexpr std::string_view kDeepSeekCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDsmlOpen = "<｜DSML｜function_calls>";
constexpr std::string_view kDsmlClose = "</｜DSML｜function_calls>";
constexpr std::string_view kDsmlToken = "｜DSML｜";
constexpr std::string_view kKimiOpen = "<|tool_calls_section_begin|>";
constexpr std::string_view kKimiClose = "<|tool_calls_section_end|>";
constexpr std::string_view kSeedOpen = "<seed:tool_call>";
constexpr std::string_view kSeedClose = "</seed:tool_call>";
constexpr std::string_view kMiniMaxOpen = "<minimax:tool_call>";
constexpr std::string_view kMiniMaxClose = "</minimax:tool_call>";
constexpr std::string_view kCommandOpen = "<|START_ACTION|>";
constexpr std::string_view kCommandClose = "<|END_ACTION|>";
constexpr std::string_view kCommandResponse[] = {"<|START_RESPONSE|>", "<|END_RESPONSE|>"};
constexpr std::string_view kGraniteCalls = "<|tool_call|>";
constexpr std::string_view kGraniteResponse[] = {"<response>", "</response>"};
constexpr std::string_view kPhi4Open = "<|tool_call|>";
constexpr std::string_view kPhi4Close = "<|/tool_call|>";
constexpr std::string_view kFunctionaryOpen = "<function=";
constexpr std::string_view kFunctionaryClose = "</function>";
constexpr std::string_view kLfm2Open = "<|tool_call_start|>";
constexpr std::string_view kLfm2Close = "<|tool_call_end|>";
constexpr std::string_view kNemotronOpen = "<TOOLCALL>";
constexpr std::string_view kNemotronClose = "</TOOLCALL>";
constexpr std::string_view kGlmKey = "<arg_key>";
constexpr std::string_view kGlmKeyEnd = "</arg_key>";
constexpr std::string_view kGlmValue = "<arg_value>";
constexpr std::string_view kGlmValueEnd = "</arg_value>";

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
  const size_t close = walk_json_brackets(s, [](size_t, int depth) { return depth != 0; });
  return close == std::string_view::npos ? close : close + 1;
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
    args[name] = tool_param_value(tools, c.name, name, value);
    s = trim(s.substr(end + kParamEnd.size()));
  }
  if (!starts_with(s, kFunctionEnd) || !trim(s.substr(kFunctionEnd.size())).empty()) return false;
  c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
  *out = std::move(c);
  return true;
}

// N<arg_key>k</arg_key><arg_value>v</arg_value>... (GLM-4.5+), whitespace
// between the parts allowed; the value is taken verbatim.
bool parse_glm_call(std::string_view body, const Json* tools, ParsedToolCall* out) {
  std::string_view s = trim(body);
  const size_t name_end = s.find(kGlmKey);
  ParsedToolCall c;
  c.name = std::string(trim(s.substr(0, name_end)));
  if (c.name.empty() || c.name.find_first_of("<>{}\"\n ") != std::string::npos) return false;
  s = name_end == std::string_view::npos ? std::string_view() : s.substr(name_end);
  Json args = Json::object();
  while (!s.empty()) {
    if (!starts_with(s, kGlmKey)) return false;
    const size_t key_end = s.find(kGlmKeyEnd);
    if (key_end == std::string_view::npos) return false;
    const std::string key(trim(s.substr(kGlmKey.size(), key_end - kGlmKey.size())));
    s = trim(s.substr(key_end + kGlmKeyEnd.size()));
    if (key.empty() || !starts_with(s, kGlmValue)) return false;
    const size_t value_end = s.find(kGlmValueEnd);
    if (value_end == std::string_view::npos) return false;
    args[key] = tool_param_value(tools, c.name, key,
                                      s.substr(kGlmValue.size(), value_end - kGlmValue.size()));
    s = trim(s.substr(value_end + kGlmValueEnd.size()));
  }
  c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
  *out = std::move(c);
  return true;
}

// [{"name": N, "arguments": {...}}, ...] (Nemotron's <TOOLCALL> body).
bool parse_json_call_list(std::string_view body, std::vector<ParsedToolCall>* calls) {
  Json list;
  if (!parse_json(trim(body), &list) || !list.is_array() || list.empty()) return false;
  std::vector<ParsedToolCall> out;
  for (const Json& o : list) {
    ParsedToolCall c;
    if (!call_from_object(o, {"arguments", "parameters"}, &c)) return false;
    out.push_back(std::move(c));
  }
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// The generic format's whole answer: {"tool_call": {...}}, {"tool_calls":
// [...]} or {"response": "..."} (the last as *content).
bool parse_generic_answer(std::string_view text, std::string* content,
                          std::vector<ParsedToolCall>* calls) {
  Json o;
  if (!parse_json(trim(text), &o) || !o.is_object() || o.size() != 1) return false;
  if (auto r = o.find("response"); r != o.end()) {
    if (!r->is_string()) return false;
    *content += r->get<std::string>();
    return true;
  }
  if (auto c = o.find("tool_call"); c != o.end()) {
    ParsedToolCall call;
    if (!call_from_object(*c, {"arguments", "parameters"}, &call)) return false;
    calls->push_back(std::move(call));
    return true;
  }
  if (auto l = o.find("tool_calls"); l != o.end() && l->is_array()) {
    return parse_json_call_list(l->dump(), calls);
  }
  return false;
}

void tool_calls_append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Four hex digits at s[0..4) as a number, -1 if they are not.
int tool_calls_hex4(std::string_view s) {
  if (s.size() < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Decodes the JSON string body at the front of *buf (after its opening
// quote) into *out, up to the closing quote (consumed; returns true) or to
// an escape that is not complete yet (held in *buf; returns false). A
// malformed escape is kept as written.
bool tool_calls_decode_string(std::string* buf, std::string* out) {
  size_t i = 0;
  bool closed = false;
  while (i < buf->size()) {
    const char c = (*buf)[i];
    if (c == '"') {
      closed = true;
      ++i;
      break;
    }
    if (c != '\\') {
      *out += c;
      ++i;
      continue;
    }
    if (i + 1 >= buf->size()) break;
    const char e = (*buf)[i + 1];
    if (e != 'u') {
      const char* kFrom = "\"\\/bfnrt";
      const char* kTo = "\"\\/\b\f\n\r\t";
      const char* at = std::char_traits<char>::find(kFrom, 8, e);
      if (at != nullptr) {
        *out += kTo[at - kFrom];
      } else {
        *out += '\\';
        *out += e;
      }
      i += 2;
      continue;
    }
    const std::string_view rest = std::string_view(*buf).substr(i + 2);
    if (rest.size() < 4) break;
    const int hi = tool_calls_hex4(rest);
    if (hi < 0) {
      out->append("\\u");
      i += 2;
      continue;
    }
    if (hi >= 0xD800 && hi < 0xDC00) {  // a surrogate pair: \uD8xx\uDCxx
      if (rest.size() < 10) break;
      const int lo = rest.substr(4, 2) == "\\u" ? tool_calls_hex4(rest.substr(6)) : -1;
      if (lo >= 0xDC00 && lo < 0xE000) {
        tool_calls_append_utf8(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), out);
        i += 12;
        continue;
      }
      tool_calls_append_utf8(0xFFFD, out);
      i += 6;
      continue;
    }
    tool_calls_append_utf8(hi >= 0xDC00 && hi < 0xE000 ? 0xFFFD : static_cast<uint32_t>(hi), out);
    i += 6;
  }
  buf->erase(0, i);
  return closed;
}

// A Python literal (LFM2's call arguments) read into JSON: 'str' / "str"
// (backslash escapes), numbers, True / False / None (and JSON's true /
// false / null), [lists], (tuples, as lists) and {dicts} with string keys.
class ToolCallsPyLiteral {
 public:
  explicit ToolCallsPyLiteral(std::string_view s) : s_(s) {}

  bool value(Json* out, int depth = 0) {
    skip();
    if (at_end() || depth > 64) return false;
    const char c = s_[i_];
    if (c == '\'' || c == '"') {
      std::string str;
      if (!string(&str)) return false;
      *out = std::move(str);
      return true;
    }
    if (c == '[' || c == '(') return list(c == '[' ? ']' : ')', out, depth);
    if (c == '{') return dict(out, depth);
    for (const auto& [word, v] : {std::pair<const char*, Json>{"True", true},
                                  {"False", false},
                                  {"None", nullptr},
                                  {"true", true},
                                  {"false", false},
                                  {"null", nullptr}}) {
      const std::string_view w = word;
      if (s_.substr(i_, w.size()) == w && !ident_char(i_ + w.size())) {
        i_ += w.size();
        *out = v;
        return true;
      }
    }
    return number(out);
  }

  // name(k=v, ...) with a plain identifier name.
  bool call(ParsedToolCall* out) {
    skip();
    const size_t start = i_;
    while (ident_char(i_)) ++i_;
    if (i_ == start || (s_[start] >= '0' && s_[start] <= '9')) return false;
    ParsedToolCall c;
    c.name = std::string(s_.substr(start, i_ - start));
    skip();
    if (!eat('(')) return false;
    Json args = Json::object();
    skip();
    if (!eat(')')) {
      for (;;) {
        skip();
        const size_t k = i_;
        while (ident_char(i_)) ++i_;
        if (i_ == k) return false;
        const std::string key(s_.substr(k, i_ - k));
        skip();
        if (!eat('=')) return false;
        Json v;
        if (!value(&v)) return false;
        args[key] = std::move(v);
        skip();
        if (eat(')')) break;
        if (!eat(',')) return false;
      }
    }
    c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
    *out = std::move(c);
    return true;
  }

  void skip() {
    while (!at_end() && is_space(s_[i_])) ++i_;
  }
  bool eat(char c) {
    if (at_end() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool at_end() const { return i_ >= s_.size(); }

 private:
  bool ident_char(size_t i) const {
    if (i >= s_.size()) return false;
    const char c = s_[i];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  bool string(std::string* out) {
    const char q = s_[i_++];
    while (!at_end()) {
      const char c = s_[i_++];
      if (c == q) return true;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (at_end()) return false;
      const char e = s_[i_++];
      switch (e) {
        case 'n':
          *out += '\n';
          break;
        case 't':
          *out += '\t';
          break;
        case 'r':
          *out += '\r';
          break;
        case '0':
          *out += '\0';
          break;
        case 'u': {
          const int cp = tool_calls_hex4(s_.substr(i_));
          if (cp < 0) return false;
          tool_calls_append_utf8(static_cast<uint32_t>(cp), out);
          i_ += 4;
          break;
        }
        default:
          *out += e;
          break;  // \\ \' \" and the rest as written
      }
    }
    return false;
  }

  bool list(char close, Json* out, int depth) {
    ++i_;
    *out = Json::array();
    skip();
    if (eat(close)) return true;
    for (;;) {
      Json v;
      if (!value(&v, depth + 1)) return false;
      out->push_back(std::move(v));
      skip();
      if (eat(close)) return true;
      if (!eat(',')) return false;
      skip();
      if (eat(close)) return true;  // a trailing comma
    }
  }

  bool dict(Json* out, int depth) {
    ++i_;
    *out = Json::object();
    skip();
    if (eat('}')) return true;
    for (;;) {
      skip();
      std::string key;
      if (at_end() || (s_[i_] != '\'' && s_[i_] != '"') || !string(&key)) return false;
      skip();
      if (!eat(':')) return false;
      Json v;
      if (!value(&v, depth + 1)) return false;
      (*out)[key] = std::move(v);
      skip();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  bool number(Json* out) {
    const size_t start = i_;
    if (!at_end() && (s_[i_] == '-' || s_[i_] == '+')) ++i_;
    while (!at_end() &&
           ((s_[i_] >= '0' && s_[i_] <= '9') || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E' ||
            ((s_[i_] == '-' || s_[i_] == '+') && (s_[i_ - 1] == 'e' || s_[i_ - 1] == 'E')))) {
      ++i_;
    }
    std::string text(s_.substr(start, i_ - start));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    // Python writes 1. and .5; JSON wants digits around the point.
    if (!text.empty() && text.back() == '.') text += '0';
    if (const size_t dot = text.find('.');
        dot != std::string::npos && (dot == 0 || text[dot - 1] == '-')) {
      text.insert(dot, "0");
    }
    return !text.empty() && parse_json(text, out) && out->is_number();
  }

  std::string_view s_;
  size_t i_ = 0;
};

// [name(k=v, ...), ...] (LFM2's <|tool_call_start|> body).
bool parse_lfm2_calls(std::string_view body, std::vector<ParsedToolCall>* calls) {
  ToolCallsPyLiteral p(trim(body));
  std::vector<ParsedToolCall> out;
  if (!p.eat('[')) return false;
  p.skip();
  while (!p.eat(']')) {
    ParsedToolCall c;
    if (!p.call(&c)) return false;
    out.push_back(std::move(c));
    p.skip();
    if (!p.eat(',')) {
      p.skip();
      if (!p.eat(']')) return false;
      break;
    }
    p.skip();
  }
  p.skip();
  if (!p.at_end() || out.empty()) return false;
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// A call's arguments written as JSON: an object, or a string holding one.
bool tool_calls_json_args(std::string_view text, std::string* out) {
  Json a;
  return parse_json(trim(text), &a) && arguments_text(a, out);
}

// Repeated OPEN head SEP args CLOSE, whitespace between: the body of a
// DeepSeek V3.1 or Kimi K2 tool-call section. `head` is the name (DeepSeek)
// or Kimi's id functions.NAME:IDX.
bool parse_sectioned_calls(std::string_view s, std::string_view open, std::string_view sep,
                           std::string_view close, bool kimi_ids,
                           std::vector<ParsedToolCall>* calls) {
  std::vector<ParsedToolCall> out;
  s = trim(s);
  while (!s.empty()) {
    if (!starts_with(s, open)) return false;
    s.remove_prefix(open.size());
    const size_t at_sep = s.find(sep);
    const size_t at_close = s.find(close);
    if (at_sep == std::string_view::npos || at_close == std::string_view::npos ||
        at_close < at_sep) {
      return false;
    }
    ParsedToolCall c;
    std::string head(trim(s.substr(0, at_sep)));
    std::string_view args = s.substr(at_sep + sep.size(), at_close - at_sep - sep.size());
    if (!kimi_ids && head == "function") {
      // DeepSeek R1 / V3: function<sep>NAME\n```json\n{...}\n```
      const size_t nl = args.find('\n');
      if (nl == std::string_view::npos) return false;
      head = std::string(trim(args.substr(0, nl)));
      args = trim(args.substr(nl + 1));
      constexpr std::string_view kFence = "```json", kFenceEnd = "```";
      if (!starts_with(args, kFence) || args.size() < kFence.size() + kFenceEnd.size() ||
          args.substr(args.size() - kFenceEnd.size()) != kFenceEnd) {
        return false;
      }
      args = args.substr(kFence.size(), args.size() - kFence.size() - kFenceEnd.size());
    }
    if (kimi_ids) {
      c.id = head;
      constexpr std::string_view kFunctions = "functions.";
      if (head.rfind(kFunctions, 0) == 0) head.erase(0, kFunctions.size());
      if (const size_t colon = head.rfind(':'); colon != std::string::npos) head.resize(colon);
    }
    c.name = std::move(head);
    if (c.name.empty() || c.name.find_first_of(" \n<>{}\"") != std::string::npos ||
        !tool_calls_json_args(args, &c.arguments)) {
      return false;
    }
    out.push_back(std::move(c));
    s = trim(s.substr(at_close + close.size()));
  }
  if (out.empty()) return false;
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// The value of attribute name="..." at the start of `s` (after the tag
// name), and where the tag closes.
bool tool_calls_name_attr(std::string_view s, std::string* name, size_t* tag_end) {
  constexpr std::string_view kName = "name=\"";
  s = s.substr(0, s.find('>'));
  const size_t at = s.find(kName);
  if (at == std::string_view::npos) return false;
  const size_t end = s.find('"', at + kName.size());
  if (end == std::string_view::npos) return false;
  *name = std::string(s.substr(at + kName.size(), end - at - kName.size()));
  *tag_end = s.size() + 1;
  return !name->empty();
}

// <invoke name="N"><parameter name="k">v</parameter>...</invoke>, repeated
// (MiniMax-M2); values typed by the tool's schema.
bool parse_minimax_calls(std::string_view s, const Json* tools,
                         std::vector<ParsedToolCall>* calls) {
  constexpr std::string_view kInvoke = "<invoke", kInvokeEnd = "</invoke>";
  constexpr std::string_view kParam = "<parameter", kParamEnd = "</parameter>";
  std::vector<ParsedToolCall> out;
  s = trim(s);
  while (!s.empty()) {
    if (!starts_with(s, kInvoke)) return false;
    ParsedToolCall c;
    size_t tag_end = 0;
    if (!tool_calls_name_attr(s, &c.name, &tag_end) || tag_end > s.size()) return false;
    s = trim(s.substr(tag_end));
    Json args = Json::object();
    while (starts_with(s, kParam)) {
      std::string key;
      if (!tool_calls_name_attr(s, &key, &tag_end) || tag_end > s.size()) return false;
      s = s.substr(tag_end);
      const size_t end = s.find(kParamEnd);
      if (end == std::string_view::npos) return false;
      std::string_view value = s.substr(0, end);
      if (starts_with(value, "\n")) value.remove_prefix(1);
      if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
      args[key] = tool_param_value(tools, c.name, key, value);
      s = trim(s.substr(end + kParamEnd.size()));
    }
    if (!starts_with(s, kInvokeEnd)) return false;
    s = trim(s.substr(kInvokeEnd.size()));
    c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
    out.push_back(std::move(c));
  }
  if (out.empty()) return false;
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// [{"tool_call_id": I, "tool_name": N, "parameters": {...}}, ...]
// (Command R7B's action).
bool parse_command_calls(std::string_view body, std::vector<ParsedToolCall>* calls) {
  Json list;
  if (!parse_json(trim(body), &list) || !list.is_array() || list.empty()) return false;
  std::vector<ParsedToolCall> out;
  for (const Json& o : list) {
    if (!o.is_object()) return false;
    auto name = o.find("tool_name");
    if (name == o.end() || !name->is_string() || name->get<std::string>().empty()) return false;
    ParsedToolCall c;
    c.name = name->get<std::string>();
    c.arguments = "{}";
    if (auto p = o.find("parameters"); p != o.end() && !arguments_text(*p, &c.arguments)) {
      return false;
    }
    out.push_back(std::move(c));
  }
  for (auto& c : out) calls->push_back(std::move(c));
  return true;
}

// NAME>{json} (the body of Functionary v3.1's <function=NAME>{json}</function>).
bool parse_functionary_call(std::string_view body, ParsedToolCall* out) {
  const size_t gt = body.find('>');
  if (gt == std::string_view::npos) return false;
  ParsedToolCall c;
  c.name = std::string(trim(body.substr(0, gt)));
  if (c.name.empty() || c.name.find_first_of(" \n<{}\"") != std::string::npos ||
      !tool_calls_json_args(body.substr(gt + 1), &c.arguments)) {
    return false;
  }
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


// The head of a hermes call, `{"name": N, "arguments": {` (or
// "parameters"), at the start of `s`: 1 when read (*name, and *args_at the
// offset of the arguments' '{'), 0 when `s` may still become one, -1 when
// it is not one.
int tool_calls_hermes_head(std::string_view s, std::string* name, size_t* args_at) {
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && is_space(s[i])) ++i;
    return i < s.size();
  };
  // A literal `lit` at s[i]: 1 read, 0 cut short, -1 something else.
  auto lit = [&](std::string_view l) {
    const std::string_view rest = s.substr(i);
    if (starts_with(rest, l)) {
      i += l.size();
      return 1;
    }
    return starts_with(l, rest) ? 0 : -1;
  };
  // A JSON string at s[i] (no newline inside): 1 read into *out.
  auto str = [&](std::string* out) {
    if (s[i] != '"') return -1;
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (s[j] == '\\') {
        ++j;
      } else if (s[j] == '"') {
        Json v;
        if (!parse_json(s.substr(i, j + 1 - i), &v) || !v.is_string()) return -1;
        *out = v.get<std::string>();
        i = j + 1;
        return 1;
      } else if (s[j] == '\n') {
        return -1;
      }
    }
    return 0;
  };
  int r;
  if (!skip()) return 0;
  if ((r = lit("{")) != 1) return r;
  if (!skip()) return 0;
  if ((r = lit("\"name\"")) != 1) return r;
  if (!skip()) return 0;
  if ((r = lit(":")) != 1) return r;
  if (!skip()) return 0;
  if ((r = str(name)) != 1) return r;
  if (name->empty()) return -1;
  if (!skip()) return 0;
  if ((r = lit(",")) != 1) return r;
  if (!skip()) return 0;
  r = lit("\"arguments\"");
  if (r == -1) r = lit("\"parameters\"");
  if (r != 1) return r;
  if (!skip()) return 0;
  if ((r = lit(":")) != 1) return r;
  if (!skip()) return 0;
  if (s[i] != '{') return -1;
  *args_at = i;
  return 1;
}

// The head of a functionary call after `<function=`: `N>` and whitespace
// up to the arguments' '{'; results as tool_calls_hermes_head.
int tool_calls_functionary_head(std::string_view s, std::string* name, size_t* args_at) {
  const size_t gt = s.find('>');
  const std::string_view n = s.substr(0, gt);
  if (n.find_first_of(" \n<{}\"") != std::string_view::npos) return -1;
  if (gt == std::string_view::npos) return 0;
  if (n.empty()) return -1;
  size_t i = gt + 1;
  while (i < s.size() && is_space(s[i])) ++i;
  if (i == s.size()) return 0;
  if (s[i] != '{') return -1;
  *name = std::string(n);
  *args_at = i;
  return 1;
}

// How many bytes at the end of `s` are an unfinished UTF-8 sequence.
size_t tool_calls_utf8_tail(std::string_view s) {
  for (size_t n = 1; n <= std::min<size_t>(3, s.size()); ++n) {
    const auto c = static_cast<unsigned char>(s[s.size() - n]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return len > n ? n : 0;
  }
  return 0;
}

}  // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
  if (src.find("<|tool_call>call:") != std::string_view::npos) return ToolCallFormat::kGemma4;
  // DeepSeek V3.2 (V4 names its block "tool_calls": not read yet).
  if (src.find(kDsmlToken) != std::string_view::npos &&
      src.find("function_calls>") != std::string_view::npos) {
    return ToolCallFormat::kDeepSeekV32;
  }
  if (src.find(kGlmKey) != std::string_view::npos &&
      src.find(kGlmValue) != std::string_view::npos) {
    return ToolCallFormat::kGlm;
  }
  if (src.find(kNemotronOpen) != std::string_view::npos) return ToolCallFormat::kNemotron;
  if (src.find(kDeepSeekCall) != std::string_view::npos &&
      src.find(kDeepSeekSep) != std::string_view::npos) {
    return ToolCallFormat::kDeepSeek;
  }
  if (src.find(kKimiOpen) != std::string_view::npos) return ToolCallFormat::kKimi;
  if (src.find(kMiniMaxOpen) != std::string_view::npos) return ToolCallFormat::kMiniMax;
  if (src.find(kSeedOpen) != std::string_view::npos) return ToolCallFormat::kSeed;
  if (src.find(kCommandOpen) != std::string_view::npos) return ToolCallFormat::kCommand;
  if (src.find(kGraniteCalls) != std::string_view::npos) return ToolCallFormat::kGranite;
  // Phi-4-mini: the tools between <|tool|> and <|/tool|> in the system turn.
  if (src.find("<|tool|>") != std::string_view::npos &&
      src.find("<|/tool|>") != std::string_view::npos) {
    return ToolCallFormat::kPhi4Mini;
  }
  if (src.find(kFunctionaryOpen) != std::string_view::npos &&
      src.find(kHermesOpen) == std::string_view::npos &&
      src.find("<|start_header_id|>") != std::string_view::npos &&
      src.find(kFunctionaryClose) != std::string_view::npos) {
    return ToolCallFormat::kFunctionary;
  }
  // Functionary v3.2: messages to recipients after ">>>", "all" the user.
  if (src.find(">>>all") != std::string_view::npos &&
      src.find("<|start_header_id|>") != std::string_view::npos) {
    return ToolCallFormat::kFunctionaryV32;
  }
  if (src.find("<|tool_list_start|>") != std::string_view::npos ||
      src.find("List of tools: [") != std::string_view::npos) {
    return ToolCallFormat::kLfm2;
  }
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
    case ToolCallFormat::kSeed:
      return "seed";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kGlm:
      return "glm";
    case ToolCallFormat::kNemotron:
      return "nemotron";
    case ToolCallFormat::kLfm2:
      return "lfm2";
    case ToolCallFormat::kDeepSeek:
      return "deepseek";
    case ToolCallFormat::kKimi:
      return "kimi";
    case ToolCallFormat::kMiniMax:
      return "minimax";
    case ToolCallFormat::kCommand:
      return "command";
    case ToolCallFormat::kFunctionary:
      return "functionary";
    case ToolCallFormat::kGranite:
      return "granite";
    case ToolCallFormat::kFunctionaryV32:
      return "functionary_v3_2";
    case ToolCallFormat::kGemma4:
      return "gemma4";
    case ToolCallFormat::kDeepSeekV32:
      return "deepseek_v3_2";
    case ToolCallFormat::kPhi4Mini:
      return "phi4_mini";
    case ToolCallFormat::kGeneric:
      return "generic";
    case ToolCallFormat::kNone:
      break;
  }
  return "none";
}

bool tool_call_markers_are_special(ToolCallFormat f) {
  return f == ToolCallFormat::kMistral || f == ToolCallFormat::kLlama3 ||
         f == ToolCallFormat::kGlm || f == ToolCallFormat::kNemotron ||
         f == ToolCallFormat::kLfm2 || f == ToolCallFormat::kDeepSeek ||
         f == ToolCallFormat::kKimi || f == ToolCallFormat::kMiniMax ||
         f == ToolCallFormat::kCommand || f == ToolCallFormat::kGranite ||
         f == ToolCallFormat::kGemma4 || f == ToolCallFormat::kDeepSeekV32 ||
         f == ToolCallFormat::kPhi4Mini || f == ToolCallFormat::kSeed;
}

void ToolCallParser::feed(std::string_view text, std::string* content,
                          std::vector<ParsedToolCall>* calls) {
  buf_ += text;
  calls_ = calls;
  feed_from_ = calls->size();
  feed_format(content, calls);
  report_new_calls();
}

void ToolCallParser::finish(std::string* content, std::vector<ParsedToolCall>* calls) {
  calls_ = calls;
  feed_from_ = calls->size();
  finish_format(content, calls);
  report_new_calls();
}

size_t ToolCallArgsStream::feed(std::string_view text, std::string* piece) {
  std::string out = std::move(held_);
  held_.clear();
  size_t i = 0;
  for (; i < text.size() && !done_; ++i) {
    const char c = text[i];
    if (in_string_) {
      out += c;
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (is_space(c)) continue;  // between tokens
    out += c;
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ <= 0) {
      done_ = true;
    }
  }
  if (!done_) {
    const size_t keep = tool_calls_utf8_tail(out);
    held_.assign(out, out.size() - keep, keep);
    out.resize(out.size() - keep);
  }
  text_ += out;
  *piece += out;
  return i;
}

void ToolCallArgsStream::flush(std::string* piece) {
  text_ += held_;
  *piece += held_;
  held_.clear();
}

void ToolCallParser::take_deltas(std::vector<ToolCallDelta>* out) {
  for (ToolCallDelta& d : deltas_) out->push_back(std::move(d));
  deltas_.clear();
}

void ToolCallParser::report_new_calls() {
  report_completed(*calls_, feed_from_);
  feed_from_ = calls_->size();
}

void ToolCallParser::report_completed(const std::vector<ParsedToolCall>& calls, size_t from) {
  for (size_t i = from; i < calls.size(); ++i, ++n_calls_) {
    // A streamed call: its deltas went out as it was read.
    if (!streamed_.empty() && streamed_.front() == n_calls_) {
      streamed_.erase(streamed_.begin());
      continue;
    }
    ToolCallDelta d;
    d.index = n_calls_;
    d.first = true;
    d.id = calls[i].id;
    d.name = calls[i].name;
    d.arguments = calls[i].arguments;
    deltas_.push_back(std::move(d));
  }
}

void ToolCallParser::stream_xml_call(size_t limit, bool at_end) {
  if (!xml_) {
    xml_ = std::make_shared<XmlCallStream>(format_ == ToolCallFormat::kGlm
                                               ? XmlCallStream::Syntax::kGlm
                                               : XmlCallStream::Syntax::kQwenXml,
                                           tools_);
  }
  const bool was_named = xml_->named();
  std::string piece;
  const size_t from = std::min(args_at_, limit);
  xml_->feed(std::string_view(buf_).substr(from, limit - from), at_end, &piece);
  args_at_ = std::max(args_at_, limit);
  if (xml_->failed()) {  // parsed whole when it closes
    no_stream_ = true;
    xml_.reset();
    return;
  }
  if (!xml_->named()) return;
  if (!was_named) {
    streaming_ = true;
    stream_index_ = n_calls_ + (calls_->size() - feed_from_);
    stream_name_ = xml_->name();
    ToolCallDelta d;
    d.index = stream_index_;
    d.first = true;
    d.name = stream_name_;
    deltas_.push_back(std::move(d));
  }
  if (piece.empty()) return;
  ToolCallDelta d;
  d.index = stream_index_;
  d.arguments = std::move(piece);
  deltas_.push_back(std::move(d));
}

void ToolCallParser::stream_call(size_t limit, bool at_end) {
  if (no_stream_) return;
  if (format_ == ToolCallFormat::kQwenXml || format_ == ToolCallFormat::kSeed ||
      format_ == ToolCallFormat::kGlm) {
    return stream_xml_call(limit, at_end);
  }
  const bool hermes = format_ == ToolCallFormat::kHermes;
  if ((!hermes && format_ != ToolCallFormat::kFunctionary) || no_stream_) return;
  if (!streaming_) {
    std::string name;
    size_t at = 0;
    const std::string_view head_text = std::string_view(buf_).substr(0, limit);
    const int head = hermes ? tool_calls_hermes_head(head_text, &name, &at)
                            : tool_calls_functionary_head(head_text, &name, &at);
    if (head < 0) no_stream_ = true;
    if (head != 1) return;
    streaming_ = true;
    stream_index_ = n_calls_ + (calls_->size() - feed_from_);
    stream_name_ = name;
    args_ = ToolCallArgsStream();
    args_at_ = at;
    ToolCallDelta d;
    d.index = stream_index_;
    d.first = true;
    d.name = std::move(name);
    deltas_.push_back(std::move(d));
  }
  std::string piece;
  if (limit > args_at_ && !args_.done()) {
    args_at_ += args_.feed(std::string_view(buf_).substr(args_at_, limit - args_at_), &piece);
  }
  if (at_end) args_.flush(&piece);
  if (piece.empty()) return;
  ToolCallDelta d;
  d.index = stream_index_;
  d.arguments = std::move(piece);
  deltas_.push_back(std::move(d));
}

void ToolCallParser::complete_streamed(std::vector<ParsedToolCall>* calls) {
  // The call was reported: it ends as a call whatever follows, with the
  // arguments that were streamed (and no id of the model's: the stream's
  // first delta went out before any id could be read).
  ParsedToolCall c;
  c.name = stream_name_;
  c.arguments = xml_ ? xml_->text() : args_.text();
  calls->push_back(std::move(c));
  streamed_.push_back(stream_index_);
  streaming_ = false;
  xml_.reset();
}

void ToolCallParser::feed_format(std::string* content, std::vector<ParsedToolCall>* calls) {
  switch (format_) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
    case ToolCallFormat::kGlm:
    case ToolCallFormat::kNemotron:
    case ToolCallFormat::kLfm2:
    case ToolCallFormat::kDeepSeek:
    case ToolCallFormat::kKimi:
    case ToolCallFormat::kMiniMax:
    case ToolCallFormat::kCommand:
    case ToolCallFormat::kFunctionary:
    case ToolCallFormat::kGemma4:
    case ToolCallFormat::kDeepSeekV32:
    case ToolCallFormat::kPhi4Mini:
    case ToolCallFormat::kSeed:
      return feed_tagged(content, calls);
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kGranite:
      return feed_mistral(content);
    case ToolCallFormat::kLlama3:
      return feed_llama3(content);
    case ToolCallFormat::kGeneric:
      return feed_generic(content);
    case ToolCallFormat::kFunctionaryV32:
      if (!recipients_) recipients_ = std::make_shared<RecipientCallReader>();
      return recipients_->feed(&buf_, /*at_end=*/false, content, calls);
    case ToolCallFormat::kNone:
      break;
  }
  *content += buf_;
  buf_.clear();
}

bool ToolCallParser::parse_tagged_call(std::string_view body,
                                       std::vector<ParsedToolCall>* out) const {
  ParsedToolCall c;
  bool ok = false;
  switch (format_) {
    case ToolCallFormat::kQwenXml:
    case ToolCallFormat::kSeed:
      ok = parse_qwen_xml_call(body, tools_, &c);
      break;
    case ToolCallFormat::kGlm:
      ok = parse_glm_call(body, tools_, &c);
      break;
    case ToolCallFormat::kNemotron:
      return parse_json_call_list(body, out);
    case ToolCallFormat::kPhi4Mini:  // a list, or one call object
      if (parse_json_call_list(body, out)) return true;
      ok = parse_hermes_call(body, &c);
      break;
    case ToolCallFormat::kLfm2:
      return parse_lfm2_calls(body, out);
    case ToolCallFormat::kDeepSeek:
      return parse_sectioned_calls(body, kDeepSeekCall, kDeepSeekSep, kDeepSeekCallEnd, false, out);
    case ToolCallFormat::kKimi:
      return parse_sectioned_calls(body, "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
                                   "<|tool_call_end|>", true, out);
    case ToolCallFormat::kMiniMax:
      return parse_minimax_calls(body, tools_, out);
    case ToolCallFormat::kDeepSeekV32: {
      // MiniMax's invoke / parameter tags with the DSML token in each.
      std::string plain(body);
      for (size_t at = plain.find(kDsmlToken); at != std::string::npos;
           at = plain.find(kDsmlToken, at)) {
        plain.erase(at, kDsmlToken.size());
      }
      return parse_minimax_calls(plain, tools_, out);
    }
    case ToolCallFormat::kCommand:
      return parse_command_calls(body, out);
    case ToolCallFormat::kFunctionary:
      ok = parse_functionary_call(body, &c);
      break;
    case ToolCallFormat::kGemma4:
      ok = parse_gemma4_call(body, &c);
      break;
    default:
      ok = parse_hermes_call(body, &c);
      break;
  }
  if (ok) out->push_back(std::move(c));
  return ok;
}

ToolCallParser::TaggedMarkers ToolCallParser::tagged_markers() const {
  switch (format_) {
    case ToolCallFormat::kNemotron:
      return {kNemotronOpen, kNemotronClose};
    case ToolCallFormat::kLfm2:
      return {kLfm2Open, kLfm2Close};
    case ToolCallFormat::kDeepSeek:
      return {kDeepSeekOpen, kDeepSeekClose};
    case ToolCallFormat::kKimi:
      return {kKimiOpen, kKimiClose};
    case ToolCallFormat::kMiniMax:
      return {kMiniMaxOpen, kMiniMaxClose};
    case ToolCallFormat::kCommand:
      return {kCommandOpen, kCommandClose};
    case ToolCallFormat::kFunctionary:
      return {kFunctionaryOpen, kFunctionaryClose};
    case ToolCallFormat::kGemma4:
      return {kGemma4CallOpen, kGemma4CallClose};
    case ToolCallFormat::kDeepSeekV32:
      return {kDsmlOpen, kDsmlClose};
    case ToolCallFormat::kPhi4Mini:
      return {kPhi4Open, kPhi4Close};
    case ToolCallFormat::kSeed:
      return {kSeedOpen, kSeedClose};
    default:
      return {kHermesOpen, kHermesClose};
  }
}

void ToolCallParser::emit_content(std::string_view text, std::string* content) {
  if (format_ != ToolCallFormat::kCommand && format_ != ToolCallFormat::kGranite) {
    content->append(text);
    return;
  }
  // Command R7B wraps its answer in <|START_RESPONSE|> ... <|END_RESPONSE|>,
  // Granite 3.x in <response> ... </response>: markup, not content.
  const auto& markers = format_ == ToolCallFormat::kCommand ? kCommandResponse : kGraniteResponse;
  hold_ += text;
  size_t keep = 0;
  for (std::string_view m : markers) {
    for (size_t at = hold_.find(m); at != std::string::npos; at = hold_.find(m, at)) {
      hold_.erase(at, m.size());
    }
  }
  for (std::string_view m : markers) keep = std::max(keep, partial_suffix(hold_, m));
  content->append(hold_, 0, hold_.size() - keep);
  hold_.erase(0, hold_.size() - keep);
}

void ToolCallParser::feed_tagged(std::string* content, std::vector<ParsedToolCall>* calls) {
  const auto [open_tag, close_tag] = tagged_markers();
  for (;;) {
    if (mode_ != Mode::kCall) {
      const size_t open = buf_.find(open_tag);
      if (open == std::string::npos) {
        const size_t keep = partial_suffix(buf_, open_tag);
        emit_content(std::string_view(buf_).substr(0, buf_.size() - keep), content);
        buf_.erase(0, buf_.size() - keep);
        mode_ = Mode::kContent;
        return;
      }
      emit_content(std::string_view(buf_).substr(0, open), content);
      buf_.erase(0, open + open_tag.size());
      mode_ = Mode::kCall;
      no_stream_ = false;
      args_at_ = 0;
      xml_.reset();
    }
    // The close marker is looked for only in text not searched before, so a
    // long call streamed in small pieces costs linear time.
    const size_t close = buf_.find(close_tag, scan_from_);
    if (close == std::string::npos) {  // the call is still coming
      // What may be the close tag's start is not streamed yet.
      stream_call(buf_.size() - partial_suffix(buf_, close_tag), /*at_end=*/false);
      scan_from_ = buf_.size() >= close_tag.size() ? buf_.size() - close_tag.size() + 1 : 0;
      return;
    }
    scan_from_ = 0;
    stream_call(close, /*at_end=*/true);
    if (streaming_) {
      complete_streamed(calls);
    } else if (!parse_tagged_call(std::string_view(buf_).substr(0, close), calls)) {
      emit_content(open_tag, content);
      emit_content(std::string_view(buf_).substr(0, close + close_tag.size()), content);
    }
    // A call parsed whole is reported now, before a later call of the same
    // feed starts streaming.
    report_new_calls();
    buf_.erase(0, close + close_tag.size());
    mode_ = Mode::kContent;
    no_stream_ = false;
  }
}

void ToolCallParser::feed_generic(std::string* content) {
  constexpr std::string_view kResponseKey = "\"response\"";
  for (;;) {
    switch (mode_) {
      case Mode::kUndecided: {
        // {"response": "... streams; any other object is parsed at the end.
        const std::string_view t = trim(buf_);
        if (t.empty()) return;
        if (t[0] != '{') {
          mode_ = Mode::kContent;
          continue;
        }
        std::string_view r = trim(t.substr(1));
        if (r.empty() || (r.size() < kResponseKey.size() && starts_with(kResponseKey, r))) return;
        if (!starts_with(r, kResponseKey)) {
          mode_ = Mode::kCapture;
          return;
        }
        r = trim(r.substr(kResponseKey.size()));
        if (r.empty()) return;
        if (r[0] != ':') {
          mode_ = Mode::kCapture;
          return;
        }
        r = trim(r.substr(1));
        if (r.empty()) return;
        if (r[0] != '"') {
          mode_ = Mode::kCapture;
          return;
        }
        buf_.erase(0, static_cast<size_t>(r.data() - buf_.data()) + 1);
        mode_ = Mode::kResponse;
        continue;
      }
      case Mode::kResponse:
        if (tool_calls_decode_string(&buf_, content)) {
          mode_ = Mode::kAfterResponse;
          continue;
        }
        return;
      case Mode::kAfterResponse:
        // The object's closing brace and whitespace are markup; anything
        // else after the string is held and goes out at the end.
        while (!buf_.empty() && (is_space(buf_[0]) || buf_[0] == '}')) buf_.erase(0, 1);
        return;
      case Mode::kContent:
        *content += buf_;
        buf_.clear();
        return;
      default:  // kCapture: parsed at the end
        return;
    }
  }
}

void ToolCallParser::feed_mistral(std::string* content) {
  if (mode_ == Mode::kCapture) return;  // parsed at the end
  const std::string_view marker =
      format_ == ToolCallFormat::kGranite ? kGraniteCalls : kMistralCalls;
  const size_t at = buf_.find(marker);
  if (at != std::string::npos) {
    emit_content(std::string_view(buf_).substr(0, at), content);
    buf_.erase(0, at);
    mode_ = Mode::kCapture;
    return;
  }
  const size_t keep = partial_suffix(buf_, marker);
  emit_content(std::string_view(buf_).substr(0, buf_.size() - keep), content);
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

void ToolCallParser::finish_format(std::string* content, std::vector<ParsedToolCall>* calls) {
  switch (format_) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kQwenXml:
    case ToolCallFormat::kGlm:
    case ToolCallFormat::kNemotron:
    case ToolCallFormat::kLfm2:
    case ToolCallFormat::kDeepSeek:
    case ToolCallFormat::kKimi:
    case ToolCallFormat::kMiniMax:
    case ToolCallFormat::kCommand:
    case ToolCallFormat::kFunctionary:
    case ToolCallFormat::kGemma4:
    case ToolCallFormat::kDeepSeekV32:
    case ToolCallFormat::kPhi4Mini:
    case ToolCallFormat::kSeed:
      if (mode_ == Mode::kCall) {
        // A model that ends right after the call, without the closing tag.
        stream_call(buf_.size(), /*at_end=*/true);
        if (streaming_) {
          complete_streamed(calls);
        } else if (!parse_tagged_call(buf_, calls)) {
          emit_content(tagged_markers().open, content);
          emit_content(buf_, content);
        }
        buf_.clear();
      }
      break;
    case ToolCallFormat::kGeneric:
      if (mode_ == Mode::kCapture && parse_generic_answer(buf_, content, calls)) buf_.clear();
      // A response string cut off before its closing quote: what was decoded
      // is the content; the undecodable rest of an escape is dropped.
      if (mode_ == Mode::kResponse) buf_.clear();
      break;
    case ToolCallFormat::kMistral:
      if (mode_ == Mode::kCapture && parse_mistral_calls(buf_, calls)) buf_.clear();
      break;
    case ToolCallFormat::kGranite:
      if (mode_ == Mode::kCapture &&
          parse_json_call_list(std::string_view(buf_).substr(kGraniteCalls.size()), calls)) {
        buf_.clear();
      }
      break;
    case ToolCallFormat::kLlama3:
      if (mode_ == Mode::kCapture && parse_llama3_calls(buf_, calls)) buf_.clear();
      break;
    case ToolCallFormat::kFunctionaryV32:
      if (!recipients_) recipients_ = std::make_shared<RecipientCallReader>();
      recipients_->feed(&buf_, /*at_end=*/true, content, calls);
      break;
    case ToolCallFormat::kNone:
      break;
  }
  *content += hold_;
  hold_.clear();
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
