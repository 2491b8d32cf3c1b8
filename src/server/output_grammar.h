// The grammar a chat / completions request's output is sampled under:
// response_format json_object / json_schema, llama-server's json_schema and
// grammar (GBNF), or the tool call that tool_choice "required" or a named
// function demands (in the format the model's template teaches: hermes
// <tool_call>{...}</tool_call>, qwen_xml <function=..><parameter=..> or
// llama3 JSON; the call's arguments follow the tool's parameters schema).
#pragma once

#include <memory>
#include <string>

#include "grammar/compiled_grammar.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "chat/tool_calls.h"

namespace folio::server {

// Null (and true) when the request is unconstrained; false with *error (a
// 400 naming the field) when its schema / grammar / tool_choice cannot be
// enforced.
bool output_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                    std::shared_ptr<const grammar::CompiledGrammar>* out, ApiError* error);

// The GBNF text of `gbnf` with rule `from` renamed `to` (its definition and
// every reference; string literals, classes and comments untouched).
std::string rename_gbnf_rule(std::string_view gbnf, std::string_view from, std::string_view to);

}  // namespace folio::server
