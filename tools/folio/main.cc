// folio: command-line entry point. Each subcommand lives in a cmd_*.cc file;
// llama.cpp's multi-letter single-dash flags are rewritten first
// (llama_args.h). Global flags (--log-level, --isa) are accepted before or
// after the subcommand.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "llama_args.h"
#include "version.h"

int main(int argc, char** argv) {
  CLI::App app{"folio: LLM inference engine and OpenAI-compatible server for GGUF models"};
  app.name("folio");
  app.require_subcommand(0, 1);
  app.fallthrough();  // subcommands inherit it: global flags may follow them
  app.set_version_flag("--version", folio::tools::version_text());
  app.footer("Run 'folio COMMAND --help' for a command's flags.");
  std::string log_level = "info";
  std::string isa;
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app.add_option("--isa", isa, "limit kernels to an ISA tier")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512", "amx"}));

  folio::tools::CommandFn selected;
  folio::tools::register_run_command(app, &selected);
  folio::tools::register_chat_command(app, &selected);
  folio::tools::register_serve_command(app, &selected);
  folio::tools::register_batch_command(app, &selected);
  folio::tools::register_bench_command(app, &selected);
  folio::tools::register_logits_command(app, &selected);
  folio::tools::register_tokenize_command(app, &selected);
  folio::tools::register_gguf_command(app, &selected);
  folio::tools::register_info_command(app, &selected);

  std::vector<std::string> args(argv + 1, argv + argc);
  args = folio::tools::normalize_llama_args(std::move(args));
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!selected) {  // no subcommand: usage
    std::fputs(app.help().c_str(), args.empty() ? stdout : stderr);
    return args.empty() ? 0 : 2;
  }
  folio::LogLevel level;
  folio::parse_log_level(log_level, &level);  // checked while parsing
  folio::set_log_level(level);
  if (!isa.empty()) {
    folio::Isa limit;
    folio::parse_isa(isa, &limit);  // checked while parsing
    folio::set_isa_limit(limit);
  }
  return selected();
}
