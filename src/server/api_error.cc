#include "server/api_error.h"

namespace folio::server {

Json ApiError::to_json() const {
  Json e = Json::object();
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json(nullptr) : Json(param);
  e["code"] = code.empty() ? Json(nullptr) : Json(code);
  return Json{{"error", std::move(e)}};
}

std::string ApiError::body() const {
  return dump_json(to_json());
}

HttpReply ApiError::reply() const {
  HttpReply r;
  r.status = http_status;
  r.body = body();
  return r;
}

ApiError bad_request(std::string message, std::string param) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError not_found_error(std::string message, std::string code) {
  ApiError e;
  e.http_status = 404;
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

ApiError unauthorized_error() {
  ApiError e;
  e.http_status = 401;
  e.message = "Invalid or missing API key: send 'Authorization: Bearer <key>'";
  e.code = "invalid_api_key";
  return e;
}

ApiError too_large_error(std::string message, std::string code) {
  ApiError e;
  e.http_status = 413;
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

ApiError unavailable_error(std::string message) {
  ApiError e;
  e.http_status = 503;
  e.type = "unavailable_error";
  e.message = std::move(message);
  return e;
}

ApiError internal_server_error(std::string message) {
  ApiError e;
  e.http_status = 500;
  e.type = "server_error";
  e.message = std::move(message);
  return e;
}

ApiError api_error_from_status(const Status& status, std::string param) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
      return bad_request(status.message(), std::move(param));
    case StatusCode::kOutOfRange:
      return too_large_error(status.message(), "context_length_exceeded");
    case StatusCode::kResourceExhausted:
      return unavailable_error(status.message());
    case StatusCode::kNotFound:
      return not_found_error(status.message(), "not_found");
    default:
      return internal_server_error(status.message());
  }
}

std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace folio::server
