// Tools for Phi-4-mini, whose template renders no `tools` variable and no
// tool calls: it shows a system message's own "tools" field (JSON text)
// between <|tool|> and <|/tool|>, and every message's content as it is.
// The conversation is rewritten before the template sees it:
//   - the tools' function objects ({"name", "description"?, "parameters"})
//     as a JSON list, written as Python's json.dumps writes it (the model
//     card's form), become the system message's "tools" (a system message
//     "You are a helpful assistant with some tools." is added where there
//     is none);
//   - an assistant message's tool calls are appended to its content as the
//     model writes them: <|tool_call|>[{"name": N, "arguments": {...}},
//     ...]<|/tool_call|> (arguments given as JSON text are parsed);
//   - tool results stay messages of role "tool" (rendered <|tool|>...<|end|>).
// The reply is read back by ToolCallParser (chat/tool_calls.h, kPhi4Mini).
#pragma once

#include "chat/tool_calls.h"

namespace folio::chat {

// The messages (a JSON list, as the request sent them) rewritten as above
// for the request's `tools` (OpenAI's list; nothing changes when empty).
Json phi4_tool_messages(const Json& messages, const Json& tools);

}  // namespace folio::chat
