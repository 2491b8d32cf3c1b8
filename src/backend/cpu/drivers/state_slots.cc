#include "backend/cpu/drivers/state_slots.h"

#include <cstring>
#include <memory>

namespace folio::cpu {
namespace {

// Element e of an I32 view, read flat (ggml order) through its strides.
int32_t flat_i32(const TensorView& t, int64_t e) {
  const int64_t i0 = e % t.ne[0], r = e / t.ne[0];
  return *t.at<const int32_t>(i0, r % t.ne[1], (r / t.ne[1]) % t.ne[2], r / (t.ne[1] * t.ne[2]));
}

TensorView slot_of(const TensorView& pool, int slot_dim, int64_t slot) {
  TensorView v = pool;
  v.data = static_cast<char*>(pool.data) + slot * static_cast<int64_t>(pool.nb[slot_dim]);
  v.ne[slot_dim] = 1;
  return v;
}

}  // namespace

Result<StateSlots> StateSlots::prepare(const Op& op, int pool_src, int slot_dim) {
  const TensorView& pool = op.src[pool_src];
  const TensorView& ids = op.src[pool_src + 1];
  const TensorView& dst_ids = op.src[pool_src + 2].empty() ? ids : op.src[pool_src + 2];
  const int64_t n_slots = pool.ne[slot_dim];
  const int64_t n_seq = ids.nelements();
  StateSlots p;
  p.src_slot_.resize(static_cast<size_t>(n_seq));
  p.dst_slot_.resize(static_cast<size_t>(n_seq));
  std::vector<int32_t> writer(static_cast<size_t>(n_slots), -1);  // sequence writing each slot
  for (int64_t s = 0; s < n_seq; ++s) {
    const int32_t from = flat_i32(ids, s), to = flat_i32(dst_ids, s);
    if (from < 0 || from >= n_slots) {
      return out_of_range("{}: slot id {} of sequence {} outside [0, {})", op.describe(), from, s,
                          n_slots);
    }
    if (to < 0 || to >= n_slots) {
      return out_of_range("{}: destination slot {} of sequence {} outside [0, {})", op.describe(),
                          to, s, n_slots);
    }
    if (writer[static_cast<size_t>(to)] >= 0) {
      return invalid_argument("{}: destination slot {} used by sequences {} and {}", op.describe(),
                              to, writer[static_cast<size_t>(to)], s);
    }
    writer[static_cast<size_t>(to)] = static_cast<int32_t>(s);
    p.src_slot_[static_cast<size_t>(s)] = from;
    p.dst_slot_[static_cast<size_t>(s)] = to;
  }

  // Which source slots need a copy: those read by a sequence other than the
  // one writing them. One copy per slot, however many sequences read it.
  std::vector<int64_t> copy_of(static_cast<size_t>(n_slots), -1);  // scratch index per slot
  for (int64_t s = 0; s < n_seq; ++s) {
    const int32_t from = p.src_slot_[static_cast<size_t>(s)];
    if (from != p.dst_slot_[static_cast<size_t>(s)] && writer[static_cast<size_t>(from)] >= 0 &&
        copy_of[static_cast<size_t>(from)] < 0) {
      copy_of[static_cast<size_t>(from)] = p.n_scratch_++;
    }
  }

  // Scratch copies (contiguous, one slot each), all taken before any write.
  const TensorView one = slot_of(pool, slot_dim, 0);
  const int64_t slot_elems = one.nelements();
  const int64_t row = one.ne[0];
  if (p.n_scratch_ > 0) {
    p.scratch_.reset(new float[static_cast<size_t>(p.n_scratch_ * slot_elems)]);  // no zero fill
  }
  for (int64_t slot = 0; slot < n_slots; ++slot) {
    const int64_t index = copy_of[static_cast<size_t>(slot)];
    if (index < 0) continue;
    const TensorView in = slot_of(pool, slot_dim, slot);
    float* copy = p.scratch_.get() + index * slot_elems;
    if (in.is_contiguous()) {
      std::memcpy(copy, in.data, static_cast<size_t>(slot_elems) * sizeof(float));
      continue;
    }
    const TensorView c = TensorView::contiguous(copy, DType::F32, in.ne);
    for (int64_t i3 = 0; i3 < in.ne[3]; ++i3) {
      for (int64_t i2 = 0; i2 < in.ne[2]; ++i2) {
        for (int64_t i1 = 0; i1 < in.ne[1]; ++i1) {
          std::memcpy(c.row<float>(i1, i2, i3), in.row<const float>(i1, i2, i3),
                      static_cast<size_t>(row) * sizeof(float));
        }
      }
    }
  }
  p.src_.reserve(static_cast<size_t>(n_seq));
  p.dst_.reserve(static_cast<size_t>(n_seq));
  for (int64_t s = 0; s < n_seq; ++s) {
    const int32_t from = p.src_slot_[static_cast<size_t>(s)],
                  to = p.dst_slot_[static_cast<size_t>(s)];
    p.dst_.push_back(slot_of(pool, slot_dim, to));
    const int64_t index = from == to ? -1 : copy_of[static_cast<size_t>(from)];
    p.src_.push_back(index < 0 ? slot_of(pool, slot_dim, from)
                               : TensorView::contiguous(p.scratch_.get() + index * slot_elems,
                                                        DType::F32, one.ne));
  }
  return p;
}

}  // namespace folio::cpu
