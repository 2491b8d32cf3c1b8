#include "chat/xml_call_stream.h"

#include <algorithm>

#include "chat/tool_schema.h"

namespace folio::chat {

namespace {

constexpr std::string_view kXmlFunction = "<function=";
constexpr std::string_view kXmlFunctionEnd = "</function>";
constexpr std::string_view kXmlParam = "<parameter=";
constexpr std::string_view kXmlParamEnd = "</parameter>";
constexpr std::string_view kXmlArgKey = "<arg_key>";
constexpr std::string_view kXmlArgKeyEnd = "</arg_key>";
constexpr std::string_view kXmlArgValue = "<arg_value>";
constexpr std::string_view kXmlArgValueEnd = "</arg_value>";

bool xml_call_stream_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

std::string_view xml_call_stream_trim(std::string_view s) {
  while (!s.empty() && xml_call_stream_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && xml_call_stream_space(s.back())) s.remove_suffix(1);
  return s;
}

bool xml_call_stream_starts(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// Whether s (shorter than p) may still grow into p.
bool xml_call_stream_may_become(std::string_view s, std::string_view p) {
  return s.size() < p.size() && p.substr(0, s.size()) == s;
}

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t xml_call_stream_partial(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

// Bytes at the end of s that start a UTF-8 character not complete yet.
size_t xml_call_stream_utf8_tail(std::string_view s) {
  for (size_t n = 1; n <= std::min<size_t>(3, s.size()); ++n) {
    const auto c = static_cast<unsigned char>(s[s.size() - n]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return len > n ? n : 0;
  }
  return 0;
}

// s as the inside of a JSON string (no quotes).
std::string xml_call_stream_escaped(std::string_view s) {
  const std::string q = Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

}  // namespace

void XmlCallStream::emit(std::string_view s, std::string* piece) {
  text_ += s;
  *piece += s;
}

void XmlCallStream::begin_value(std::string_view key, std::string* piece) {
  std::string s = first_arg_ ? "" : ",";
  first_arg_ = false;
  s += Json(std::string(key)).dump(-1, ' ', false, Json::error_handler_t::replace);
  s += ':';
  string_value_ = tool_param_type(tools_, name_, key) == "string";
  if (string_value_) s += '"';
  key_ = std::string(key);
  value_started_ = syntax_ == Syntax::kGlm;
  emit(s, piece);
}

void XmlCallStream::end_value(std::string_view value, std::string* piece) {
  if (string_value_) {
    emit(xml_call_stream_escaped(value) + "\"", piece);
  } else {
    emit(tool_param_value(tools_, name_, key_, value)
             .dump(-1, ' ', false, Json::error_handler_t::replace),
         piece);
  }
}

void XmlCallStream::feed(std::string_view text, bool at_end, std::string* piece) {
  if (failed_ || state_ == State::kClosed) return;
  buf_ += text;
  advance(at_end, piece);
  if (!at_end) return;
  if (!named_) {
    failed_ = true;
    return;
  }
  if (state_ == State::kValue) {
    std::string_view v = buf_;
    if (syntax_ == Syntax::kQwenXml) {
      if (!value_started_ && xml_call_stream_starts(v, "\n")) v.remove_prefix(1);
      if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    }
    end_value(v, piece);
  }
  buf_.clear();
  emit("}", piece);
  state_ = State::kClosed;
}

void XmlCallStream::advance(bool at_end, std::string* piece) {
  const bool qwen = syntax_ == Syntax::kQwenXml;
  for (;;) {
    switch (state_) {
      case State::kHead: {
        if (qwen) {
          const std::string_view b = buf_;
          size_t i = 0;
          while (i < b.size() && xml_call_stream_space(b[i])) ++i;
          const std::string_view rest = b.substr(i);
          if (!xml_call_stream_starts(rest, kXmlFunction)) {
            if (!xml_call_stream_may_become(rest, kXmlFunction)) failed_ = true;
            return;
          }
          const size_t gt = rest.find('>');
          if (gt == std::string_view::npos) return;
          name_ = std::string(
              xml_call_stream_trim(rest.substr(kXmlFunction.size(), gt - kXmlFunction.size())));
          if (name_.empty()) {
            failed_ = true;
            return;
          }
          buf_.erase(0, i + gt + 1);
        } else {
          const size_t k = buf_.find(kXmlArgKey);
          if (k == std::string::npos) return;  // a call without arguments is parsed whole
          name_ = std::string(xml_call_stream_trim(std::string_view(buf_).substr(0, k)));
          if (name_.empty() || name_.find_first_of("<>{}\"\n ") != std::string::npos) {
            failed_ = true;
            return;
          }
          buf_.erase(0, k);
        }
        named_ = true;
        emit("{", piece);
        state_ = State::kNext;
        continue;
      }
      case State::kNext: {
        size_t i = 0;
        while (i < buf_.size() && xml_call_stream_space(buf_[i])) ++i;
        buf_.erase(0, i);
        const std::string_view b = buf_;
        if (b.empty()) return;
        const std::string_view open = qwen ? kXmlParam : kXmlArgKey;
        if (xml_call_stream_starts(b, open)) {
          const size_t end = qwen ? b.find('>') : b.find(kXmlArgKeyEnd);
          if (end == std::string_view::npos) return;
          const std::string key(xml_call_stream_trim(b.substr(open.size(), end - open.size())));
          if (key.empty()) {
            state_ = State::kStop;
            continue;
          }
          buf_.erase(0, end + (qwen ? 1 : kXmlArgKeyEnd.size()));
          if (qwen) {
            begin_value(key, piece);
            state_ = State::kValue;
          } else {
            key_ = key;
            state_ = State::kAfterKey;
          }
          continue;
        }
        if (qwen && xml_call_stream_starts(b, kXmlFunctionEnd)) {
          state_ = State::kStop;
          continue;
        }
        if (xml_call_stream_may_become(b, open) ||
            (qwen && xml_call_stream_may_become(b, kXmlFunctionEnd))) {
          return;
        }
        state_ = State::kStop;
        continue;
      }
      case State::kAfterKey: {
        size_t i = 0;
        while (i < buf_.size() && xml_call_stream_space(buf_[i])) ++i;
        buf_.erase(0, i);
        if (buf_.empty() || xml_call_stream_may_become(buf_, kXmlArgValue)) return;
        if (!xml_call_stream_starts(buf_, kXmlArgValue)) {
          state_ = State::kStop;
          continue;
        }
        buf_.erase(0, kXmlArgValue.size());
        begin_value(std::string(key_), piece);
        state_ = State::kValue;
        continue;
      }
      case State::kValue: {
        if (!value_started_) {  // qwen_xml: one newline opens the value
          if (buf_.empty()) return;
          if (buf_[0] == '\n') buf_.erase(0, 1);
          value_started_ = true;
        }
        const std::string_view close = qwen ? kXmlParamEnd : kXmlArgValueEnd;
        const std::string_view b = buf_;
        const size_t end = b.find(close);
        if (end != std::string_view::npos) {
          std::string_view v = b.substr(0, end);
          if (qwen && !v.empty() && v.back() == '\n') v.remove_suffix(1);
          end_value(v, piece);
          buf_.erase(0, end + close.size());
          state_ = State::kNext;
          continue;
        }
        if (!string_value_ || at_end) return;  // goes out whole when it closes
        size_t n = b.size() - xml_call_stream_partial(b, close);
        if (qwen && n > 0 && b[n - 1] == '\n') --n;  // may be the newline before the close
        n -= xml_call_stream_utf8_tail(b.substr(0, n));
        if (n == 0) return;
        emit(xml_call_stream_escaped(b.substr(0, n)), piece);
        buf_.erase(0, n);
        return;
      }
      case State::kStop:
        buf_.clear();
        return;
      case State::kClosed:
        return;
    }
  }
}

}  // namespace folio::chat
