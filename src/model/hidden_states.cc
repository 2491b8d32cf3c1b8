#include "model/hidden_states.h"

#include <algorithm>

namespace folio::model {

void HiddenStates::record(const cache::Batch& batch, const TensorView& rows) {
  const auto w = static_cast<size_t>(width_);
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    Run& r = seqs_[batch.seq_idx[i]];
    const int64_t pos = batch.pos[i];
    const auto n = static_cast<int64_t>(r.data.size() / w);
    if (n == 0 || pos < r.first || pos > r.first + n) {
      r.first = pos;
      r.data.clear();
    } else {
      r.data.resize(static_cast<size_t>(pos - r.first) * w);
    }
    const float* src = rows.row<const float>(static_cast<int64_t>(i));
    r.data.insert(r.data.end(), src, src + w);
  }
}

const float* HiddenStates::row(int seq, int64_t pos) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return nullptr;
  const Run& r = it->second;
  const auto w = static_cast<size_t>(width_);
  if (pos < r.first || pos >= r.first + static_cast<int64_t>(r.data.size() / w)) return nullptr;
  return r.data.data() + static_cast<size_t>(pos - r.first) * w;
}

void HiddenStates::drop_before(int seq, int64_t pos) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  Run& r = it->second;
  const auto w = static_cast<size_t>(width_);
  const int64_t n = static_cast<int64_t>(r.data.size() / w);
  const int64_t drop = std::clamp<int64_t>(pos - r.first, 0, n);
  if (drop == 0) return;
  r.data.erase(r.data.begin(), r.data.begin() + static_cast<std::ptrdiff_t>(drop * width_));
  r.first += drop;
}

int64_t HiddenStates::n_rows() const {
  int64_t n = 0;
  for (const auto& [seq, r] : seqs_) n += static_cast<int64_t>(r.data.size()) / width_;
  return n;
}

}  // namespace folio::model
