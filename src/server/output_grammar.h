// The grammar a chat / completions request's output is sampled under:
// response_format json_object / json_schema, llama-server's json_schema and
// grammar (GBNF), or the tool call that tool_choice "required" or a named
// function demands (in the format the model's template teaches: hermes
// <tool_call>{...}</tool_call>, qwen_xml <function=..><parameter=..> or
// llama3 JSON; the call's arguments follow the tool's parameters schema, or
// any object where the grammar engine cannot take a non-strict tool's
// schema), and for the generic format (chat/generic_tools.h) every reply of
// a request with tools: a JSON call, or a {"response": ...} object where
// tool_choice is "auto".
#pragma once

#include <memory>
#include <string>

#include "chat/chat_format.h"
#include "chat/tool_calls.h"
#include "grammar/compiled_grammar.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace folio::server {

// Null (and true) when the request is unconstrained; false with *error (a
// 400 naming the field) when its schema / grammar / tool_choice cannot be
// enforced. `reasoning`: the model's reasoning syntax; a tool-call grammar
// then lets the reply open with a reasoning block (OPEN text CLOSE, the text
// free of the close tag), or start inside one where the prompt opened it
// (`starts_in_reasoning`), so a thinking model thinks before it calls.
bool output_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                    std::shared_ptr<const grammar::CompiledGrammar>* out, ApiError* error,
                    chat::ReasoningSyntax reasoning = chat::ReasoningSyntax::kNone,
                    bool starts_in_reasoning = false);

// GBNF of a reasoning block before rule `then`: text that does not contain
// `close` (a tag whose first character occurs in it only there), then
// `close`, whitespace and `then`; with `open` non-empty, the block is
// optional and opens with it. Rule names start with `prefix`.
std::string reasoning_prefix_gbnf(std::string_view open, std::string_view close,
                                  std::string_view then, std::string_view prefix);

// The GBNF text of `gbnf` with rule `from` renamed `to` (its definition and
// every reference; string literals, classes and comments untouched).
std::string rename_gbnf_rule(std::string_view gbnf, std::string_view from, std::string_view to);

}  // namespace folio::server
