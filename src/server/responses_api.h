// POST /v1/responses: OpenAI's Responses API on the chat path of
// /v1/chat/completions. A request is translated into the same internal chat
// request (OpenAiRequest), generated and read back in the model's chat
// format (server/chat_api_reply.h); what the parser gives becomes output
// items.
//
// Request fields:
//   model, input (a string: one user message; or a list of items: messages
//   {"type"?: "message", "role": user | assistant | system | developer,
//   "content": string or parts input_text / output_text}, function_call
//   {"call_id", "name", "arguments"}, function_call_output {"call_id",
//   "output"}, reasoning {"content": [reasoning_text], "summary":
//   [summary_text]}: its text becomes the next assistant message's
//   reasoning), instructions (a system message first; not carried over by
//   previous_response_id), tools (function tools in Responses' flat shape
//   {"type": "function", "name", "description"?, "parameters"?, "strict"?}),
//   tool_choice ("none" | "auto" | "required" | {"type": "function",
//   "name"}), parallel_tool_calls, max_output_tokens, temperature, top_p,
//   reasoning {"effort": minimal | low | medium | high -> the template's
//   reasoning_effort; "none" -> enable_thinking false}, text {"format":
//   text | json_object | json_schema {name, schema, strict}}, stream,
//   store (default true), previous_response_id (the stored conversation
//   goes before `input`; 404 previous_response_not_found when it is not
//   kept), metadata (echoed). Unknown fields are ignored; background and
//   conversation are refused (400).
// Response: {"id": "resp_...", "object": "response", "created_at", "status":
//   "completed" | "incomplete" (incomplete_details {"reason":
//   "max_output_tokens"}), "model", "output": [reasoning {"id": "rs_...",
//   "summary": [], "content": [{"type": "reasoning_text", "text"}]},
//   message {"id": "msg_...", "role": "assistant", "content": [{"type":
//   "output_text", "text", "annotations": []}]}, function_call {"id":
//   "fc_...", "call_id", "name", "arguments"}], "usage": {"input_tokens",
//   "input_tokens_details", "output_tokens", "output_tokens_details":
//   {"reasoning_tokens"}, "total_tokens"}, and the request's settings}.
// Streaming: `event: TYPE` / `data: {"type": TYPE, "sequence_number", ...}`
//   response.created, response.in_progress, then per item
//   response.output_item.added, (message) response.content_part.added,
//   response.output_text.delta..., response.output_text.done,
//   response.content_part.done, (reasoning) response.reasoning_text.delta...,
//   response.reasoning_text.done, (function_call)
//   response.function_call_arguments.delta, ...done, and
//   response.output_item.done; at the end response.completed (or
//   response.incomplete; response.failed with the error).
// Errors are OpenAI's ({"error": {...}}, server/api_error.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_api_reply.h"
#include "server/openai_request.h"
#include "server/response_store.h"

namespace folio::server {

struct ResponsesRequest {
  OpenAiRequest chat;          // the internal chat request (n = 1)
  Json history;                // the conversation without instructions (what the store keeps)
  Json instructions;           // string or null, echoed
  Json tools = Json::array();  // function tools in Responses' shape, echoed
  Json tool_choice = "auto";   // echoed
  Json text_format = Json{{"type", "text"}};
  Json reasoning_effort;   // string or null, echoed
  Json max_output_tokens;  // int or null, echoed
  Json metadata = Json::object();
  Json previous_response_id;  // string or null
  float temperature = 1.0f;
  float top_p = 1.0f;
  bool store = true;
  bool stream = false;
};

// Field-level parsing and translation; previous_response_id is resolved in
// `store` (may be null: every id is then unknown). False with *error (a 400
// naming the field, or 404 for an unknown previous response).
bool parse_responses_request(const Json& body, ResponseStore* store, ResponsesRequest* out,
                             ApiError* error);

// The Responses shape of one generation: body, stream events, and the store.
class ResponsesWriter final : public ChatApiWriter {
 public:
  // `tok` counts the reasoning tokens; `store` keeps the conversation when
  // the request asks for it (may be null).
  ResponsesWriter(const ResponsesRequest& request, std::string model,
                  const tokenizer::Tokenizer* tok, std::shared_ptr<ResponseStore> store);

  const std::string& id() const { return id_; }

  std::string stream_start() override;
  std::string stream_reasoning(std::string_view text) override;
  std::string stream_content(std::string_view text) override;
  std::string stream_call_delta(const chat::ToolCallDelta& delta) override;
  std::string stream_call_done(const chat::ParsedToolCall& call) override;
  std::string stream_end(const ChatOutcome& outcome) override;
  std::string stream_error(const ApiError& error) override;
  Json body(const ChatOutcome& outcome) override;
  HttpReply error_reply(const ApiError& error) override { return error.reply(); }

 private:
  enum class Open { kNone, kReasoning, kMessage };
  std::string event(Json e);
  std::string close_open();
  // The response object; `output` its items so far.
  Json response(const char* status, const ChatOutcome* outcome) const;
  void keep(const ChatOutcome& outcome);

  std::string id_;
  int64_t created_at_ = 0;
  std::string model_;
  const tokenizer::Tokenizer* tok_;
  std::shared_ptr<ResponseStore> store_;
  Json settings_;  // the request's echoed fields
  Json history_;
  bool keep_ = true;
  int64_t sequence_ = 0;
  Json output_ = Json::array();
  Open open_ = Open::kNone;
  std::string open_id_;
  std::string open_text_;
  // The function call being streamed: its item id, call id and output index.
  std::string call_item_id_;
  std::string call_id_;
  int64_t call_index_ = 0;
};

// Handler: parse, submit (server/routes.h submit_chat), answer.
RouteResult handle_responses(const ServedModel& model, const std::shared_ptr<ResponseStore>& store,
                             const std::string& body);

}  // namespace folio::server
