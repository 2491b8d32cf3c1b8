// The grammar of the calls tool_choice "required" or a named function
// demands, for formats whose calls start at a marker the model may write
// after text of its own (chat/tool_calls.h: mistral, glm, nemotron, lfm2,
// deepseek, deepseek_v3_2, kimi, minimax, command, functionary, granite,
// gemma4, and gpt-oss's Harmony). Such a grammar is lazy (grammar/grammar_trigger.h): it starts
// with the marker, its trigger, so the model thinks and writes text first
// as it was taught, and must then write the call(s) in the format's syntax,
// each call's arguments following the tool's parameters schema (any object
// where the grammar engine cannot take a non-strict tool's schema). The
// markers are control tokens in most of these vocabularies: the grammar
// reads them as their text (the request renders control tokens).
// Functionary v3.2's reply opens with its recipient (the prompt ends with
// ">>>"): its grammar has no trigger and holds from the first token, a
// message to "all" allowed before the calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_format.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace folio::server {

struct LazyCallGrammar {
  std::string gbnf;
  std::vector<std::string> triggers;  // the words its text starts at (none: from the start)
};

// Whether `format` (with reasoning syntax `reasoning`: Harmony's calls come
// with its channels) is one of the formats above.
bool has_lazy_call_grammar(chat::ToolCallFormat format, chat::ReasoningSyntax reasoning);

// The grammar for request `r`'s forced call(s) in `format`; false with
// *error (400) when a tool cannot be enforced or no tool has the name.
bool lazy_call_grammar(const OpenAiRequest& r, chat::ToolCallFormat format,
                       chat::ReasoningSyntax reasoning, LazyCallGrammar* out, ApiError* error);

}  // namespace folio::server
