// The data checks of a kMulMatId op that validate_op cannot do, shared by
// the reference (ref/mul_mat_ref.h) and the tiled and packed drivers
// (group_pairs_by_expert, scalar/mul_mat_tiled.h): experts, input, ids and
// dst at most 3-D (kInvalidArgument), every id in [0, E) (kOutOfRange).
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"

namespace folio::cpu {

inline Status check_mul_mat_id(const Op& op) {
  const TensorView& w = op.src[0];    // [K, N, E]
  const TensorView& x = op.src[1];    // [K, X1, T]
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  const TensorView& y = op.dst;       // [N, n_used, T]
  if (w.ne[3] != 1 || x.ne[3] != 1 || ids.ne[2] != 1 || ids.ne[3] != 1 || y.ne[3] != 1) {
    return invalid_argument("mul_mat_id: experts, input, ids and dst must be at most 3-D: {}",
                            op.describe());
  }
  const int64_t n_exp = w.ne[2], n_used = ids.ne[0], n_tok = ids.ne[1];
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t u = 0; u < n_used; ++u) {
      const int32_t e = *ids.at<const int32_t>(u, t);
      if (e < 0 || e >= n_exp) {
        return out_of_range("mul_mat_id: expert id {} at ids[{}, {}] out of range [0, {})", e, u, t,
                            n_exp);
      }
    }
  }
  return Status();
}

}  // namespace folio::cpu
