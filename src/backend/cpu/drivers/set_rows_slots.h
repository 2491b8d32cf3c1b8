// The rows and slots of a set_rows op (kSetRows), shared by the reference
// (ref/set_rows.cc) and the SIMD tiers (simd/set_rows.h): src0 holds the
// rows [n_cols, ne1, ne2, ne3], src1 one I32 slot per row, read flat (any
// shape of contiguous rows), and every slot is checked before anything is
// written, so a bad slot leaves the table untouched.
#pragma once

#include <cstdint>

#include "backend/op.h"
#include "core/status.h"

namespace folio::cpu {

// Row i of the op's src0.
inline const float* set_rows_row(const TensorView& rows, int64_t i) {
  const int64_t i1 = i % rows.ne[1], i2 = (i / rows.ne[1]) % rows.ne[2],
                i3 = i / (rows.ne[1] * rows.ne[2]);
  return rows.row<const float>(i1, i2, i3);
}

// Slot i of the op's src1.
inline int32_t set_rows_slot(const TensorView& slots, int64_t i) {
  return *slots.at<const int32_t>(i % slots.ne[0], i / slots.ne[0]);
}

// Every slot inside the table's rows, or the first that is not.
inline Status check_set_rows_slots(const Op& op) {
  const int64_t n = op.src[1].nelements(), n_slots = op.dst.ne[1];
  for (int64_t i = 0; i < n; ++i) {
    const int32_t s = set_rows_slot(op.src[1], i);
    if (s < 0 || s >= n_slots) {
      return out_of_range("{}: slot {} of row {} outside [0, {})", op.describe(), s, i, n_slots);
    }
  }
  return Status();
}

}  // namespace folio::cpu
