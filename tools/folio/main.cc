// folio: command-line entry point. Subcommands: gguf, info (more arrive with
// models: run, chat, logits, tokenize, serve, bench).
#include <cstdio>

#include "commands.h"
#include "core/cpu_features.h"
#include "core/log.h"

int main(int argc, char** argv) {
  CLI::App app{"folio: LLM inference engine and OpenAI-compatible server for GGUF models"};
  app.require_subcommand(1);
  std::string log_level = "info";
  std::string isa;
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off")
      ->capture_default_str();
  app.add_option("--isa", isa, "limit kernels to an ISA tier: scalar|avx2|avx512|amx");

  folio::tools::CommandFn selected;
  folio::tools::register_gguf_command(app, &selected);
  folio::tools::register_info_command(app, &selected);
  folio::tools::register_logits_command(app, &selected);
  folio::tools::register_tokenize_command(app, &selected);
  folio::tools::register_run_command(app, &selected);
  folio::tools::register_chat_command(app, &selected);
  folio::tools::register_batch_command(app, &selected);
  folio::tools::register_serve_command(app, &selected);
  folio::tools::register_bench_command(app, &selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  folio::LogLevel level;
  if (!folio::parse_log_level(log_level, &level)) {
    std::fprintf(stderr, "folio: bad --log-level '%s'\n", log_level.c_str());
    return 2;
  }
  folio::set_log_level(level);
  if (!isa.empty()) {
    folio::Isa limit;
    if (!folio::parse_isa(isa, &limit)) {
      std::fprintf(stderr, "folio: bad --isa '%s' (expected scalar|avx2|avx512|amx)\n", isa.c_str());
      return 2;
    }
    folio::set_isa_limit(limit);
  }
  return selected ? selected() : 2;
}
