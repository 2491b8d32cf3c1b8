#include "chat/gemma4_calls.h"

namespace folio::chat {

namespace {

// A recursive-descent reader over the notation; nesting is bounded so that
// hostile output cannot exhaust the stack.
class Gemma4ValueReader {
 public:
  explicit Gemma4ValueReader(std::string_view s) : s_(s) {}

  bool value(Json* out, int depth) {
    if (depth > kMaxDepth) return false;
    skip_space();
    if (s_.starts_with(kGemma4Quote)) {
      s_.remove_prefix(kGemma4Quote.size());
      const size_t end = s_.find(kGemma4Quote);
      if (end == std::string_view::npos) return false;
      *out = std::string(s_.substr(0, end));
      s_.remove_prefix(end + kGemma4Quote.size());
      return true;
    }
    if (s_.starts_with("{")) return object(out, depth);
    if (s_.starts_with("[")) {
      s_.remove_prefix(1);
      *out = Json::array();
      skip_space();
      if (eat(']')) return true;
      for (;;) {
        Json item;
        if (!value(&item, depth + 1)) return false;
        out->push_back(std::move(item));
        skip_space();
        if (eat(']')) return true;
        if (!eat(',')) return false;
      }
    }
    // A literal: up to the next delimiter, read as JSON (numbers, true,
    // false, null).
    size_t n = 0;
    while (n < s_.size() && s_[n] != ',' && s_[n] != '}' && s_[n] != ']') ++n;
    std::string_view lit = s_.substr(0, n);
    while (!lit.empty() && is_space(lit.back())) lit.remove_suffix(1);
    if (lit.empty()) return false;
    Json v = Json::parse(lit, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded() || v.is_structured() || v.is_string()) return false;
    *out = std::move(v);
    s_.remove_prefix(n);
    return true;
  }

  // {key:value,...}; keys bare or quoted.
  bool object(Json* out, int depth) {
    if (depth > kMaxDepth || !eat('{')) return false;
    *out = Json::object();
    skip_space();
    if (eat('}')) return true;
    for (;;) {
      skip_space();
      std::string key;
      if (s_.starts_with(kGemma4Quote)) {
        Json k;
        if (!value(&k, depth + 1)) return false;
        key = k.get<std::string>();
      } else {
        const size_t colon = s_.find(':');
        if (colon == std::string_view::npos) return false;
        std::string_view k = s_.substr(0, colon);
        while (!k.empty() && is_space(k.back())) k.remove_suffix(1);
        if (k.empty() || k.find_first_of(",{}[]\"") != std::string_view::npos) return false;
        key = std::string(k);
        s_.remove_prefix(colon);
      }
      skip_space();
      if (!eat(':')) return false;
      Json v;
      if (!value(&v, depth + 1)) return false;
      (*out)[key] = std::move(v);
      skip_space();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  bool at_end() {
    skip_space();
    return s_.empty();
  }

 private:
  static constexpr int kMaxDepth = 64;
  static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
  void skip_space() {
    while (!s_.empty() && is_space(s_.front())) s_.remove_prefix(1);
  }
  bool eat(char c) {
    if (s_.empty() || s_.front() != c) return false;
    s_.remove_prefix(1);
    return true;
  }

  std::string_view s_;
};

}  // namespace

bool parse_gemma4_call(std::string_view body, ParsedToolCall* out) {
  constexpr std::string_view kCall = "call:";
  while (!body.empty() && (body.front() == ' ' || body.front() == '\n')) body.remove_prefix(1);
  if (!body.starts_with(kCall)) return false;
  body.remove_prefix(kCall.size());
  const size_t brace = body.find('{');
  if (brace == std::string_view::npos || brace == 0) return false;
  const std::string_view name = body.substr(0, brace);
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  Gemma4ValueReader r(body.substr(brace));
  Json args;
  if (!r.object(&args, 0) || !r.at_end()) return false;
  ParsedToolCall c;
  c.name = std::string(name);
  c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
  *out = std::move(c);
  return true;
}

}  // namespace folio::chat
