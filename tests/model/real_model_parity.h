// Parity of folio with llama.cpp on a real, quantized model, from committed
// reference files (scripts/gen_gemma_ref.py, scripts/gen_real_model_refs.py).
//
// One teacher-forced pass per prompt: the prompt in one batch, then
// llama.cpp's greedy tokens one at a time, so every position sees the same
// history in both engines even after their greedy choices part.
//   - Greedy: folio's argmax at every step against llama.cpp's token (the
//     steps before the first difference are folio's own greedy continuation).
//     Quantized weights make low-margin steps a coin toss (llama.cpp
//     quantizes activations to q8 in its dot products, folio's kernel tiers
//     differ from it and from each other in such details): a difference fails
//     at a step whose llama.cpp top-1/top-2 gap exceeds flip_margin; at least
//     min_full_prompts prompts must match all their tokens, and at least
//     min_step_agreement of all steps must agree.
//   - Logits: at the recorded steps, folio's logits at llama.cpp's top ids
//     and at a fixed sample of ids from the whole vocabulary, against
//     llama.cpp's values: the largest |difference| and the rms over all of
//     them are bounded (limits measured per model; see each test's header).
#pragma once

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace folio::model::testing {

struct ParityLimits {
  float flip_margin = 0.5f;       // logits
  int min_full_prompts = 0;       // prompts whose greedy tokens all equal llama.cpp's
  double min_step_agreement = 0;  // fraction of steps whose argmax equals llama.cpp's token
  float logit_max_abs = 0.f;      // bound on max |folio - llama.cpp| over the records
  float logit_rms = 0.f;          // bound on the rms of those differences
};

// `prompts`: [{name, prompt_tokens, gen_tokens, step_margins}]; `logits`:
// {sample_ids, prompts: [{name, logits: [{step, top_ids, top_logits,
// sample_logits}]}]}, matched to `prompts` by name. `tag` prefixes the
// printed report. Failures are reported through gtest.
void expect_llamacpp_parity(const Model& m, const nlohmann::json& prompts,
                            const nlohmann::json& logits, const ParityLimits& limits,
                            const char* tag);

}  // namespace folio::model::testing
