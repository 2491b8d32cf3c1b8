// Route handlers behind HttpServer (internal to src/server): request text
// in, HttpReply or AsyncReply out.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/chat_format.h"

#include "server/api_error.h"
#include "server/event_queue.h"
#include "server/generation_service.h"
#include "server/http_message.h"
#include "server/openai_request.h"

namespace folio::server {

HttpReply json_reply(int status, const Json& j);

// POST /v1/completions and /v1/chat/completions with the body read: an
// error reply, or the AsyncReply that writes the answer as it is produced.
RouteResult handle_generation(const ServedModel& model, ApiKind kind, const std::string& body);
// The prompt token ids a completions or chat request would be fed (chat
// template, BOS), one list per prompt; false with *err for a request
// generation would refuse.
bool prompt_token_ids(const ServedModel& model, ApiKind kind, const Json& body,
                      std::vector<std::vector<int32_t>>* out, ApiError* err);
// The same for a parsed request (the model's name checked, not the sampling).
bool prompt_token_ids(const ServedModel& model, const OpenAiRequest& request,
                      std::vector<std::vector<int32_t>>* out, ApiError* err);

// One chat generation submitted for an API that shapes its own answer
// (/v1/responses, /v1/messages): the request's events go to `queue` (as
// submission 0), read back in `format`.
struct ChatSubmission {
  std::shared_ptr<EventQueue> queue = std::make_shared<EventQueue>();
  uint64_t id = 0;  // the engine's, for cancel()
  chat::ChatFormat format;
  bool reasoning_open = false;  // the prompt opened the reasoning block
  bool parse_tools = false;     // the request has tools: calls are parsed
  int64_t prompt_tokens = 0;
};
// Checks, renders, tokenizes and submits a chat request with n = 1 the way
// /v1/chat/completions does (model name, sampling, context room, output
// grammar of tool_choice); false with *err (OpenAI's status and message)
// when it refuses.
bool submit_chat(const ServedModel& model, const OpenAiRequest& request, ChatSubmission* out,
                 ApiError* err);
// POST /v1/completions/render and /v1/chat/completions/render (vLLM's): the
// request's prompt token ids without generating, as routers ask every
// replica for them: chat {"token_ids": [...]}, completions one such object
// per prompt in a list.
HttpReply handle_render(const ServedModel& model, ApiKind kind, const std::string& body);
// POST /v1/embeddings (models with an Embedder).
HttpReply handle_embeddings(const ServedModel& model, const std::string& body);
// POST /tokenize and /detokenize.
HttpReply handle_tokenize(const ServedModel& model, const std::string& body);
HttpReply handle_detokenize(const ServedModel& model, const std::string& body);

}  // namespace folio::server
