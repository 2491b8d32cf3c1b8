#include "chat/chat_parser.h"

#include <algorithm>
#include <array>
#include <utility>

namespace folio::chat {

namespace {

constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::string_view kHarmonyChannel = "<|channel|>";
constexpr std::array<std::string_view, 4> kHarmonyEnds = {"<|end|>", "<|call|>", "<|return|>",
                                                          "<|start|>"};

bool chat_parser_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t chat_parser_partial_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

size_t chat_parser_first_non_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && chat_parser_space(s[i])) ++i;
  return i;
}

// Where a Harmony message body ends in `s`: {position, terminator length},
// {position, 0} when s[position..] may still become a terminator, or
// {npos, 0} when no terminator starts in s.
std::pair<size_t, size_t> chat_parser_harmony_end(std::string_view s) {
  for (size_t p = s.find("<|"); p != std::string_view::npos; p = s.find("<|", p + 1)) {
    const std::string_view rest = s.substr(p);
    for (std::string_view end : kHarmonyEnds) {
      if (rest.substr(0, end.size()) == end) return {p, end.size()};
    }
    for (std::string_view end : kHarmonyEnds) {
      if (rest.size() < end.size() && end.substr(0, rest.size()) == rest) return {p, 0};
    }
  }
  // A lone '<' at the very end may start a terminator.
  if (!s.empty() && s.back() == '<') return {s.size() - 1, 0};
  return {std::string_view::npos, 0};
}

// The word after `key` in a Harmony header: up to whitespace or "<|".
std::string chat_parser_header_word(std::string_view header, std::string_view key) {
  const size_t k = header.rfind(key);
  if (k == std::string_view::npos) return "";
  std::string_view rest = header.substr(k + key.size());
  size_t end = 0;
  while (end < rest.size() && !chat_parser_space(rest[end]) &&
         rest.substr(end, 2) != "<|") {
    ++end;
  }
  return std::string(rest.substr(0, end));
}

// A Harmony recipient's function name: functions.NAME -> NAME.
std::string_view chat_parser_function_name(std::string_view recipient) {
  constexpr std::string_view kFunctions = "functions.";
  if (recipient.substr(0, kFunctions.size()) == kFunctions) {
    recipient.remove_prefix(kFunctions.size());
  }
  return recipient;
}

}  // namespace

ChatParser::ChatParser(const ChatFormat& format, ReasoningFormat reasoning,
                       bool starts_in_reasoning, bool parse_tools, const Json* tools) {
  if (reasoning != ReasoningFormat::kNone) syntax_ = format.reasoning;
  // Harmony's tool calls need its messages parsed; without the reasoning
  // split the analysis channel then stays in the content.
  if (format.reasoning == ReasoningSyntax::kHarmony && parse_tools) {
    syntax_ = ReasoningSyntax::kHarmony;
    reasoning_to_content_ = reasoning == ReasoningFormat::kNone;
  }
  if (syntax_ == ReasoningSyntax::kHarmony) {
    state_ = State::kHeader;
  } else if (syntax_ != ReasoningSyntax::kNone) {
    state_ = starts_in_reasoning ? State::kReasoning : State::kStart;
  }
  if (parse_tools && format.tool_calls != ToolCallFormat::kNone &&
      syntax_ != ReasoningSyntax::kHarmony) {
    tools_.emplace(format.tool_calls, tools);
  }
}

void ChatParser::put_content(std::string_view text, ChatDelta* out) {
  if (text.empty()) return;
  if (tools_) {
    tools_->feed(text, &out->content, &out->calls);
    tools_->take_deltas(&out->call_deltas);
  } else {
    out->content += text;
  }
}

void ChatParser::put_reasoning(std::string_view text, bool last, ChatDelta* out) {
  if (!reasoning_started_) {
    text.remove_prefix(chat_parser_first_non_space(text));
    if (text.empty()) return;
    reasoning_started_ = true;
    // A later reasoning block (Gemma 4) is set apart from the one before.
    if (reasoning_gap_) out->reasoning += "\n\n";
    reasoning_gap_ = false;
  }
  if (last) {
    while (!text.empty() && chat_parser_space(text.back())) text.remove_suffix(1);
  }
  out->reasoning += text;
}

