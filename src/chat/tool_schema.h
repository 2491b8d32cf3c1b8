// What a request's tool definitions say about a call's parameters, for the
// formats that write argument values as text (qwen_xml, glm, minimax,
// deepseek_v3_2): the JSON type a tool's schema gives a parameter, and a
// value's text read by that type.
#pragma once

#include <string>
#include <string_view>

#include "chat/tool_calls.h"

namespace folio::chat {

// The JSON type tool `tool`'s schema gives parameter `param` ("" when the
// tools, the tool, the parameter or its "type" string is missing). `tools`
// is OpenAI's [{"type": "function", "function": {"name", "parameters"}}]
// (a bare function object per entry is accepted too), null if none.
std::string tool_param_type(const Json* tools, std::string_view tool, std::string_view param);

// A parameter's value written as text: a string where the schema says
// string, else the JSON the text spells when it is JSON, else the text as a
// string.
Json tool_param_value(const Json* tools, std::string_view tool, std::string_view param,
                      std::string_view value);

}  // namespace folio::chat
