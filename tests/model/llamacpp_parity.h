// The check both reference-parity suites (dense: parity_test.cc, hybrid:
// hybrid_parity_test.cc) run against llama.cpp's logits: prefill the prompt
// of `<base>.prompt_tokens.txt`, compare every row with `<base>.prefill.npy`,
// then greedy-decode the tokens of `<base>.gen_tokens.txt` one at a time,
// expecting each to be the argmax of the previous logits and each row to
// match `<base>.decode.npy`. Prints one summary line tagged `label`.
#pragma once

#include <string>

#include "cache/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace folio::model::testing {

struct ParityTolerance {
  float prefill;  // max |logit - llama.cpp's| over every prompt row
  float decode;   // the same over every decoded row
};

// gtest expectations; returns early (with a failure) on a load or forward error.
void expect_llamacpp_parity(const Model& m, cache::KvCache& cache, ForwardContext& ctx,
                            const std::string& base, ParityTolerance tol, const std::string& label);

}  // namespace folio::model::testing