void ChatParser::feed(std::string_view text, ChatDelta* out) {
  buf_ += text;
  if (syntax_ == ReasoningSyntax::kHarmony) return feed_harmony(out);
  if (syntax_ != ReasoningSyntax::kNone) return feed_tags(out);
  put_content(buf_, out);
  buf_.clear();
}

void ChatParser::feed_tags(ChatDelta* out) {
  const std::string_view open = reasoning_open_tag(syntax_);
  const std::string_view close = reasoning_close_tag(syntax_);
  for (;;) {
    const std::string_view b = buf_;
    switch (state_) {
      case State::kStart: {
        const size_t i = chat_parser_first_non_space(b);
        if (i == b.size()) return;  // whitespace only: undecided
        const std::string_view rest = b.substr(i);
        if (rest.substr(0, open.size()) == open) {
          buf_.erase(0, i + open.size());
          state_ = State::kReasoning;
          continue;
        }
        if (rest.size() < open.size() && open.substr(0, rest.size()) == rest) return;
        state_ = State::kContent;
        continue;
      }
      case State::kReasoning: {
        const size_t pos = b.find(close);
        if (pos != std::string_view::npos) {
          put_reasoning(b.substr(0, pos), /*last=*/true, out);
          buf_.erase(0, pos + close.size());
          state_ = State::kContent;
          content_trim_ = true;
          continue;
        }
        // Hold what may start the close tag and the whitespace before it
        // (trimmed if the block ends there).
        size_t end = b.size() - chat_parser_partial_suffix(b, close);
        while (end > 0 && chat_parser_space(b[end - 1])) --end;
        put_reasoning(b.substr(0, end), /*last=*/false, out);
        buf_.erase(0, end);
        return;
      }
      default: {
        if (content_trim_) {
          buf_.erase(0, chat_parser_first_non_space(b));
          if (buf_.empty()) return;
          content_trim_ = false;
        }
        if (syntax_ == ReasoningSyntax::kGemma4) {
          // Gemma 4 may think again between the parts of its reply, and may
          // end a part with a lone close marker (dropped).
          const std::string_view c = buf_;
          const size_t at_open = c.find(open);
          const size_t at = std::min(at_open, c.find(close));
          if (at == std::string_view::npos) {
            const size_t keep =
                std::max(chat_parser_partial_suffix(c, open), chat_parser_partial_suffix(c, close));
            put_content(c.substr(0, c.size() - keep), out);
            buf_.erase(0, c.size() - keep);
            return;
          }
          put_content(c.substr(0, at), out);
          if (at == at_open) {
            buf_.erase(0, at + open.size());
            state_ = State::kReasoning;
            reasoning_gap_ = reasoning_started_;
            reasoning_started_ = false;
          } else {
            buf_.erase(0, at + close.size());
          }
          continue;
        }
        put_content(buf_, out);
        buf_.clear();
        return;
      }
    }
  }
}

void ChatParser::start_harmony_message(std::string_view header) {
  channel_ = chat_parser_header_word(header, kHarmonyChannel);
  recipient_ = chat_parser_header_word(header, "to=");
  call_body_.clear();
}

void ChatParser::stream_harmony_call(std::string_view body, bool end, ChatDelta* out) {
  if (!call_decided_) {
    const size_t i = chat_parser_first_non_space(call_body_);
    if (i == call_body_.size()) return;
    call_decided_ = true;
    call_name_ = std::string(chat_parser_function_name(recipient_));
    if (call_body_[i] != '{' || call_name_.empty()) return;
    call_args_.emplace();
    ToolCallDelta d;
    d.index = n_harmony_calls_;
    d.first = true;
    d.name = call_name_;
    out->call_deltas.push_back(std::move(d));
    body = std::string_view(call_body_).substr(i);  // all of it so far
  }
  if (!call_args_) return;
  std::string piece;
  if (!call_args_->done()) call_args_->feed(body, &piece);
  if (end) call_args_->flush(&piece);
  if (piece.empty()) return;
  ToolCallDelta d;
  d.index = n_harmony_calls_;
  d.arguments = std::move(piece);
  out->call_deltas.push_back(std::move(d));
}

