#include "chat/chat_format.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace folio::chat {

namespace {

constexpr std::array<std::pair<ReasoningSyntax, const char*>, 7> kChatFormatReasoningNames = {{
    {ReasoningSyntax::kNone, "none"},
    {ReasoningSyntax::kThink, "think"},
    {ReasoningSyntax::kSeed, "seed"},
    {ReasoningSyntax::kMistral, "mistral"},
    {ReasoningSyntax::kCommand, "command"},
    {ReasoningSyntax::kHarmony, "harmony"},
    {ReasoningSyntax::kGemma4, "gemma4"},
}};

constexpr std::array<ToolCallFormat, 20> kChatFormatToolFormats = {
    ToolCallFormat::kNone,        ToolCallFormat::kHermes,         ToolCallFormat::kQwenXml,
    ToolCallFormat::kLlama3,      ToolCallFormat::kMistral,        ToolCallFormat::kGlm,
    ToolCallFormat::kNemotron,    ToolCallFormat::kLfm2,           ToolCallFormat::kDeepSeek,
    ToolCallFormat::kKimi,        ToolCallFormat::kMiniMax,        ToolCallFormat::kCommand,
    ToolCallFormat::kFunctionary, ToolCallFormat::kFunctionaryV32, ToolCallFormat::kGranite,
    ToolCallFormat::kGemma4,      ToolCallFormat::kDeepSeekV32,    ToolCallFormat::kPhi4Mini,
    ToolCallFormat::kSeed,        ToolCallFormat::kGeneric};

bool chat_format_contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

}  // namespace

const char* reasoning_syntax_name(ReasoningSyntax s) {
  for (const auto& [syntax, name] : kChatFormatReasoningNames) {
    if (syntax == s) return name;
  }
  return "none";
}

std::string_view reasoning_open_tag(ReasoningSyntax s) {
  switch (s) {
    case ReasoningSyntax::kThink:
      return "<think>";
    case ReasoningSyntax::kSeed:
      return "<seed:think>";
    case ReasoningSyntax::kMistral:
      return "[THINK]";
    case ReasoningSyntax::kCommand:
      return "<|START_THINKING|>";
    case ReasoningSyntax::kGemma4:
      return "<|channel>thought";
    case ReasoningSyntax::kNone:
    case ReasoningSyntax::kHarmony:
      break;
  }
  return "";
}

std::string_view reasoning_close_tag(ReasoningSyntax s) {
  switch (s) {
    case ReasoningSyntax::kThink:
      return "</think>";
    case ReasoningSyntax::kSeed:
      return "</seed:think>";
    case ReasoningSyntax::kMistral:
      return "[/THINK]";
    case ReasoningSyntax::kCommand:
      return "<|END_THINKING|>";
    case ReasoningSyntax::kGemma4:
      return "<channel|>";
    case ReasoningSyntax::kNone:
    case ReasoningSyntax::kHarmony:
      break;
  }
  return "";
}

ReasoningMarkers reasoning_markers(ReasoningSyntax s) {
  if (s == ReasoningSyntax::kHarmony) return {"<|channel|>analysis<|message|>", "<|end|>"};
  return {reasoning_open_tag(s), reasoning_close_tag(s)};
}

std::string ChatFormat::name() const {
  std::string n = tool_call_format_name(tool_calls);
  if (reasoning != ReasoningSyntax::kNone) {
    n += '+';
    n += reasoning_syntax_name(reasoning);
  }
  return n;
}

bool ChatFormat::markers_are_special() const {
  // Harmony's channels, [THINK] and Command's thinking markers are control
  // tokens; <think> is an ordinary added token in the families that use it,
  // but rendering control tokens there shows nothing a reply should hide
  // (the end-of-generation token is never part of the text).
  return tool_call_markers_are_special(tool_calls) || reasoning != ReasoningSyntax::kNone;
}

