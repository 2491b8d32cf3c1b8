// HiddenStates: the target model's final hidden states (after output_norm)
// of recent positions, per cache sequence, as its forwards computed them:
// what an MTP head (model/mtp_head.h) pairs with the next token. A
// ForwardContext with this as its hidden sink fills it
// (ForwardContext::set_hidden_sink); the MTP proposer reads and drops rows.
//
// Rows of one sequence are kept for consecutive positions [first, end). A
// recorded row at a position inside or before that run replaces it from
// there on (a verification that rejected drafts is followed by a forward of
// the same positions; a sequence reused from position 0); one past a gap
// starts a new run.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cache/batch.h"
#include "tensor/tensor_view.h"

namespace folio::model {

class HiddenStates {
 public:
  explicit HiddenStates(int64_t width) : width_(width) {}

  int64_t width() const { return width_; }  // E
  // rows F32 [width, batch.size()] (host): row i is the state of batch
  // sequence seq_idx[i] at pos[i].
  void record(const cache::Batch& batch, const TensorView& rows);
  // `seq`'s row at `pos` [width], or nullptr when not held.
  const float* row(int seq, int64_t pos) const;
  // Forgets `seq`'s rows before `pos`.
  void drop_before(int seq, int64_t pos);
  // Forgets `seq`.
  void forget(int seq) { seqs_.erase(seq); }
  // Rows held in all (tests).
  int64_t n_rows() const;

 private:
  struct Run {
    int64_t first = 0;        // position of the first row
    std::vector<float> data;  // [width, n] rows of positions first ..
  };
  int64_t width_;
  std::unordered_map<int, Run> seqs_;
};

}  // namespace folio::model
