#include "bench/spec_bench.h"

#include <algorithm>

#include "engine/generator.h"
#include "engine/sampling_params.h"
#include "model/hidden_states.h"

namespace folio::tools {

namespace {

void spec_bench_add_counts(const SpeculationCounts& from, SpeculationCounts* to) {
  to->drafts += from.drafts;
  to->draft_tokens += from.draft_tokens;
  to->accepted_tokens += from.accepted_tokens;
  if (to->accepted_per_pos.size() < from.accepted_per_pos.size())
    to->accepted_per_pos.resize(from.accepted_per_pos.size(), 0);
  for (size_t i = 0; i < from.accepted_per_pos.size(); ++i)
    to->accepted_per_pos[i] += from.accepted_per_pos[i];
}

}  // namespace

Result<SpecBenchResult> run_spec_bench(const model::Model& model,
                                       const tokenizer::Tokenizer& tok,
                                       model::ForwardContext& ctx, cache::KvCache& cache,
                                       int seq, std::span<const int32_t> prompt,
                                       const std::string& label, const SpecBenchOptions& options) {
  if (options.repetitions < 1)
    return invalid_argument("bench: repetitions must be >= 1, got {}", options.repetitions);
  if (options.n_gen < 1)
    return invalid_argument("bench: --spec needs -n >= 1 tokens to generate, got {}",
                            options.n_gen);
  if (!options.spec.enabled())
    return invalid_argument("bench: a speculation measurement needs a proposer (ngram or draft)");
  FOLIO_RETURN_IF_ERROR(options.spec.validate());
  if (prompt.empty()) return invalid_argument("bench: prompt '{}' has no tokens", label);
  if (static_cast<int64_t>(prompt.size()) + options.n_gen > cache.n_ctx()) {
    return invalid_argument(
        "bench: prompt '{}' ({} tokens) and -n {} do not fit the context of {} tokens", label,
        prompt.size(), options.n_gen, cache.n_ctx());
  }

  SamplingParams params;
  params.temperature = 0.0f;  // greedy: the output with speculation must equal the one without
  params.seed = options.seed;
  Generator gen(model, tok, ctx, cache, seq);
  SpecBenchResult r;
  r.prompt = label;
  r.n_prompt = static_cast<int64_t>(prompt.size());
  r.n_gen = options.n_gen;
  std::vector<int32_t> want;  // the first base run's tokens
  bool have_want = false;

  // One generation; its tokens/s and, with speculation, its counts.
  auto once = [&](bool speculate, int64_t n_gen, double* ts,
                  SpeculationCounts* counts) -> Status {
    gen.reset();
    GenerateOptions go;
    go.n_predict = n_gen;
    go.n_batch = options.n_batch;
    if (speculate) go.spec = options.spec;
    // The base runs keep no hidden states for an MTP head: they measure
    // plain decoding.
    model::HiddenStates* sink = options.spec.type == SpecType::kMtp ? options.spec.mtp.hidden : nullptr;
    if (sink != nullptr) ctx.set_hidden_sink(speculate ? sink : nullptr);
    Result<GenerateStats> st =
        gen.generate(prompt, params, go, [](std::string_view) { return true; });
    if (sink != nullptr) {
      ctx.set_hidden_sink(sink);
      sink->forget(seq);
    }
    gen.reset();
    if (!st.ok()) return st.status().with_context(speculate ? "with speculation" : "without");
    // A run shorter than the first base run (warmup) is compared on its length.
    if (!have_want) {
      want = st->tokens;
      have_want = true;
    } else {
      const size_t n = std::min(want.size(), st->tokens.size());
      if (!std::equal(st->tokens.begin(), st->tokens.begin() + static_cast<std::ptrdiff_t>(n),
                      want.begin()) ||
          (st->tokens.size() != want.size() && n_gen == options.n_gen)) {
        r.identical = false;
      }
    }
    if (ts != nullptr) {
      *ts = st->gen_seconds > 0 ? static_cast<double>(st->n_generated) / st->gen_seconds : 0.0;
    }
    if (counts != nullptr) spec_bench_add_counts(st->spec, counts);
    return Status();
  };

  if (options.warmup) {
    if (options.log != nullptr) {
      std::fprintf(options.log, "bench: %s warmup\n", label.c_str());
      std::fflush(options.log);
    }
    const int64_t n = std::min<int64_t>(options.n_gen, 16);
    FOLIO_RETURN_IF_ERROR(once(false, n, nullptr, nullptr).with_context(label + " warmup"));
    FOLIO_RETURN_IF_ERROR(once(true, n, nullptr, nullptr).with_context(label + " warmup"));
    // The reference is a full-length run.
    have_want = false;
    want.clear();
  }

  for (int rep = 0; rep < options.repetitions; ++rep) {
    double base_ts = 0;
    double spec_ts = 0;
    const bool base_first = rep % 2 == 0;  // base spec | spec base | ...
    for (int k = 0; k < 2; ++k) {
      const bool speculate = (k == 0) != base_first;
      // The reference must come from a base run: in a spec-first pair before
      // any base run the spec tokens would become it (never: rep 0 is base first).
      const Status st = once(speculate, options.n_gen, speculate ? &spec_ts : &base_ts,
                             speculate ? &r.counts : nullptr);
      if (!st.ok()) return st.with_context(label);
      if (!speculate && rep == 0) r.n_generated = static_cast<int64_t>(want.size());
    }
    r.base_ts.push_back(base_ts);
    r.spec_ts.push_back(spec_ts);
    if (options.log != nullptr) {
      std::fprintf(options.log, "bench: %s rep %d/%d: %.2f tokens/s without, %.2f with\n",
                   label.c_str(), rep + 1, options.repetitions, base_ts, spec_ts);
      std::fflush(options.log);
    }
  }
  r.base = mean_stddev(r.base_ts);
  r.spec = mean_stddev(r.spec_ts);
  r.speedup = r.base.mean > 0 ? r.spec.mean / r.base.mean : 0.0;
  return r;
}

}  // namespace folio::tools
