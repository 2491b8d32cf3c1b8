#include "chat/recipient_calls.h"

#include "core/json_brackets.h"

namespace folio::chat {

namespace {

constexpr std::string_view kRecipientSeparator = ">>>";

bool recipient_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool recipient_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The longest suffix of `s` that is a proper prefix of ">>>".
size_t recipient_partial_separator(std::string_view s) {
  for (size_t n = std::min<size_t>(s.size(), kRecipientSeparator.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == kRecipientSeparator.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

void RecipientCallReader::feed(std::string* buf, bool at_end, std::string* content,
                               std::vector<ParsedToolCall>* calls) {
  for (;;) {
    switch (state_) {
      case State::kRecipient: {
        size_t i = 0;
        while (i < buf->size() && recipient_name_char((*buf)[i])) ++i;
        if (i == buf->size() && !at_end) return;  // the name may go on
        if (i == 0 || i == buf->size() || (*buf)[i] != '\n') {
          state_ = State::kContent;  // no recipient line: the text is content
          break;
        }
        name_ = buf->substr(0, i);
        buf->erase(0, i + 1);
        state_ = name_ == "all" ? State::kContent : State::kArguments;
        break;
      }
      case State::kContent: {
        const size_t sep = buf->find(kRecipientSeparator);
        if (sep == std::string::npos) {
          const size_t hold = at_end ? 0 : recipient_partial_separator(*buf);
          content->append(*buf, 0, buf->size() - hold);
          buf->erase(0, buf->size() - hold);
          return;
        }
        content->append(*buf, 0, sep);
        buf->erase(0, sep + kRecipientSeparator.size());
        state_ = State::kRecipient;
        break;
      }
      case State::kArguments: {
        size_t i = 0;
        while (i < buf->size() && recipient_space((*buf)[i])) ++i;
        if (i == buf->size() && !at_end) return;
        size_t end = std::string::npos;
        if (i < buf->size() && (*buf)[i] == '{') {
          const std::string_view v = std::string_view(*buf).substr(i);
          end = walk_json_brackets(v, [](size_t, int depth) { return depth != 0; });
          if (end == std::string::npos && !at_end) return;  // not closed yet
        }
        Json args;
        if (end != std::string::npos) {
          args = Json::parse(buf->substr(i, end + 1), nullptr, /*allow_exceptions=*/false);
        }
        if (end == std::string::npos || !args.is_object()) {
          // Not a call: the message goes out as the model wrote it.
          *content += name_ + "\n";
          state_ = State::kContent;
          break;
        }
        ParsedToolCall c;
        c.name = name_;
        c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
        calls->push_back(std::move(c));
        buf->erase(0, i + end + 1);
        state_ = State::kAfterCall;
        break;
      }
      case State::kAfterCall: {
        // Whitespace up to the next ">>>" belongs to no message.
        size_t i = 0;
        while (i < buf->size() && recipient_space((*buf)[i])) ++i;
        const std::string_view rest = std::string_view(*buf).substr(i);
        if (rest.empty() || (rest.size() < kRecipientSeparator.size() &&
                             kRecipientSeparator.starts_with(rest))) {
          if (!at_end) return;
          buf->clear();
          return;
        }
        if (rest.starts_with(kRecipientSeparator)) {
          buf->erase(0, i + kRecipientSeparator.size());
          state_ = State::kRecipient;
        } else {
          state_ = State::kContent;  // text after a call without ">>>": content
        }
        break;
      }
    }
  }
}

}  // namespace folio::chat
