// `folio batch -m MODEL --prompts FILE [--json] [-n N] [-np P]`: runs every
// non-empty line of FILE as a prompt on the serving scheduler (decode-first
// steps of -b tokens, prefix sharing, preemption), up to P sequences at a
// time, with the shared sampling defaults. Prints each prompt's generated
// text as "[LINE] text" (LINE: its 1-based line number in FILE; empty lines
// are skipped but keep the numbering), or with --json one object per prompt
// per line, then a summary object; timing and block usage go to stderr.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "engine/offline_batch.h"

namespace folio::tools {

namespace {

struct BatchFlags {
  ModelFlags model;
  SamplingFlags sampling;
  SpecFlags spec;
  std::string prompts_path;
  int64_t n_predict = -1;
  int parallel = 4;
  bool json = false;
  bool ignore_eos = false;
  bool no_bos = false;
  bool parse_special = true;
};

// A prompt and its 1-based line number in the prompts file.
struct PromptLine {
  int64_t line = 0;
  std::string text;
};

Result<std::vector<PromptLine>> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(StatusCode::kNotFound, "cannot open prompts file '{}'", path);
  std::vector<PromptLine> lines;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back({number, line});
  }
  if (lines.empty()) return invalid_argument("prompts file '{}' has no prompts", path);
  return lines;
}

int run_batch(const BatchFlags& f) {
  auto lines = read_prompts(f.prompts_path);
  if (!lines.ok()) return fail(lines.status());
  auto spec = spec_options(f.spec);
  if (!spec.ok()) return fail(spec.status());
  warn_about_model_flags(f.model);
  auto lm = load_for_batch(f.model, f.parallel, *spec);
  if (!lm.ok()) return fail(lm.status());
  if (const Status st = load_draft(f.model, f.spec, f.parallel, &*lm, &*spec); !st.ok())
    return fail(st);
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) return fail(params.status());
  params->max_tokens = static_cast<int32_t>(std::min<int64_t>(f.n_predict, INT32_MAX));

  tokenizer::TokenizeOptions to;
  to.add_special = !f.no_bos;
  to.parse_special = f.parse_special;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> labels;
  for (const PromptLine& l : *lines) {
    labels.push_back(fmt::format("line {} of '{}'", l.line, f.prompts_path));
    prompts.push_back(lm->tokenizer->tokenize(l.text, to));
    if (prompts.back().empty()) {
      return fail(invalid_argument("line {} of '{}' has no tokens", l.line, f.prompts_path));
    }
  }

  SchedulerOptions so;
  so.max_seqs = f.parallel;
  so.max_batch_tokens = f.model.batch_size;
  so.ubatch = std::min(f.model.ubatch_size, f.model.batch_size);
  so.spec = *spec;
  auto out = run_batch(*lm->model, *lm->tokenizer, *lm->ctx, *lm->cache, prompts, *params, so,
                       f.ignore_eos, labels);
  if (!out.ok()) return fail(out.status());

  int64_t prompt_sum = 0, generated_sum = 0;
  for (size_t i = 0; i < out->results.size(); ++i) {
    const BatchSequenceResult& r = out->results[i];
    const int64_t line = (*lines)[i].line;
    prompt_sum += r.prompt_tokens;
    generated_sum += static_cast<int64_t>(r.tokens.size());
    if (f.json) {
      nlohmann::ordered_json j = {{"line", line},
                                  {"text", r.text},
                                  {"prompt_tokens", r.prompt_tokens},
                                  {"cached_prompt_tokens", r.cached_prompt_tokens},
                                  {"generated_tokens", r.tokens.size()},
                                  {"finish_reason", stop_reason_name(r.stop)}};
      // Invalid UTF-8 in generated text is replaced rather than thrown on.
      std::puts(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    } else {
      std::printf("[%lld] %s\n", static_cast<long long>(line), r.text.c_str());
    }
  }
  const BatchSummary& s = out->summary;
  if (f.json) {
    nlohmann::ordered_json j = {{"summary",
                                 {{"prefill_tokens_computed", s.prefill_tokens_computed},
                                  {"generated_tokens", s.generated_tokens},
                                  {"steps", s.steps},
                                  {"preemptions", s.preemptions},
                                  {"blocks_total", s.blocks_total},
                                  {"blocks_peak", s.blocks_peak},
                                  {"blocks_leaked", s.blocks_leaked},
                                  {"draft_tokens", s.draft_tokens},
                                  {"accepted_draft_tokens", s.accepted_draft_tokens}}}};
    std::puts(j.dump().c_str());
  }
  std::fflush(stdout);
  if (std::FILE* log = info_log()) {
    std::fprintf(
      log,
      "folio: %zu prompts (%lld tokens, %lld prefilled after prefix reuse), %lld generated "
      "in %.2f s (%.1f tokens/s); %lld steps, %lld preemptions; blocks peak %d of %d, "
      "%d leaked\n",
      out->results.size(), static_cast<long long>(prompt_sum),
      static_cast<long long>(s.prefill_tokens_computed), static_cast<long long>(generated_sum),
      s.seconds, s.seconds > 0 ? static_cast<double>(generated_sum) / s.seconds : 0.0,
      static_cast<long long>(s.steps), static_cast<long long>(s.preemptions), s.blocks_peak,
      s.blocks_total, s.blocks_leaked);
    if (spec->enabled()) {
      std::fprintf(log, "folio: speculation (%s): %lld of %lld draft tokens accepted (%.1f%%)\n",
                   spec_type_name(spec->type), static_cast<long long>(s.accepted_draft_tokens),
                   static_cast<long long>(s.draft_tokens),
                   s.draft_tokens > 0 ? 100.0 * static_cast<double>(s.accepted_draft_tokens) /
                                            static_cast<double>(s.draft_tokens)
                                      : 0.0);
    }
  }
  return 0;
}

}  // namespace

void register_batch_command(CLI::App& app, CommandFn* selected) {
  static BatchFlags flags;
  CLI::App* cmd =
      app.add_subcommand("batch", "generate continuations of many prompts concurrently");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  add_spec_flags(cmd, &flags.spec);
  cmd->add_option("--prompts,-f,--file", flags.prompts_path, "file with one prompt per line")
      ->required();
  add_n_predict_flag(cmd, &flags.n_predict, "tokens to generate per prompt");
  cmd->add_option("--parallel", flags.parallel, "sequences running at once (also -np)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_flag("--json", flags.json, "one JSON object per prompt, then a summary object");
  cmd->add_flag("--ignore-eos", flags.ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--no-bos", flags.no_bos, "do not add the BOS token automatically");
  cmd->add_flag("!--no-parse-special", flags.parse_special,
                "treat special-token text in the prompts as plain text");
  cmd->callback([selected] { *selected = [] { return run_batch(flags); }; });
}

}  // namespace folio::tools
