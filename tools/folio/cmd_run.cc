// `folio run -m MODEL -p PROMPT [-n N] [sampling flags]`: streams the
// continuation of PROMPT to stdout, then prompt and generation speed to stderr.
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "engine/generator.h"

namespace folio::tools {

namespace {

struct RunFlags {
  ModelFlags model;
  SamplingFlags sampling;
  std::string prompt;
  int64_t n_predict = 256;
  bool ignore_eos = false;
  bool no_bos = false;
  bool parse_special = true;
  bool echo = false;
};

int run(const RunFlags& f) {
  auto lm = load_for_generation(f.model);
  if (!lm.ok()) {
    std::fprintf(stderr, "folio: %s\n", lm.status().message().c_str());
    return 1;
  }
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) {
    std::fprintf(stderr, "folio: %s\n", params.status().message().c_str());
    return 1;
  }
  tokenizer::TokenizeOptions to;
  to.add_special = !f.no_bos;
  to.parse_special = f.parse_special;
  std::vector<int32_t> prompt = lm->tokenizer->tokenize(f.prompt, to);
  if (prompt.empty()) {
    std::fprintf(stderr, "folio: the prompt is empty (no tokens)\n");
    return 1;
  }
  if (f.echo) {
    std::fputs(f.prompt.c_str(), stdout);
    std::fflush(stdout);
  }
  Generator gen(*lm->model, *lm->tokenizer, *lm->ctx, *lm->cache);
  GenerateOptions go;
  go.n_predict = f.n_predict;
  go.n_batch = f.model.batch_size;
  go.ignore_eos = f.ignore_eos;
  auto stats = gen.generate(prompt, *params, go, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok()) {
    std::fprintf(stderr, "folio: %s\n", stats.status().message().c_str());
    return 1;
  }
  const double pp = stats->prompt_seconds > 0 ? stats->n_prompt / stats->prompt_seconds : 0;
  const double tg = stats->gen_seconds > 0 && stats->n_generated > 0
                        ? stats->n_generated / stats->gen_seconds
                        : 0;
  std::fprintf(stderr,
               "folio: prompt %lld tokens in %.2f s (%.1f tokens/s); generated %lld tokens in "
               "%.2f s (%.1f tokens/s); stop: %s; seed %llu\n",
               static_cast<long long>(stats->n_prompt), stats->prompt_seconds, pp,
               static_cast<long long>(stats->n_generated), stats->gen_seconds, tg,
               stop_reason_name(stats->stop),
               static_cast<unsigned long long>(stats->seed));
  return 0;
}

}  // namespace

void register_run_command(CLI::App& app, CommandFn* selected) {
  static RunFlags flags;
  CLI::App* cmd = app.add_subcommand("run", "generate a continuation of a prompt");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  cmd->add_option("-p,--prompt", flags.prompt, "prompt text")->required();
  cmd->add_option("-n,--n-predict", flags.n_predict, "tokens to generate (-1 = until end)")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", flags.ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--no-bos", flags.no_bos, "do not add the BOS token automatically");
  cmd->add_flag("!--no-parse-special", flags.parse_special,
                "treat special-token text in the prompt as plain text");
  cmd->add_flag("--echo", flags.echo, "print the prompt before the generated text");
  cmd->callback([selected] { *selected = [] { return run(flags); }; });
}

}  // namespace folio::tools
