// Slot handling of the fused recurrent-state decode ops (kSsmConvUpdate,
// kGatedDeltaNetUpdate, kSsmScanUpdate; semantics in backend/op.h), shared
// by every tier's kernels so that they all apply the same run-time checks
// and the same identity / scratch rule:
//   - sequence s reads the prior state of pool slot ids[s] and writes its new
//     state to slot dst_slots[s];
//   - where ids[s] == dst_slots[s] the kernel reads the slot in place (it
//     must load each independent piece of the state before writing it);
//   - every other source slot that some sequence writes in this op is first
//     copied to a scratch buffer owned by StateSlots (once per slot, shared
//     by its readers), so no sequence reads a slot that another one writes;
//   - a source slot that nobody writes is read straight from the pool (a
//     copy of it would hold the same bytes).
// Nothing is written to the pool before every id has been checked.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/op.h"
#include "core/status.h"
#include "tensor/tensor_view.h"

namespace folio::cpu {

class StateSlots {
 public:
  StateSlots() = default;
  // Move-only: the source views point into scratch_, whose heap block moves
  // with it (a copy would leave them pointing at the original).
  StateSlots(StateSlots&&) = default;
  StateSlots& operator=(StateSlots&&) = default;
  StateSlots(const StateSlots&) = delete;
  StateSlots& operator=(const StateSlots&) = delete;

  // `pool` is op.src[pool_src] with its slot index in dimension slot_dim;
  // ids / dst_slots are op.src[pool_src + 1] / op.src[pool_src + 2] (the
  // latter may be empty). Errors: an id or destination slot outside
  // [0, n_slots) (OutOfRange), a destination slot used twice
  // (InvalidArgument). validate_op has refused op.dst overlapping the pool.
  static Result<StateSlots> prepare(const Op& op, int pool_src, int slot_dim);

  int64_t n_seq() const { return static_cast<int64_t>(src_.size()); }
  // The prior state of sequence s: a view of a pool slot (its own, or one
  // that nobody writes) or of a contiguous copy in scratch; ne[slot_dim] == 1.
  const TensorView& src(int64_t s) const { return src_[static_cast<size_t>(s)]; }
  // The pool slot sequence s writes; ne[slot_dim] == 1.
  const TensorView& dst(int64_t s) const { return dst_[static_cast<size_t>(s)]; }

 private:
  std::vector<int32_t> src_slot_, dst_slot_;  // [n_seq]
  std::vector<TensorView> src_, dst_;         // [n_seq]
  std::unique_ptr<float[]> scratch_;          // [n_scratch * slot elements]
  int64_t n_scratch_ = 0;
};

// The plain (non-fused) recurrent ops' counterpart of StateSlots::src / dst:
// sequence s of a 4-D state view [.., .., H, n_seq] as a one-sequence view
// (ne[3] == 1).
inline TensorView state_sequence(const TensorView& t, int64_t s) {
  TensorView v = t;
  v.data = t.row<char>(0, 0, s);
  v.ne[3] = 1;
  return v;
}

}  // namespace folio::cpu
