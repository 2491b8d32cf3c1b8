// OpenAI request bodies -> validated, model-independent request descriptions.
//
// /v1/completions and /v1/chat/completions share most fields. Everything is
// checked here except what needs the model (token ids against the
// vocabulary, logit_bias ids, the context length), which the handler checks
// once the prompt is tokenized. Defaults are OpenAI's: temperature 1, top_p
// 1, top_k and min_p off, no penalties; max_tokens 16 for completions and
// "until the context is full" for chat. Unknown fields are ignored, null
// means "default" for every optional field.
//
// Accepted fields (types as OpenAI documents them):
//   model, max_tokens, max_completion_tokens, temperature, top_p, top_k,
//   min_p, presence_penalty, frequency_penalty, repetition_penalty
//   (alias repeat_penalty), repeat_last_n, seed, stop (string or list), n,
//   logprobs, top_logprobs (chat), logit_bias (object: token id string ->
//   bias in [-100, 100]), echo (completions), stream, stream_options
//   {include_usage}, user (ignored), priority (folio: higher runs first),
//   ignore_eos, speculative (folio: false keeps this request out of
//   speculative decoding), best_of (must equal n), suffix (must be empty),
//   response_format ({"type": "text" | "json_object"} or {"type":
//   "json_schema", "json_schema": {"name", "schema", "strict"}}),
//   json_schema (llama-server: a schema), grammar (llama-server: GBNF) --
//   at most one of the three; the output is then sampled under the
//   grammar (grammar/), tools (rendered by the chat
//   template; calls in the output are parsed into tool_calls in the format
//   the template teaches, server/tool_calls.h), tool_choice ("none", "auto",
//   "required" or {"type": "function", "function": {"name"}}; the named
//   function must be one of the tools), parallel_tool_calls,
//   chat_template_kwargs, add_generation_prompt, reasoning_effort
//   ("minimal" | "low" | "medium" | "high": the template's
//   reasoning_effort variable, gpt-oss's "Reasoning:" line, unless
//   chat_template_kwargs sets it), reasoning_budget_tokens (llama-server's
//   name, thinking_budget_tokens its alias: this request's
//   --reasoning-budget, an integer >= -1).
// A chat message's content is a string or a list of text parts; it may be
// null (or absent) only in assistant (tool calls) and function messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "server/api_error.h"

namespace folio::server {

enum class ApiKind { kCompletion, kChat };

// Limits on what one request may ask for.
inline constexpr int kMaxChoices = 16;        // n
inline constexpr int kMaxPrompts = 64;        // completions: prompts in one request
inline constexpr int kMaxChoicesTotal = 128;  // prompts * n
inline constexpr int kMaxJsonDepth = 64;      // nesting of arrays / objects in a body

// One completions prompt: text (tokenized by the handler) or token ids.
struct PromptInput {
  bool is_tokens = false;
  std::string text;
  std::vector<int32_t> tokens;
};

enum class ToolChoiceMode { kAuto, kNone, kRequired, kNamed };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string name;  // kNamed
};

// What the output must follow (sampled under a grammar), besides tool_choice.
struct OutputConstraint {
  enum class Kind { kNone, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kNone;
  Json schema;          // kJsonSchema
  std::string grammar;  // kGrammar: GBNF text
};

struct OpenAiRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;                 // as sent; "" when absent
  std::vector<PromptInput> prompts;  // completions: 1..kMaxPrompts
  Json messages;                     // chat: non-empty list of message objects
  Json tools;                        // chat: null or a list (null with tool_choice "none")
  ToolChoice tool_choice;            // chat
  bool parallel_tool_calls = true;   // false: at most one call per answer
  OutputConstraint output;
  Json chat_template_kwargs = Json::object();
  std::string reasoning_effort;  // "" when absent
  // Chat: the request's reasoning budget (-1 unrestricted, 0 thinking off
  // where the template can, N > 0 tokens); unset: the server's.
  std::optional<int32_t> reasoning_budget_tokens;
  bool add_generation_prompt = true;
  // OpenAI defaults; max_tokens -1 = until the context is full (the handler
  // caps it by the room the prompt leaves).
  SamplingParams params;
  int n = 1;
  int priority = 0;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: the prompt text precedes the output
  bool ignore_eos = false;
  bool speculative = true;  // false: never carries drafts (folio serve --spec-type)
  // Completions: `logprobs` (an int: the number of top alternatives);
  // chat: `top_logprobs` when `logprobs` is true. -1 = no logprobs.
  int logprobs = -1;
};

// Field-level parsing; the error (400) names the offending field in `param`.
// Returns false and fills *error on failure.
bool parse_openai_request(const Json& body, ApiKind kind, OpenAiRequest* out, ApiError* error);

// Parses a body as a JSON object: 400 "malformed JSON" with the parser's
// position, 400 for a value JSON allows but a double cannot hold (a number
// such as 1e309, anywhere in the body), or for nesting deeper than
// kMaxJsonDepth. Never throws.
bool parse_json_body(const std::string& body, Json* out, ApiError* error);

}  // namespace folio::server
