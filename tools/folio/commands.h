// Subcommands of the `folio` tool. Each lives in its own cmd_*.cc file and
// registers itself on the CLI11 app; `run` callbacks return a process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace folio::tools {

// Set by the chosen subcommand's callback; main() returns it.
using CommandFn = std::function<int()>;

void register_gguf_command(CLI::App& app, CommandFn* selected);
void register_info_command(CLI::App& app, CommandFn* selected);
void register_logits_command(CLI::App& app, CommandFn* selected);
void register_tokenize_command(CLI::App& app, CommandFn* selected);
void register_run_command(CLI::App& app, CommandFn* selected);
void register_chat_command(CLI::App& app, CommandFn* selected);
void register_batch_command(CLI::App& app, CommandFn* selected);
void register_serve_command(CLI::App& app, CommandFn* selected);
void register_bench_command(CLI::App& app, CommandFn* selected);

}  // namespace folio::tools
