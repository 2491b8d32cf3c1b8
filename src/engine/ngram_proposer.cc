#include "engine/ngram_proposer.h"

#include <algorithm>

namespace folio {

void NgramProposer::propose_one(std::span<const int32_t> tokens, int max_draft,
                                std::vector<int32_t>& out) const {
  out.clear();
  if (max_draft <= 0) return;
  const auto len = static_cast<int64_t>(tokens.size());
  for (int64_t n = n_max_; n >= n_min_; --n) {
    // An earlier occurrence must end before the last token, so at least one
    // token follows it.
    if (len < n + 1) continue;
    const std::span<const int32_t> key = tokens.subspan(static_cast<size_t>(len - n));
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(key.begin(), key.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_draft, len - from);
      out.assign(tokens.begin() + from, tokens.begin() + from + count);
      return;
    }
  }
}

}  // namespace folio
