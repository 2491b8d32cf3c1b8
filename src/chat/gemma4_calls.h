// Gemma 4's tool calls: <|tool_call>call:NAME{key:value,...}<tool_call|>,
// the arguments in the template's own notation (google-gemma-4 templates'
// format_argument): keys bare, strings between <|"|> quotes (no escapes),
// numbers, true / false, nested {key:value} objects and [a,b] lists.
#pragma once

#include <string_view>

#include "chat/tool_calls.h"

namespace folio::chat {

inline constexpr std::string_view kGemma4CallOpen = "<|tool_call>";
inline constexpr std::string_view kGemma4CallClose = "<tool_call|>";
inline constexpr std::string_view kGemma4Quote = "<|\"|>";

// Reads one call's body (between the open and close markers): "call:NAME{
// ...}". False when it is not one (the text is then content).
bool parse_gemma4_call(std::string_view body, ParsedToolCall* out);

}  // namespace folio::chat
