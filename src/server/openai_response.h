// OpenAI response bodies and streaming chunks.
//
// Non-streaming:
//   completions  {"id": "cmpl-...", "object": "text_completion", "created", "model",
//                 "choices": [{"text", "index", "logprobs", "finish_reason"}], "usage"}
//   chat         {"id": "chatcmpl-...", "object": "chat.completion", "created", "model",
//                 "choices": [{"index", "message": {"role": "assistant", "content",
//                              "reasoning_content"?, "tool_calls"?},
//                              "logprobs", "finish_reason"}], "usage"}
// Streaming (server-sent events, one JSON object per `data:` line, then
// `data: [DONE]`):
//   completions  {"object": "text_completion", "choices": [{"text", "index", "logprobs",
//                 "finish_reason"}]}
//   chat         {"object": "chat.completion.chunk", "choices": [{"index", "delta":
//                 {"role"?, "content"? | "reasoning_content"? | "tool_calls"?},
//                 "logprobs", "finish_reason"}]}
//   with stream_options.include_usage every chunk carries "usage": null and a
//   last chunk has "choices": [] and the usage.
// Logprobs: completions use the legacy shape {"tokens", "token_logprobs",
// "top_logprobs": [{token: logprob}], "text_offset"}; chat uses {"content":
// [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generator.h"
#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "chat/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace folio::server {

// What every response and chunk of one request repeats.
struct ResponseContext {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;  // make_response_id()
  int64_t created = 0;
  std::string model;
  bool include_usage = false;  // streaming only
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

// One choice's whole output (non-streaming).
struct ChoiceOutput {
  std::string text;                  // with the echoed prompt first when echo
  std::vector<SampledToken> tokens;  // generated tokens (used for logprobs)
  // Logprobs list tokens[0, kept_tokens) only: the engine's
  // ChoiceResult::kept_tokens, which leaves out the tokens whose text lies
  // wholly at or after a stop string. -1 (or more than tokens.size()): all.
  int64_t kept_tokens = -1;
  int64_t text_offset_base = 0;  // completions logprobs: bytes before the first token
  std::string finish_reason;     // "stop" | "length" | "tool_calls"
  // Chat: calls parsed out of the output (text then holds the rest; an
  // empty rest is sent as null content).
  std::vector<chat::ParsedToolCall> tool_calls;
  // Chat: the reasoning split out of the output (message.reasoning_content
  // when not empty).
  std::string reasoning;
};

// "stop" for end of generation and stop strings, "length" otherwise.
const char* finish_reason_name(StopReason r);
// "cmpl-" / "chatcmpl-" and 24 random hex digits.
std::string make_response_id(ApiKind kind);
// `prefix` and 24 random alphanumerics (the ids of the Responses and
// Anthropic APIs: "resp_", "msg_", "toolu_", ...).
std::string random_id(std::string_view prefix);

Json usage_json(const Usage& u);

// Logprobs of `tokens` in the shape of `kind`; *text_offset (completions)
// advances by each token's text length.
Json logprobs_json(ApiKind kind, const tokenizer::Tokenizer& tok,
                   std::span<const SampledToken> tokens, int64_t* text_offset);

// The whole non-streaming body. `with_logprobs`: the request asked for them
// (each choice's first kept_tokens tokens).
Json response_body(const ResponseContext& ctx, std::span<const ChoiceOutput> choices,
                   const Usage& usage, const tokenizer::Tokenizer& tok, bool with_logprobs);

// One streaming chunk for one choice. Chat: `role` adds "role": "assistant"
// to the delta; an empty `text` without role gives an empty delta (the
// final chunk). `logprobs` is null or logprobs_json(); `finish_reason`
// nullptr while the choice is running.
Json stream_chunk(const ResponseContext& ctx, int index, bool role, std::string_view text,
                  Json logprobs, const char* finish_reason);
// A chat chunk with reasoning of choice `index`: delta {"reasoning_content"}.
Json reasoning_chunk(const ResponseContext& ctx, int index, std::string_view reasoning);
// A chunk with one tool-call delta of choice `index`: delta {"tool_calls":
// [{"index", "id", "type": "function", "function": {"name", "arguments"}}]}
// for a call's first delta (the model's id, else a new one), [{"index",
// "function": {"arguments"}}] for the pieces after it.
Json tool_call_delta_chunk(const ResponseContext& ctx, int index, const chat::ToolCallDelta& delta);
// An OpenAI tool call id: the model's own, else "call_" and 24 random
// alphanumerics.
std::string tool_call_id(const chat::ParsedToolCall& call);
// The last chunk with stream_options.include_usage.
Json usage_chunk(const ResponseContext& ctx, const Usage& usage);

// `data: <json>\n\n`.
std::string sse_event(const Json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace folio::server
