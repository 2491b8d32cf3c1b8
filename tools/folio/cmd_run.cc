// `folio run -m MODEL -p PROMPT [-n N] [sampling flags]`: streams the
// continuation of PROMPT to stdout, then prompt and generation speed to stderr.
// The prompt comes from -p (escape sequences processed unless --no-escape),
// -f FILE (verbatim; "-" is standard input) or, with neither, standard input
// when it is not a terminal.
#include <unistd.h>

#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "engine/generator.h"
#include "prompt_text.h"

namespace folio::tools {

namespace {

struct RunFlags {
  ModelFlags model;
  SamplingFlags sampling;
  SpecFlags spec;
  std::string prompt;
  std::string prompt_file;
  bool escape = true;
  int64_t n_predict = -1;
  bool ignore_eos = false;
  bool no_bos = false;
  bool parse_special = true;
  bool echo = false;
};

// The prompt text from -p, -f or a piped standard input.
Result<std::string> prompt_text(const RunFlags& f) {
  if (!f.prompt_file.empty()) return read_text_file(f.prompt_file);
  if (!f.prompt.empty()) return f.escape ? process_escapes(f.prompt) : f.prompt;
  if (isatty(STDIN_FILENO)) {
    return invalid_argument("no prompt: give -p TEXT, -f FILE, or pipe the prompt to stdin");
  }
  return read_text_file("-");
}

int run(const RunFlags& f) {
  Result<std::string> text = prompt_text(f);
  if (!text.ok()) return fail(text.status());
  auto spec = spec_options(f.spec);
  if (!spec.ok()) return fail(spec.status());
  warn_about_model_flags(f.model);
  auto lm = load_for_generation(f.model, *spec);
  if (!lm.ok()) return fail(lm.status());
  if (const Status st = load_draft(f.model, f.spec, 1, &*lm, &*spec); !st.ok()) return fail(st);
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) return fail(params.status());
  tokenizer::TokenizeOptions to;
  to.add_special = !f.no_bos;
  to.parse_special = f.parse_special;
  std::vector<int32_t> prompt = lm->tokenizer->tokenize(*text, to);
  if (prompt.empty()) {
    std::fprintf(stderr, "folio: the prompt is empty (no tokens)\n");
    return 1;
  }
  if (f.echo) {
    std::fwrite(text->data(), 1, text->size(), stdout);
    std::fflush(stdout);
  }
  Generator gen(*lm->model, *lm->tokenizer, *lm->ctx, *lm->cache);
  GenerateOptions go;
  go.n_predict = f.n_predict;
  go.n_batch = prefill_chunk(f.model);
  go.ignore_eos = f.ignore_eos;
  go.spec = *spec;
  auto stats = gen.generate(prompt, *params, go, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok()) return fail(stats.status());
  const double pp = stats->prompt_seconds > 0 ? stats->n_prompt / stats->prompt_seconds : 0;
  const double tg = stats->gen_seconds > 0 && stats->n_generated > 0
                        ? stats->n_generated / stats->gen_seconds
                        : 0;
  if (std::FILE* log = info_log()) {
    std::fprintf(log,
                 "folio: prompt %lld tokens in %.2f s (%.1f tokens/s); generated %lld tokens in "
                 "%.2f s (%.1f tokens/s); stop: %s; seed %llu\n",
                 static_cast<long long>(stats->n_prompt), stats->prompt_seconds, pp,
                 static_cast<long long>(stats->n_generated), stats->gen_seconds, tg,
                 stop_reason_name(stats->stop), static_cast<unsigned long long>(stats->seed));
    if (spec->enabled()) {
      const SpeculationCounts& sc = stats->spec;
      std::fprintf(log,
                   "folio: speculation (%s): %llu of %llu draft tokens accepted (%.1f%%) in %llu "
                   "verifications\n",
                   spec_type_name(spec->type), static_cast<unsigned long long>(sc.accepted_tokens),
                   static_cast<unsigned long long>(sc.draft_tokens), 100.0 * sc.acceptance(),
                   static_cast<unsigned long long>(sc.drafts));
    }
  }
  return 0;
}

}  // namespace

void register_run_command(CLI::App& app, CommandFn* selected) {
  static RunFlags flags;
  CLI::App* cmd = app.add_subcommand("run", "generate a continuation of a prompt");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  add_spec_flags(cmd, &flags.spec);
  CLI::Option* p = cmd->add_option("-p,--prompt", flags.prompt, "prompt text");
  cmd->add_option("-f,--file", flags.prompt_file, "read the prompt from a file ('-': stdin)")
      ->excludes(p);
  cmd->add_flag("-e,--escape,!--no-escape", flags.escape,
                "process escape sequences (\\n, \\t, \\xHH, ...) in -p (default: on)");
  add_n_predict_flag(cmd, &flags.n_predict, "tokens to generate");
  cmd->add_flag("--ignore-eos", flags.ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--no-bos", flags.no_bos, "do not add the BOS token automatically");
  cmd->add_flag("!--no-parse-special", flags.parse_special,
                "treat special-token text in the prompt as plain text");
  cmd->add_flag("--echo", flags.echo, "print the prompt before the generated text");
  cmd->callback([selected] { *selected = [] { return run(flags); }; });
}

}  // namespace folio::tools