ChatFormat detect_chat_format(std::string_view src) {
  ChatFormat f;
  f.tool_calls = detect_tool_call_format(src);
  if (chat_format_contains(src, "<|channel|>") && chat_format_contains(src, "<|message|>")) {
    f.reasoning = ReasoningSyntax::kHarmony;
  } else if (chat_format_contains(src, "<|channel>thought")) {
    f.reasoning = ReasoningSyntax::kGemma4;
  } else if (chat_format_contains(src, "<seed:think>")) {
    f.reasoning = ReasoningSyntax::kSeed;
  } else if (chat_format_contains(src, "[THINK]")) {
    f.reasoning = ReasoningSyntax::kMistral;
  } else if (chat_format_contains(src, "<|START_THINKING|>")) {
    f.reasoning = ReasoningSyntax::kCommand;
  } else if (chat_format_contains(src, "<think>")) {
    f.reasoning = ReasoningSyntax::kThink;
  }
  // A template without a tool syntax folio knows gets the generic JSON
  // format (Harmony's calls are read with its channels).
  if (f.tool_calls == ToolCallFormat::kNone && f.reasoning != ReasoningSyntax::kHarmony) {
    f.tool_calls = ToolCallFormat::kGeneric;
  }
  // The field the template renders an assistant turn's reasoning from.
  if (chat_format_contains(src, "reasoning_content")) {
    f.reasoning_field = "reasoning_content";
  } else if (chat_format_contains(src, ".thinking") || chat_format_contains(src, "['thinking']")) {
    f.reasoning_field = "thinking";
  } else if (chat_format_contains(src, ".reasoning") ||
             chat_format_contains(src, "['reasoning']")) {
    f.reasoning_field = "reasoning";
  }
  return f;
}

Result<ChatFormat> parse_chat_format(std::string_view name) {
  const size_t plus = name.find('+');
  const std::string_view tools = name.substr(0, plus);
  const std::string_view reasoning =
      plus == std::string_view::npos ? std::string_view("none") : name.substr(plus + 1);
  ChatFormat f;
  bool tools_ok = false;
  std::string tool_names;
  for (ToolCallFormat t : kChatFormatToolFormats) {
    if (!tool_names.empty()) tool_names += ", ";
    tool_names += tool_call_format_name(t);
    if (tools == tool_call_format_name(t)) {
      f.tool_calls = t;
      tools_ok = true;
    }
  }
  bool reasoning_ok = false;
  std::string reasoning_names;
  for (const auto& [syntax, n] : kChatFormatReasoningNames) {
    if (!reasoning_names.empty()) reasoning_names += ", ";
    reasoning_names += n;
    if (reasoning == n) {
      f.reasoning = syntax;
      reasoning_ok = true;
    }
  }
  if (!tools_ok || !reasoning_ok) {
    return invalid_argument(
        "chat format '{}' is not TOOLS[+REASONING] with TOOLS one of {} and REASONING one of {}",
        name, tool_names, reasoning_names);
  }
  if (f.reasoning == ReasoningSyntax::kHarmony) f.reasoning_field = "thinking";
  return f;
}

void route_reasoning_field(const ChatFormat& f, Json* messages) {
  if (f.reasoning_field == "reasoning_content" || !messages->is_array()) return;
  for (Json& m : *messages) {
    if (!m.is_object() || m.value("role", "") != "assistant") continue;
    auto r = m.find("reasoning_content");
    if (r == m.end() || !r->is_string() || m.contains(f.reasoning_field)) continue;
    m[f.reasoning_field] = *r;
  }
}

void route_call_arguments(const ChatFormat& f, Json* messages) {
  if (f.tool_calls != ToolCallFormat::kFunctionaryV32 || !messages->is_array()) return;
  for (Json& m : *messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (Json& call : m["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      Json& fn = call["function"];
      if (fn.contains("arguments") && fn["arguments"].is_structured()) {
        fn["arguments"] = fn["arguments"].dump(-1, ' ', false, Json::error_handler_t::replace);
      }
    }
  }
}

Result<ReasoningFormat> parse_reasoning_format(std::string_view name) {
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "auto") return ReasoningFormat::kAuto;
  if (name == "deepseek") return ReasoningFormat::kDeepseek;
  return invalid_argument("reasoning format '{}' is not one of none, auto, deepseek", name);
}

const char* reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kNone:
      return "none";
    case ReasoningFormat::kAuto:
      return "auto";
    case ReasoningFormat::kDeepseek:
      return "deepseek";
  }
  return "auto";
}

bool prompt_opens_reasoning(ReasoningSyntax s, std::string_view prompt) {
  const std::string_view open = reasoning_open_tag(s);
  if (open.empty()) return false;
  while (!prompt.empty() && (prompt.back() == ' ' || prompt.back() == '\n' ||
                             prompt.back() == '\t' || prompt.back() == '\r')) {
    prompt.remove_suffix(1);
  }
  return prompt.size() >= open.size() && prompt.substr(prompt.size() - open.size()) == open;
}

}  // namespace folio::chat
