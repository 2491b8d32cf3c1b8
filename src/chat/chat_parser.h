// A model's reply read back in its chat format: reasoning, content and tool
// calls, incrementally (streamed deltas) or whole; both give the same
// result however the text is split.
//
// Reasoning (ChatFormat::reasoning; chat/chat_format.h):
//   tags     the reply opens with the syntax's open tag (leading whitespace
//            allowed), or the prompt already opened it (starts_in_reasoning);
//            what lies before the close tag is reasoning, trimmed of
//            surrounding whitespace; the content after it loses its leading
//            whitespace. An open tag anywhere but at the start is content.
//            A reply that ends inside the block is all reasoning. Gemma 4
//            (gemma4) may open further blocks later in the reply: each is
//            reasoning too (set apart by a blank line), and a close marker
//            outside a block is dropped.
//   harmony  messages `<|channel|>C [to=R] [<|constrain|>json]<|message|>
//            BODY` ended by <|end|>, <|call|>, <|return|> or the next
//            <|start|>: channel analysis -> reasoning; a recipient
//            `functions.NAME` -> a tool call whose arguments are BODY (a JSON
//            object, streamed as it is decoded once the body opens with '{';
//            a body that does not goes out as content); any other channel
//            (final, a commentary preamble) -> content. Header text is never
//            content; a reply that does not start with a header is content.
//            With tools and ReasoningFormat::kNone the messages are still
//            parsed (for the calls) and the analysis channel is content.
// Tool calls in the content (ChatFormat::tool_calls) follow chat/tool_calls.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_format.h"
#include "chat/tool_calls.h"

namespace folio::chat {

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> calls;  // the calls completed
  // The same calls for a stream (chat/tool_calls.h): each call's first
  // delta as soon as the format lets its name be known, then the pieces of
  // its arguments; a call in `calls` has had all its deltas by then.
  std::vector<ToolCallDelta> call_deltas;
};

class ChatParser {
 public:
  // `reasoning`: kNone leaves everything as content (llama.cpp's
  // --reasoning-format none). `parse_tools`: the request has tools; their
  // definitions (`tools`, borrowed) give qwen_xml its parameter types.
  ChatParser(const ChatFormat& format, ReasoningFormat reasoning, bool starts_in_reasoning,
             bool parse_tools, const Json* tools = nullptr);

  // Appends to *out what the text fed so far now settles; text that may
  // still turn out to be a marker is held back.
  void feed(std::string_view text, ChatDelta* out);
  // The end of the reply: what is held goes out.
  void finish(ChatDelta* out);

  static ChatDelta parse_all(const ChatFormat& format, ReasoningFormat reasoning,
                             bool starts_in_reasoning, bool parse_tools, const Json* tools,
                             std::string_view text);

  // Whether the parser splits anything (reasoning or tool calls): when not,
  // every byte fed is content.
  bool splits() const { return syntax_ != ReasoningSyntax::kNone || tools_.has_value(); }

 private:
  enum class State { kStart, kReasoning, kContent, kHeader, kBody, kPlain };

  void feed_tags(ChatDelta* out);
  void feed_harmony(ChatDelta* out);
  void put_reasoning(std::string_view text, bool last, ChatDelta* out);
  void put_content(std::string_view text, ChatDelta* out);
  void end_harmony_message(ChatDelta* out);
  void start_harmony_message(std::string_view header);
  // A tool call's body text as it arrives (`end`: the body is complete):
  // reported as deltas once the body opens with '{'.
  void stream_harmony_call(std::string_view body, bool end, ChatDelta* out);

  ReasoningSyntax syntax_ = ReasoningSyntax::kNone;
  std::optional<ToolCallParser> tools_;
  State state_ = State::kContent;
  std::string buf_;                // held-back text
  bool reasoning_started_ = false; // tags: leading whitespace of the reasoning skipped
  bool reasoning_gap_ = false;     // tags: a later block's text follows earlier reasoning
  bool content_trim_ = false;      // tags: content after the close tag loses leading whitespace
  std::string channel_;            // harmony: the current message's channel
  std::string recipient_;          // harmony: its recipient ("" when none)
  std::string call_body_;          // harmony: a tool call's arguments so far
  bool reasoning_to_content_ = false;  // harmony for tool calls alone: analysis is content
  size_t n_harmony_calls_ = 0;         // harmony: calls reported
  // harmony: the call being streamed (its body opened with '{'), and whether
  // the current body's first character has been seen.
  std::optional<ToolCallArgsStream> call_args_;
  bool call_decided_ = false;
  std::string call_name_;
};

}  // namespace folio::chat
