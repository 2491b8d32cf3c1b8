// The text of a message's content in the Responses and Anthropic APIs: a
// string, or a list of typed parts of which only text parts are taken.
#pragma once

#include <string>

#include "server/api_error.h"

namespace folio::server {

// How a request value is shown in an error message: a string (quoted,
// at most 60 bytes) or its JSON type's name.
std::string show_json_value(const Json& v);

// Which parts a list may hold: `text_field(type)` names the string field
// that carries a part's text, or is null for a type the list may not hold;
// `accepted` says in words what is accepted, for the error message.
struct TextPartRule {
  const char* (*text_field)(const std::string& type);
  const char* accepted;
};

// `content` is a string or a list of parts; their texts are joined with
// '\n' into *out. Anything else is a 400 naming `where` and `param`.
bool text_of_parts(const Json& content, const std::string& where, const char* param,
                   const TextPartRule& rule, std::string* out, ApiError* err);

}  // namespace folio::server
