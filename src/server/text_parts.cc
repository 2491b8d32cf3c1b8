#include "server/text_parts.h"

#include <fmt/format.h>

namespace folio::server {

std::string show_json_value(const Json& v) {
  if (v.is_string()) return fmt::format("'{}'", v.get<std::string>().substr(0, 60));
  return std::string(v.type_name());
}

bool text_of_parts(const Json& content, const std::string& where, const char* param,
                   const TextPartRule& rule, std::string* out, ApiError* err) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) {
    *err = bad_request(fmt::format("{} must be a string or a list of parts ({})", where,
                                   rule.accepted),
                       param);
    return false;
  }
  out->clear();
  for (size_t k = 0; k < content.size(); ++k) {
    const Json& part = content[k];
    const std::string at = fmt::format("{}[{}]", where, k);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      *err = bad_request(at + " must be an object with a 'type'", param);
      return false;
    }
    const char* field = rule.text_field(part["type"].get<std::string>());
    if (field == nullptr) {
      *err = bad_request(fmt::format("{}.type {} is not supported here ({})", at,
                                     show_json_value(part["type"]), rule.accepted),
                         param);
      return false;
    }
    auto t = part.find(field);
    if (t == part.end() || !t->is_string()) {
      *err = bad_request(fmt::format("{}.{} must be a string", at, field), param);
      return false;
    }
    if (k > 0) *out += '\n';
    *out += t->get<std::string>();
  }
  return true;
}

}  // namespace folio::server
