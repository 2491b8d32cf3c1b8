#include "model/evaluate.h"

#include <algorithm>

namespace folio::model {

Status eval_sequence(const Model& model, cache::KvCache& cache, ForwardContext& ctx,
                     std::span<const int32_t> tokens, int64_t n_batch, const LogitsSink& sink,
                     int seq) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return invalid_argument("no tokens to evaluate");
  if (n_batch <= 0) return invalid_argument("batch size {} must be positive", n_batch);
  const int64_t n_vocab = model.config().n_vocab;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = tokens[static_cast<size_t>(i)];
    if (t < 0 || t >= n_vocab) {
      return invalid_argument("token id {} (position {}) is outside the vocabulary [0, {})", t, i,
                              n_vocab);
    }
  }
  if (!cache.has_sequence(seq)) return invalid_argument("no sequence {} in the KV cache", seq);
  const int64_t start = cache.seq_len(seq);
  if (start + n > cache.n_ctx()) {
    return resource_exhausted("{} tokens after {} cached do not fit the KV cache (n_ctx {})", n,
                              start, cache.n_ctx());
  }
  cache::Batch batch;
  for (int64_t b = 0; b < n; b += n_batch) {
    const int64_t m = std::min(n_batch, n - b);
    batch.clear();
    for (int64_t i = 0; i < m; ++i) {
      batch.add(tokens[static_cast<size_t>(b + i)], static_cast<int32_t>(start + b + i), seq, true);
    }
    FOLIO_ASSIGN_OR_RETURN(TensorView logits, model.forward(batch, cache, ctx));
    FOLIO_RETURN_IF_ERROR(sink(b, static_cast<const float*>(logits.data), m));
  }
  return Status();
}

}  // namespace folio::model
