// The generic tool-call format: tools for a model whose template shows no
// tool syntax (SmolLM2, Gemma 2 / 3, Phi-3.5, base models), the way
// llama.cpp's generic format gives them. The prompt side:
//   - a system text lists the tools ({"name", "description", "parameters"}
//     as JSON, one a line) and asks for a JSON reply;
//   - earlier calls become the assistant's content as the model would write
//     them ({"tool_calls": [...]}), tool results become user messages
//     {"tool_response": {"tool", "tool_call_id"?, "content"}}, and
//     consecutive user messages are joined (templates that insist on
//     alternating roles accept the conversation);
//   - the template is rendered without `tools`, so it cannot describe them
//     in another syntax.
// The reply side: a JSON schema that the server turns into the grammar the
// reply is sampled under, one object of
//   {"tool_call": {"name": N, "arguments": {...}}}       parallel calls off
//   {"tool_calls": [{"name": N, "arguments": {...}}, ...]}  parallel calls on
//   {"response": "text"}                                  unless a call is required
// read back by ToolCallParser (chat/tool_calls.h, kGeneric).
#pragma once

#include <string>

#include "chat/tool_calls.h"
#include "core/status.h"

namespace folio::chat {

struct GenericToolOptions {
  bool allow_response = true;  // false: tool_choice "required" or a named function
  std::string only_tool;       // a named function: the one tool the reply may call
  bool parallel = true;        // parallel_tool_calls
};

// The messages (a JSON list, as the request sent them) rewritten for the
// template as described above; `system_in_user`: the tools' text opens the
// first user message instead of a system message (templates that refuse a
// system role).
Json generic_tool_messages(const Json& messages, const Json& tools,
                           const GenericToolOptions& options, bool system_in_user);

// The JSON schema of the reply: each call's arguments follow its tool's
// `parameters` (any object when it has none); InvalidArgument when
// `only_tool` is not one of the tools.
Result<Json> generic_reply_schema(const Json& tools, const GenericToolOptions& options);

// The system text describing the tools and the reply.
std::string generic_tools_text(const Json& tools, const GenericToolOptions& options);

}  // namespace folio::chat
