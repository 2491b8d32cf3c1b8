// A chat format: what one family of chat templates teaches a model to
// write, so the server can read a reply back. It pairs the tool-call syntax
// (chat/tool_calls.h) with the reasoning syntax (chat/reasoning.h) and says
// how a client's earlier reasoning reaches the template:
//
//   reasoning   the model writes its thinking
//     think     between <think> and </think> at the start of the reply
//               (DeepSeek-R1 distills, QwQ, Qwen3 / 3.5, GLM-4.5+, Granite,
//               Nemotron, MiniMax-M2, Kimi-K2-Thinking, SmolLM3, ...)
//     seed      <seed:think> ... </seed:think> (Seed-OSS)
//     mistral   [THINK] ... [/THINK] (Magistral, Ministral reasoning)
//     command   <|START_THINKING|> ... <|END_THINKING|> (Command R7B / A)
//     harmony   gpt-oss's channels: <|channel|>analysis<|message|>...<|end|>
//               is reasoning, <|channel|>final<|message|>... is content
//     gemma4    <|channel>thought ... <channel|> (Gemma 4), at the start of
//               the reply or between its parts (interleaved thinking); a
//               stray <channel|> is dropped
//   reasoning_field  the assistant-message field the template reads earlier
//               reasoning from ("reasoning_content", "thinking" for gpt-oss,
//               "reasoning"); a request's reasoning_content is copied there.
//
// The format is detected from the template's source (detect_chat_format) or
// named on the command line (`--chat-format TOOLS[+REASONING]`, e.g.
// "hermes+think", "generic+think", "none+harmony"). A template that shows no
// tool syntax folio knows is detected as "generic" (tools described in the
// prompt, the reply constrained to JSON: chat/generic_tools.h); "none" reads
// no tool calls at all.
#pragma once

#include <string>
#include <string_view>

#include "chat/tool_calls.h"
#include "core/status.h"

namespace folio::chat {

enum class ReasoningSyntax { kNone, kThink, kSeed, kMistral, kCommand, kHarmony, kGemma4 };

struct ChatFormat {
  ToolCallFormat tool_calls = ToolCallFormat::kNone;
  ReasoningSyntax reasoning = ReasoningSyntax::kNone;
  std::string reasoning_field = "reasoning_content";

  // "TOOLS" or "TOOLS+REASONING": what --chat-format takes.
  std::string name() const;
  // Whether the format's markers are control tokens that the detokenizer
  // hides unless asked to render them.
  bool markers_are_special() const;
};

const char* reasoning_syntax_name(ReasoningSyntax s);
// The open / close markers of a tag syntax ("" for kNone and kHarmony).
std::string_view reasoning_open_tag(ReasoningSyntax s);
std::string_view reasoning_close_tag(ReasoningSyntax s);

// The text that opens / closes one reasoning block as the model writes it:
// the tags of a tag syntax, Harmony's analysis message
// ("<|channel|>analysis<|message|>" ... "<|end|>"); empty for kNone. The
// reasoning budget counts between them and forces `close` when it is spent.
struct ReasoningMarkers {
  std::string_view open, close;
};
ReasoningMarkers reasoning_markers(ReasoningSyntax s);

// The format a template's source teaches.
ChatFormat detect_chat_format(std::string_view template_source);
// A --chat-format value; InvalidArgument naming the accepted values.
Result<ChatFormat> parse_chat_format(std::string_view name);

// Copies each assistant message's string reasoning_content into the field
// the format's template reads (reasoning_field) where that field is absent;
// reasoning_content itself stays.
void route_reasoning_field(const ChatFormat& f, Json* messages);

// Gives earlier tool calls' arguments the type the format's template
// expects: JSON text for Functionary v3.2, which concatenates them
// (">>>" + name + "\n" + arguments); every other template gets objects.
void route_call_arguments(const ChatFormat& f, Json* messages);

// --reasoning-format (llama.cpp's flag): kNone leaves the reasoning in the
// content as the model wrote it; kAuto and kDeepseek split it into
// reasoning_content.
enum class ReasoningFormat { kNone, kAuto, kDeepseek };
Result<ReasoningFormat> parse_reasoning_format(std::string_view name);
const char* reasoning_format_name(ReasoningFormat f);

// Whether a rendered prompt leaves the reply inside the reasoning block:
// the template opened it in the generation prompt (QwQ, DeepSeek-R1
// distills, MiniMax-M2, Nemotron 3, ...). Trailing whitespace is ignored.
bool prompt_opens_reasoning(ReasoningSyntax s, std::string_view prompt);

}  // namespace folio::chat
