// ApiError: an error answer of the OpenAI-compatible API, in OpenAI's shape
//   {"error": {"message": "...", "type": "...", "param": "..."|null, "code": "..."|null}}
// with its HTTP status. Client faults are 4xx (400 bad JSON / parameters,
// 401 API key, 404 route / model, 413 too long), 503 means "try again later"
// (loading, overloaded); 500 is reserved for folio's own bugs.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"
#include "server/http_message.h"

namespace folio::server {

using Json = nlohmann::ordered_json;

struct ApiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the request field at fault; "" -> null
  std::string code;   // machine-readable code; "" -> null

  Json to_json() const;
  // The JSON text of to_json().
  std::string body() const;
  // The whole answer: http_status, application/json, body().
  HttpReply reply() const;
};

ApiError bad_request(std::string message, std::string param = "");
ApiError not_found_error(std::string message, std::string code);
ApiError unauthorized_error();
ApiError too_large_error(std::string message, std::string code);
ApiError unavailable_error(std::string message);
ApiError internal_server_error(std::string message);

// The answer for an engine Status: kInvalidArgument -> 400, kOutOfRange ->
// 413 (context_length_exceeded), kResourceExhausted -> 503, kNotFound -> 404,
// kUnsupported -> 400, anything else -> 500.
ApiError api_error_from_status(const Status& status, std::string param = "");

// Dumps JSON for the wire: invalid UTF-8 (a model can emit partial
// characters) becomes U+FFFD instead of throwing.
std::string dump_json(const Json& j);

}  // namespace folio::server
