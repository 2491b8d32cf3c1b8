// Route handlers behind HttpServer (internal to src/server): request text
// in, HttpReply or AsyncReply out.
#pragma once

#include <string>
#include <vector>

#include "server/api_error.h"
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
