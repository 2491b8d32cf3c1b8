// ChatApiReply: the answer of one chat generation for an API that is not
// Chat Completions (/v1/responses, /v1/messages). The engine's events are
// read back in the model's chat format (chat/chat_parser.h) exactly as
// /v1/chat/completions reads them; a ChatApiWriter turns what that gives
// (reasoning, content, tool calls, the end) into the API's own body or
// stream of events.
//   streaming      head (200, text/event-stream) at once, the writer's
//                  opening events, then its events per parsed delta, its
//                  closing events (or its error event) at the end;
//   non-streaming  the writer's body once generation ends, or the failure
//                  in the writer's error shape with its status.
// A client that leaves gets its request cancelled.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_parser.h"
#include "engine/generator.h"
#include "server/api_error.h"
#include "server/http_message.h"
#include "server/openai_response.h"
#include "server/routes.h"

namespace folio::server {

// What one chat generation produced, parsed.
struct ChatOutcome {
  std::string reasoning;
  std::string content;
  std::vector<chat::ParsedToolCall> calls;
  StopReason stop = StopReason::kEndOfGeneration;
  // The stop string that ended it (stop == kStopString); "" otherwise.
  std::string stop_sequence;
  Usage usage;
};

class ChatApiWriter {
 public:
  virtual ~ChatApiWriter() = default;
  // Streaming: each returns the SSE text to send ("" for nothing).
  virtual std::string stream_start() = 0;
  virtual std::string stream_reasoning(std::string_view text) = 0;
  virtual std::string stream_content(std::string_view text) = 0;
  // A tool call streamed (chat/tool_calls.h ToolCallDelta): its first delta
  // opens it (name, and the model's id or a new one), each delta's
  // arguments piece follows, and stream_call_done closes it with the
  // completed call (whose arguments the pieces spell).
  virtual std::string stream_call_delta(const chat::ToolCallDelta& delta) = 0;
  virtual std::string stream_call_done(const chat::ParsedToolCall& call) = 0;
  // The end: `outcome` holds everything streamed before, and the usage.
  virtual std::string stream_end(const ChatOutcome& outcome) = 0;
  virtual std::string stream_error(const ApiError& error) = 0;
  // Non-streaming.
  virtual Json body(const ChatOutcome& outcome) = 0;
  // A failure before anything was sent: the whole answer.
  virtual HttpReply error_reply(const ApiError& error) = 0;
};

struct ChatApiReplyOptions {
  bool stream = false;
  bool parallel_tool_calls = true;  // false: calls past the first are dropped
  std::vector<std::string> stop;    // the request's stop strings (stop_sequence)
};

// The reply for `sub`, already submitted by submit_chat(); `tools` is the
// request's (the parser reads their parameter types).
std::shared_ptr<AsyncReply> make_chat_api_reply(const ServedModel& model, ChatSubmission sub,
                                                Json tools, ChatApiReplyOptions options,
                                                std::unique_ptr<ChatApiWriter> writer);

// Which of `stops` ended a generation whose sampled tokens' text (the stop
// string included, since generation ends on the token that completes it)
// is `full`: the engine cuts at the first stop string to complete, so the
// one that occurs first in `full` (the shorter at the same place); "" when
// none does.
std::string matched_stop_sequence(std::string_view full, const std::vector<std::string>& stops);

}  // namespace folio::server
