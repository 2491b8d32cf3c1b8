// A tool call in one of the XML-like syntaxes read as the model writes it,
// so a stream can send the call's name and its arguments' JSON in pieces
// before the call closes:
//   qwen_xml  <function=N>\n<parameter=P>\nvalue\n</parameter>...</function>
//             (one newline after the parameter's tag and one before its
//             close are not part of the value)
//   glm       N<arg_key>k</arg_key><arg_value>v</arg_value>... (the value
//             verbatim)
// whitespace allowed between the parts. Fed the call's body (the text
// after the call's open marker, without its close marker), it reports the
// name once it is read and the arguments object as text: "{" with the
// name, then `"key":` as each value opens; a value the tool's schema types
// as a string streams as it arrives (JSON-escaped, a UTF-8 character cut
// between feeds held until its last byte, text that may still be the
// value's close tag or the newline the value loses held back), any other
// value goes out when it closes, typed as chat/tool_schema.h reads it; "}"
// when the body ends. The pieces are the same text however the body is
// split, and equal to the JSON object the whole call denotes (a key given
// twice appears twice). Once named, the call stays a call: a body that
// breaks off or goes wrong ends the object with the values read so far
// (an unclosed value is taken as it stands).
#pragma once

#include <string>
#include <string_view>

#include "chat/tool_calls.h"

namespace folio::chat {

class XmlCallStream {
 public:
  enum class Syntax { kQwenXml, kGlm };

  // `tools`: the request's tool definitions (borrowed), typing the values.
  XmlCallStream(Syntax syntax, const Json* tools) : syntax_(syntax), tools_(tools) {}

  // Feeds more of the body; `at_end`: the body is complete. Appends the
  // arguments' text now settled to *piece.
  void feed(std::string_view text, bool at_end, std::string* piece);

  // The body does not open as a call of the syntax (or ended before its
  // name): nothing was or will be reported; parse it whole instead.
  bool failed() const { return failed_; }
  // The name has been read: the call is reported.
  bool named() const { return named_; }
  const std::string& name() const { return name_; }
  // Every piece appended so far.
  const std::string& text() const { return text_; }

 private:
  enum class State { kHead, kNext, kAfterKey, kValue, kStop, kClosed };

  void emit(std::string_view s, std::string* piece);
  void begin_value(std::string_view key, std::string* piece);
  void end_value(std::string_view value, std::string* piece);
  // Advances over buf_; returns when more text is needed.
  void advance(bool at_end, std::string* piece);

  Syntax syntax_;
  const Json* tools_;
  State state_ = State::kHead;
  std::string buf_;   // text not consumed yet
  std::string name_;
  std::string key_;   // glm: the key whose value is awaited / being read
  std::string text_;
  bool failed_ = false;
  bool named_ = false;
  bool first_arg_ = true;
  bool string_value_ = false;   // the current value streams as a string
  bool value_started_ = false;  // qwen_xml: the value's leading newline is settled
};

}  // namespace folio::chat
