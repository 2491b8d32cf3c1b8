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
#include "grammar/grammar_trigger.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace folio::server {

// Null (and true) when the request is unconstrained; false with *error (a
// 400 naming the field) when its schema / grammar / tool_choice cannot be
// enforced. `reasoning`: the model's reasoning syntax; a tool-call grammar
// then lets the reply open with a reasoning block (OPEN text CLOSE, the text
// free of the close tag), or start inside one where the prompt opened it
// (`starts_in_reasoning`), so a thinking model thinks before it calls.
//
// A forced call on a format whose call starts at a marker after text the
// model may write first (server/tool_call_grammar.h) gives a lazy grammar:
// *triggers gets the words it starts at (and end_before_trigger false, the
// call being required); without `triggers` such a request is a 400.
bool output_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                    std::shared_ptr<const grammar::CompiledGrammar>* out, ApiError* error,
                    chat::ReasoningSyntax reasoning = chat::ReasoningSyntax::kNone,
                    bool starts_in_reasoning = false,
                    grammar::GrammarTriggers* triggers = nullptr);

// GBNF of a reasoning block before rule `then`: text that does not contain
// `close` (a tag whose first character occurs in it only there), then
// `close`, whitespace and `then`; with `open` non-empty, the block is
// optional and opens with it. Rule names start with `prefix`.
std::string reasoning_prefix_gbnf(std::string_view open, std::string_view close,
                                  std::string_view then, std::string_view prefix);

// The GBNF text of `gbnf` with rule `from` renamed `to` (its definition and
// every reference; string literals, classes and comments untouched).
std::string rename_gbnf_rule(std::string_view gbnf, std::string_view from, std::string_view to);

// GBNF string literal of `s`.
std::string gbnf_literal(std::string_view s);
// `gbnf` with its root renamed `name` and every other rule `name-RULE`.
std::string scope_gbnf_rules(std::string_view gbnf, std::string_view name);
// The GBNF rule `rule` for one XML-style parameter value (qwen_xml, glm,
// minimax): text without "</" where the schema is a plain string, else the
// JSON its schema allows; appended to *g.
bool xml_param_value_gbnf(const Json& schema, std::string_view rule, std::string_view key,
                          std::string_view tool, std::string* g, ApiError* error);
// The request's tools with each one's parameters as the grammar will
// enforce them: a schema the grammar engine cannot take is a 400 when the
// function says strict: true, else that tool's arguments may be any object.
bool enforceable_tools(const Json& tools, Json* out, ApiError* error);

}  // namespace folio::server
