// Route handlers behind HttpServer (internal to src/server): they see
// cpp-httplib's types, the rest of folio does not.
#pragma once

#include <httplib.h>

#include <string>

#include "server/api_error.h"
#include "server/generation_service.h"
#include "server/http_server.h"
#include "server/openai_request.h"

namespace folio::server {

void send_error(httplib::Response& res, const ApiError& e);
void send_json(httplib::Response& res, int status, const Json& j);

// POST /v1/completions and /v1/chat/completions with the body already read.
void handle_generation(const ServedModel& model, const ServerOptions& options, ApiKind kind,
                       const std::string& body, httplib::Response& res);
// POST /tokenize and /detokenize.
void handle_tokenize(const ServedModel& model, const std::string& body, httplib::Response& res);
void handle_detokenize(const ServedModel& model, const std::string& body, httplib::Response& res);

}  // namespace folio::server