void ChatParser::end_harmony_message(ChatDelta* out) {
  if (!recipient_.empty()) stream_harmony_call("", /*end=*/true, out);
  if (call_args_) {
    // Reported as it was read: a call, with the arguments streamed.
    ParsedToolCall c;
    c.name = call_name_;
    c.arguments = call_args_->text();
    out->calls.push_back(std::move(c));
    ++n_harmony_calls_;
  } else if (!recipient_.empty()) {
    const std::string_view name = chat_parser_function_name(recipient_);
    Json args = Json::parse(call_body_, nullptr, /*allow_exceptions=*/false);
    if (!name.empty() && !args.is_discarded() && args.is_object()) {
      ParsedToolCall c;
      c.name = std::string(name);
      c.arguments = args.dump(-1, ' ', false, Json::error_handler_t::replace);
      ToolCallDelta d;
      d.index = n_harmony_calls_++;
      d.first = true;
      d.name = c.name;
      d.arguments = c.arguments;
      out->call_deltas.push_back(std::move(d));
      out->calls.push_back(std::move(c));
    } else {
      out->content += call_body_;
    }
  }
  channel_.clear();
  recipient_.clear();
  call_body_.clear();
  call_args_.reset();
  call_decided_ = false;
}

void ChatParser::feed_harmony(ChatDelta* out) {
  for (;;) {
    const std::string_view b = buf_;
    switch (state_) {
      case State::kHeader: {
        const size_t pos = b.find(kHarmonyMessage);
        if (pos == std::string_view::npos) {
          // A header starts with a control token; text that does not is an
          // answer written without channels.
          const size_t i = chat_parser_first_non_space(b);
          if (i == b.size()) return;
          const std::string_view rest = b.substr(i);
          if (rest.substr(0, 2) == "<|" || rest == "<") return;
          state_ = State::kPlain;
          continue;
        }
        start_harmony_message(b.substr(0, pos));
        buf_.erase(0, pos + kHarmonyMessage.size());
        state_ = State::kBody;
        continue;
      }
      case State::kBody: {
        const auto [pos, len] = chat_parser_harmony_end(b);
        const size_t take = pos == std::string_view::npos ? b.size() : pos;
        const std::string_view body = b.substr(0, take);
        if (!recipient_.empty()) {
          call_body_ += body;
          stream_harmony_call(body, /*end=*/false, out);
        } else if (channel_ == "analysis" && !reasoning_to_content_) {
          out->reasoning += body;
        } else {
          out->content += body;
        }
        if (pos == std::string_view::npos || len == 0) {
          buf_.erase(0, take);
          return;
        }
        end_harmony_message(out);
        // <|start|> opens the next message's header: keep it there.
        const bool is_start = b.substr(pos, len) == "<|start|>";
        buf_.erase(0, is_start ? pos : pos + len);
        state_ = State::kHeader;
        continue;
      }
      default:
        out->content += buf_;
        buf_.clear();
        return;
    }
  }
}

void ChatParser::finish(ChatDelta* out) {
  switch (state_) {
    case State::kStart:
      put_content(buf_, out);
      break;
    case State::kReasoning:
      put_reasoning(buf_, /*last=*/true, out);
      break;
    case State::kHeader:
      break;  // control text only
    case State::kBody:
      if (!recipient_.empty()) {
        call_body_ += buf_;
        stream_harmony_call(buf_, /*end=*/false, out);
      } else if (channel_ == "analysis" && !reasoning_to_content_) {
        out->reasoning += buf_;
      } else {
        out->content += buf_;
      }
      end_harmony_message(out);
      break;
    case State::kContent:
      if (!content_trim_) put_content(buf_, out);
      break;
    case State::kPlain:
      out->content += buf_;
      break;
  }
  buf_.clear();
  if (tools_) {
    tools_->finish(&out->content, &out->calls);
    tools_->take_deltas(&out->call_deltas);
  }
}

ChatDelta ChatParser::parse_all(const ChatFormat& format, ReasoningFormat reasoning,
                                bool starts_in_reasoning, bool parse_tools, const Json* tools,
                                std::string_view text) {
  ChatParser p(format, reasoning, starts_in_reasoning, parse_tools, tools);
  ChatDelta out;
  p.feed(text, &out);
  p.finish(&out);
  return out;
}

}  // namespace folio::chat
