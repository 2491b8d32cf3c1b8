#include "engine/reasoning_budget.h"

#include <algorithm>

#include "core/check.h"

namespace folio {

ReasoningBudget::ReasoningBudget(std::shared_ptr<const ReasoningBudgetSpec> spec)
    : spec_(std::move(spec)) {
  FOLIO_CHECK(spec_ != nullptr && spec_->tokens >= 0 && !spec_->forced.empty());
  if (spec_->starts_inside) open_block();
}

int32_t ReasoningBudget::forced_token() const {
  return state_ == State::kForcing ? spec_->forced[force_pos_] : -1;
}

int64_t ReasoningBudget::free_tokens() const {
  switch (state_) {
    case State::kCounting:
      return spec_->tokens - used_;
    case State::kWaitingUtf8:
    case State::kForcing:
      return 0;
    case State::kOutside:
    case State::kDone:
      break;
  }
  return -1;
}

bool ReasoningBudget::ends_marker(std::string_view marker, size_t old_size) const {
  if (marker.empty() || window_.size() < marker.size()) return false;
  const size_t from = old_size + 1 > marker.size() ? old_size + 1 - marker.size() : 0;
  return window_.find(marker, from) != std::string::npos;
}

void ReasoningBudget::open_block() {
  state_ = State::kCounting;
  used_ = 0;
  utf8_pending_ = 0;
  if (spec_->tokens == 0) start_forcing();
}

void ReasoningBudget::start_forcing() {
  state_ = State::kForcing;
  force_pos_ = 0;
}

void ReasoningBudget::accept(int32_t token, std::string_view bytes) {
  const size_t old_size = window_.size();
  window_.append(bytes);
  switch (state_) {
    case State::kOutside:
    case State::kDone:
      // The token that completes the open marker is not counted.
      if (ends_marker(spec_->open, old_size)) open_block();
      break;
    case State::kCounting:
    case State::kWaitingUtf8: {
      if (ends_marker(spec_->close, old_size)) {
        state_ = State::kDone;
        break;
      }
      for (const char ch : bytes) {
        const auto b = static_cast<unsigned char>(ch);
        if ((b & 0xC0) == 0x80) {
          if (utf8_pending_ > 0) --utf8_pending_;
        } else {
          utf8_pending_ = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : 0;
        }
      }
      if (state_ == State::kCounting) ++used_;
      // A character split between tokens is finished before the close
      // marker goes in, so the reasoning stays valid UTF-8.
      if (used_ >= spec_->tokens && utf8_pending_ == 0) {
        start_forcing();
      } else if (used_ >= spec_->tokens) {
        state_ = State::kWaitingUtf8;
      }
      break;
    }
    case State::kForcing:
      if (token != spec_->forced[force_pos_] || ++force_pos_ == spec_->forced.size()) {
        state_ = State::kDone;
      }
      break;
  }
  const size_t keep = std::max(spec_->open.size(), spec_->close.size());
  if (window_.size() > keep) window_.erase(0, window_.size() - keep);
}

}  // namespace folio
