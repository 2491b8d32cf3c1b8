// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API
// on the chat path of /v1/chat/completions. A request is translated into
// the same internal chat request (OpenAiRequest), generated and read back in
// the model's chat format (server/chat_api_reply.h); what the parser gives
// becomes content blocks.
//
// Request fields:
//   model (required), max_tokens (required, >= 1; not for count_tokens),
//   messages (required: role user | assistant, content a string or blocks:
//   text {"text"}; tool_use {"id", "name", "input": object} (assistant) ->
//   a tool call; tool_result {"tool_use_id", "content": string or text
//   blocks, "is_error"?} (user) -> a tool message; thinking {"thinking",
//   "signature"?} (assistant) -> the message's reasoning; redacted_thinking
//   is dropped; other block types are refused), system (a string or text
//   blocks), tools ({"name", "description"?, "input_schema"}; a "type"
//   other than "custom" is refused), tool_choice ({"type": "auto" | "any" |
//   "tool" (with "name") | "none", "disable_parallel_tool_use"?}),
//   stop_sequences, temperature ([0, 1]), top_p, top_k, stream, thinking
//   ({"type": "enabled", "budget_tokens"} -> enable_thinking true,
//   {"type": "disabled"} -> false, for templates that read it), metadata
//   (ignored). Unknown fields are ignored.
// Response: {"id": "msg_...", "type": "message", "role": "assistant",
//   "model", "content": [thinking {"thinking", "signature": ""}, text
//   {"text"}, tool_use {"id": "toolu_...", "name", "input"}], "stop_reason":
//   end_turn | max_tokens | stop_sequence | tool_use, "stop_sequence",
//   "usage": {"input_tokens", "output_tokens", "cache_read_input_tokens",
//   "cache_creation_input_tokens"}}.
// Streaming (`event: TYPE` / `data: {"type": TYPE, ...}`): message_start
//   (the message with empty content and the input tokens), ping, per block
//   content_block_start, content_block_delta (text_delta, thinking_delta,
//   input_json_delta), content_block_stop, then message_delta (stop_reason,
//   stop_sequence, usage.output_tokens) and message_stop; a failure is an
//   `error` event.
// count_tokens: {"input_tokens": N}, the prompt's tokens as rendered.
// Errors: {"type": "error", "error": {"type", "message"}} with the status
//   (400 invalid_request_error, 401 authentication_error, 403
//   permission_error, 404 not_found_error, 413 request_too_large, 503
//   overloaded_error, others api_error).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "server/chat_api_reply.h"
#include "server/openai_request.h"

namespace folio::server {

struct AnthropicRequest {
  OpenAiRequest chat;  // the internal chat request (n = 1)
  bool stream = false;
};

// Field-level parsing and translation. `count_tokens`: the body of
// /v1/messages/count_tokens (no max_tokens). False with *error (400 naming
// the field).
bool parse_anthropic_request(const Json& body, bool count_tokens, AnthropicRequest* out,
                             ApiError* error);

// Anthropic's error type for an HTTP status.
const char* anthropic_error_type(int http_status);
// {"type": "error", "error": {"type", "message"}}.
Json anthropic_error_json(const ApiError& error);
// The whole answer in Anthropic's shape, with the error's status.
HttpReply anthropic_error_reply(const ApiError& error);

// The Messages shape of one generation.
class AnthropicWriter final : public ChatApiWriter {
 public:
  // `input_tokens`: the prompt's (message_start carries them).
  AnthropicWriter(std::string model, int64_t input_tokens);

  const std::string& id() const { return id_; }

  std::string stream_start() override;
  std::string stream_reasoning(std::string_view text) override;
  std::string stream_content(std::string_view text) override;
  std::string stream_call_delta(const chat::ToolCallDelta& delta) override;
  std::string stream_call_done(const chat::ParsedToolCall& call) override;
  std::string stream_end(const ChatOutcome& outcome) override;
  std::string stream_error(const ApiError& error) override;
  Json body(const ChatOutcome& outcome) override;
  HttpReply error_reply(const ApiError& error) override { return anthropic_error_reply(error); }

 private:
  enum class Open { kNone, kThinking, kText };
  std::string close_open();

  std::string id_;
  std::string model_;
  int64_t input_tokens_ = 0;
  int index_ = 0;  // the next block's index
  Open open_ = Open::kNone;
};

// Handlers.
RouteResult handle_anthropic_messages(const ServedModel& model, const std::string& body);
HttpReply handle_anthropic_count_tokens(const ServedModel& model, const std::string& body);

}  // namespace folio::server
