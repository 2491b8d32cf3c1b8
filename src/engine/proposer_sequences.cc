#include "engine/proposer_sequences.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace folio {

Result<int> ProposerSequences::add() {
  Result<int> seq = cache_->add_sequence();
  if (!seq.ok()) {
    return resource_exhausted("{}: no room for another sequence ({})", what_,
                              seq.status().message());
  }
  return *seq;
}

void ProposerSequences::remove(int& seq) {
  if (seq < 0) return;
  const Status st = cache_->remove_sequence(seq);
  if (!st.ok()) FOLIO_LOG_ERROR("{}: removing sequence {}: {}", what_, seq, st.to_string());
  seq = -1;
}

bool ProposerSequences::sync(int& seq, std::vector<int32_t>& held,
                             std::span<const int32_t> tokens) {
  if (seq >= 0) {
    size_t common = 0;
    const size_t limit = std::min(held.size(), tokens.size() - 1);  // one token left to feed
    while (common < limit && held[common] == tokens[common]) ++common;
    if (common == held.size()) return true;
    const int64_t cut = cache_->truncation_point(seq, static_cast<int64_t>(common));
    if (cache_->truncate(seq, cut).ok()) {
      held.resize(static_cast<size_t>(cut));
      return true;
    }
    remove(seq);  // start over from an empty sequence
  }
  held.clear();
  Result<int> fresh = cache_->add_sequence();
  if (!fresh.ok()) return false;
  seq = *fresh;
  return true;
}

int32_t greedy_draft(const float* row, int32_t n_vocab, float p_min, float* prob) {
  int32_t best = 0;
  for (int32_t v = 1; v < n_vocab; ++v) {
    if (row[v] > row[best]) best = v;
  }
  *prob = 1.0f;
  if (p_min > 0.0f) {
    double sum = 0.0;
    const float top = row[best];
    for (int32_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(row[v] - top));
    *prob = static_cast<float>(1.0 / sum);
  }
  return best;
}

}  // namespace folio
