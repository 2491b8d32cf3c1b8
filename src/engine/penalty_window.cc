#include "engine/penalty_window.h"

#include "core/check.h"

namespace folio {

PenaltyWindow::PenaltyWindow(int32_t last_n) : last_n_(last_n) {
  FOLIO_CHECK_MSG(last_n >= -1, "penalty window size {}", last_n);
  if (last_n_ > 0) ring_.reserve(static_cast<size_t>(last_n_));
}

void PenaltyWindow::push(int32_t token) {
  if (last_n_ == 0) return;
  if (last_n_ > 0) {
    if (ring_.size() < static_cast<size_t>(last_n_)) {
      ring_.push_back(token);
    } else {
      // Evict the oldest token.
      const int32_t old = ring_[head_];
      auto it = counts_.find(old);
      FOLIO_CHECK(it != counts_.end() && it->second > 0);
      if (--it->second == 0) counts_.erase(it);
      ring_[head_] = token;
      head_ = (head_ + 1) % ring_.size();
      --size_;
    }
  }
  ++counts_[token];
  ++size_;
}

void PenaltyWindow::clear() {
  ring_.clear();
  head_ = 0;
  size_ = 0;
  counts_.clear();
}

int32_t PenaltyWindow::count(int32_t token) const {
  auto it = counts_.find(token);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace folio
