// PenaltyWindow: the recent tokens the repetition / presence / frequency
// penalties look at, kept as a ring of the last `last_n` tokens plus a count
// per distinct token, so applying penalties costs O(distinct tokens in the
// window), never O(n_vocab), and memory stays O(last_n) per sequence.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace folio {

class PenaltyWindow {
 public:
  // last_n: -1 = unbounded (counts only, no ring), 0 = keeps nothing.
  explicit PenaltyWindow(int32_t last_n = 0);

  void push(int32_t token);
  void push(std::span<const int32_t> tokens) {
    for (int32_t t : tokens) push(t);
  }
  void clear();

  // Tokens currently in the window.
  int64_t size() const { return size_; }
  // token -> occurrences in the window (> 0).
  const std::unordered_map<int32_t, int32_t>& counts() const { return counts_; }
  int32_t count(int32_t token) const;

 private:
  int32_t last_n_;
  std::vector<int32_t> ring_;  // [last_n] when bounded; empty when unbounded
  size_t head_ = 0;            // next slot to overwrite once the ring is full
  int64_t size_ = 0;
  std::unordered_map<int32_t, int32_t> counts_;
};

}  // namespace folio
