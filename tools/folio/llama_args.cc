#include "llama_args.h"

#include <array>
#include <string_view>
#include <utility>

namespace folio::tools {

namespace {

// llama.cpp's single-dash multi-letter names -> folio's names.
constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kAliases{{
    {"-sys", "--system-prompt"},
    {"-cnv", "--conversation"},
    {"-no-cnv", "--no-conversation"},
    {"-ngl", "--n-gpu-layers"},
    {"-tb", "--threads-batch"},
    {"-fa", "--flash-attn"},
    {"-ub", "--ubatch-size"},
    {"-np", "--parallel"},
    {"-dev", "--device"},
    {"-md", "--model-draft"},
    {"-devd", "--device-draft"},
    {"-ngld", "--n-gpu-layers-draft"},
}};

// Options whose next argument is a value (so it is never rewritten).
bool takes_value(std::string_view a) {
  static constexpr std::string_view kValued[] = {
      "-p", "--prompt", "--system-prompt", "-r", "--reverse-prompt", "--stop", "-f", "--file",
      "--prompts", "--alias", "--api-key", "--chat-template-file", "--tokens", "--out"};
  for (std::string_view v : kValued) {
    if (a == v) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> normalize_llama_args(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;  // everything after is positional
    for (const auto& [from, to] : kAliases) {
      if (a == from) {
        a = to;
      } else if (a.size() > from.size() && a.compare(0, from.size(), from) == 0 &&
                 a[from.size()] == '=') {
        a = std::string(to) + a.substr(from.size());
      }
    }
    if (takes_value(a)) ++i;  // skip the value
  }
  // The subcommand: the first argument that is not a global option or its value.
  size_t cmd = 0;
  while (cmd < args.size() && args[cmd].size() > 1 && args[cmd][0] == '-') {
    cmd += (args[cmd] == "--log-level" || args[cmd] == "--isa") ? 2 : 1;
  }
  if (cmd >= args.size()) return args;
  const auto has = [&](std::string_view flag) {
    for (size_t i = cmd + 1; i < args.size(); ++i) {
      if (takes_value(args[i])) {
        ++i;
      } else if (args[i] == flag) {
        return true;
      }
    }
    return false;
  };
  // `run --conversation` is llama-cli's conversation mode: folio's chat, with
  // the prompt as the system prompt. --no-conversation is what run does anyway,
  // and --conversation what chat does.
  const bool to_chat = args[cmd] == "run" && has("--conversation");
  if (to_chat) args[cmd] = "chat";
  const std::string_view redundant = args[cmd] == "run" ? "--no-conversation" : "--conversation";
  if (args[cmd] != "run" && args[cmd] != "chat") return args;
  std::vector<std::string> out(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(cmd) + 1);
  for (size_t i = cmd + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == redundant) continue;
    if (to_chat && (a == "-p" || a == "--prompt")) {
      out.push_back("--system-prompt");
    } else {
      out.push_back(a);
    }
    if (takes_value(a) && i + 1 < args.size()) out.push_back(args[++i]);
  }
  return out;
}

}  // namespace folio::tools
