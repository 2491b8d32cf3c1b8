#include "chat/tool_schema.h"

namespace folio::chat {

std::string tool_param_type(const Json* tools, std::string_view tool, std::string_view param) {
  if (tools == nullptr || !tools->is_array()) return "";
  for (const Json& t : *tools) {
    const Json* f = t.is_object() && t.contains("function") ? &t["function"] : &t;
    if (!f->is_object() || f->value("name", "") != tool) continue;
    auto params = f->find("parameters");
    if (params == f->end() || !params->is_object()) return "";
    auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) return "";
    auto p = props->find(std::string(param));
    if (p == props->end() || !p->is_object()) return "";
    auto type = p->find("type");
    return type != p->end() && type->is_string() ? type->get<std::string>() : "";
  }
  return "";
}

Json tool_param_value(const Json* tools, std::string_view tool, std::string_view param,
                      std::string_view value) {
  if (tool_param_type(tools, tool, param) != "string") {
    Json v = Json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!v.is_discarded()) return v;
  }
  return Json(std::string(value));
}

}  // namespace folio::chat
