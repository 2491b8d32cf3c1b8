// Evaluating a token sequence with logits at every position: the prompt is
// fed in chunks of at most n_batch tokens (one forward each, every token an
// output), and each chunk's logits rows go to `sink` before the next chunk
// runs. `folio logits` and the tests use it; with n_batch = 1 it is the
// token-by-token decode path.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "cache/kv_cache.h"
#include "core/status.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace folio::model {

// rows: [n_rows][n_vocab] row-major, rows first_row .. first_row + n_rows - 1.
using LogitsSink = std::function<Status(int64_t first_row, const float* rows, int64_t n_rows)>;

// Runs `tokens` as sequence `seq` of `cache`, continuing from its current
// length. Token ids are checked before anything runs.
Status eval_sequence(const Model& model, cache::KvCache& cache, ForwardContext& ctx,
                     std::span<const int32_t> tokens, int64_t n_batch, const LogitsSink& sink,
                     int seq = 0);

}  // namespace folio::model
