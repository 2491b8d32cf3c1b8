// `folio batch -m MODEL --prompts FILE [--json] [-n N] [--parallel P]`: runs
// every line of FILE (empty lines skipped) as a prompt through one paged KV
// cache, up to P sequences at a time, greedy unless sampling flags say
// otherwise. Prints each prompt's generated text ("[index] text"), or with
// --json one object per prompt per line, then a summary object; timing and
// block usage go to stderr.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cache/paged_kv_cache.h"
#include "cli_common.h"
#include "commands.h"
#include "engine/batch_runner.h"

namespace folio::tools {

namespace {

struct BatchFlags {
  ModelFlags model;
  SamplingFlags sampling;
  std::string prompts_path;
  int64_t n_predict = 256;
  int parallel = 4;
  bool json = false;
  bool ignore_eos = false;
  bool no_bos = false;
  bool parse_special = true;
};

Result<std::vector<std::string>> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(StatusCode::kNotFound, "cannot open prompts file '{}'", path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) return invalid_argument("prompts file '{}' has no prompts", path);
  return lines;
}

int fail(const Status& s) {
  std::fprintf(stderr, "folio: %s\n", s.message().c_str());
  return 1;
}

int run_batch(const BatchFlags& f) {
  auto texts = read_prompts(f.prompts_path);
  if (!texts.ok()) return fail(texts.status());
  auto lm = load_for_batch(f.model, f.parallel);
  if (!lm.ok()) return fail(lm.status());
  cache::KvCache* cache = lm->cache.get();  // paged, or hybrid over a paged part
  if (cache->block_manager() == nullptr)
    return fail(make_error(StatusCode::kInternal, "batch needs a paged KV cache"));
  const int32_t n_vocab = static_cast<int32_t>(lm->model->config().n_vocab);
  auto params = sampling_params(f.sampling, n_vocab);
  if (!params.ok()) return fail(params.status());

  tokenizer::TokenizeOptions to;
  to.add_special = !f.no_bos;
  to.parse_special = f.parse_special;
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < texts->size(); ++i) {
    prompts.push_back(lm->tokenizer->tokenize((*texts)[i], to));
    if (prompts.back().empty()) {
      return fail(invalid_argument("prompt {} has no tokens", i));
    }
  }

  BatchRunner runner(*lm->model, *lm->tokenizer, *lm->ctx, *cache);
  BatchOptions bo;
  bo.parallel = f.parallel;
  bo.n_predict = f.n_predict;
  bo.n_batch = f.model.batch_size;
  bo.ignore_eos = f.ignore_eos;
  auto out = runner.run(prompts, *params, bo);
  if (!out.ok()) return fail(out.status());

  int64_t prompt_sum = 0, generated_sum = 0;
  for (size_t i = 0; i < out->results.size(); ++i) {
    const BatchSequenceResult& r = out->results[i];
    prompt_sum += r.prompt_tokens;
    generated_sum += r.generated_tokens;
    if (f.json) {
      nlohmann::ordered_json j = {{"index", i},
                                  {"text", r.text},
                                  {"prompt_tokens", r.prompt_tokens},
                                  {"cached_prompt_tokens", r.cached_prompt_tokens},
                                  {"generated_tokens", r.generated_tokens}};
      // Invalid UTF-8 in generated text is replaced rather than thrown on.
      std::puts(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    } else {
      std::printf("[%zu] %s\n", i, r.text.c_str());
    }
  }
  const BatchSummary& s = out->summary;
  if (f.json) {
    nlohmann::ordered_json j = {{"summary",
                                 {{"prefill_tokens_computed", s.prefill_tokens_computed},
                                  {"blocks_total", s.blocks_total},
                                  {"blocks_peak", s.blocks_peak},
                                  {"blocks_leaked", s.blocks_leaked}}}};
    std::puts(j.dump().c_str());
  }
  std::fflush(stdout);
  std::fprintf(
      stderr,
      "folio: %zu prompts (%lld tokens, %lld prefilled after prefix reuse), %lld generated "
      "in %.2f s (%.1f tokens/s); %lld steps, %lld preemptions; blocks peak %d of %d, "
      "%d leaked\n",
      out->results.size(), static_cast<long long>(prompt_sum),
      static_cast<long long>(s.prefill_tokens_computed), static_cast<long long>(generated_sum),
      s.seconds, s.seconds > 0 ? static_cast<double>(generated_sum) / s.seconds : 0.0,
      static_cast<long long>(s.steps), static_cast<long long>(s.preemptions), s.blocks_peak,
      s.blocks_total, s.blocks_leaked);
  return 0;
}

}  // namespace

void register_batch_command(CLI::App& app, CommandFn* selected) {
  static BatchFlags flags;
  flags.sampling.params.temperature = 0.0f;  // greedy unless --temp says otherwise
  CLI::App* cmd =
      app.add_subcommand("batch", "generate continuations of many prompts concurrently");
  add_model_flags(cmd, &flags.model);
  add_sampling_flags(cmd, &flags.sampling);
  cmd->add_option("--prompts", flags.prompts_path, "file with one prompt per line")->required();
  cmd->add_option("-n,--n-predict", flags.n_predict,
                  "tokens to generate per prompt (-1 = until end)")
      ->capture_default_str();
  cmd->add_option("--parallel", flags.parallel, "sequences running at once")->capture_default_str();
  cmd->add_flag("--json", flags.json, "one JSON object per prompt, then a summary object");
  cmd->add_flag("--ignore-eos", flags.ignore_eos, "keep generating past end-of-generation tokens");
  cmd->add_flag("--no-bos", flags.no_bos, "do not add the BOS token automatically");
  cmd->add_flag("!--no-parse-special", flags.parse_special,
                "treat special-token text in the prompts as plain text");
  cmd->callback([selected] { *selected = [] { return run_batch(flags); }; });
}

}  // namespace folio::tools
