// Pieces of kMulMatId shared by the reference (ref/mul_mat_ref.h) and the
// expert-grouped drivers (drivers/mul_mat_tiled.cc, packed/packed_mul_mat.cc):
// the data checks, and the drivers' gather and scatter between the op's
// (u, t) pairs and their slot order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/parallel.h"

namespace folio::cpu {

// What validate_op cannot check: experts, input, ids and dst at most 3-D
// (kInvalidArgument), every id in [0, E) (kOutOfRange).
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

// The sizes of a kMulMatId op: weight row length k, rows per expert n,
// experts n_exp, experts used per token n_used, (u, t) pairs n_pairs.
struct MulMatIdDims {
  int64_t k, n, n_exp, n_used, n_pairs;
};
inline MulMatIdDims mul_mat_id_dims(const Op& op) {
  const TensorView& w = op.src[0];    // [K, N, E]
  const TensorView& ids = op.src[2];  // I32 [n_used, T]
  return {w.ne[0], w.ne[1], w.ne[2], ids.ne[0], ids.ne[0] * ids.ne[1]};
}

// run_range for a lambda of any size without a heap allocation per call:
// std::function stores a callable holding one reference in place, while a
// [&] lambda naming many locals would be copied to the heap.
template <typename Fn>
void run_range_ref(const KernelContext& ctx, int64_t n, bool parallel, const Fn& fn) {
  run_range(ctx, n, parallel, [&fn](int64_t begin, int64_t end) { fn(begin, end); });
}

// Slot s holds the pair order[s] = t * n_used + u (group_pairs_by_expert).
// Gather: convert(activation row (u % X1, t) of x, xb + s * x_row_bytes)
// for every slot.
template <typename Convert>
void gather_expert_rows(const KernelContext& ctx, bool parallel, const std::vector<int64_t>& order,
                        int64_t n_used, const TensorView& x, unsigned char* xb, size_t x_row_bytes,
                        const Convert& convert) {
  const int64_t x1 = x.ne[1];
  run_range_ref(ctx, static_cast<int64_t>(order.size()), parallel, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t u = order[s] % n_used, t = order[s] / n_used;
      convert(x.row<const float>(u % x1, t), xb + s * x_row_bytes);
    }
  });
}

// Scatter: output row s of yb (y_row_bytes each) to dst[:, u, t].
inline void scatter_expert_rows(const KernelContext& ctx, bool parallel,
                                const std::vector<int64_t>& order, int64_t n_used,
                                const unsigned char* yb, size_t y_row_bytes, const TensorView& y) {
  run_range_ref(ctx, static_cast<int64_t>(order.size()), parallel, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const int64_t u = order[s] % n_used, t = order[s] / n_used;
      std::memcpy(y.row<float>(u, t), yb + s * y_row_bytes, y_row_bytes);
    }
  });
}

}  // namespace folio::cpu
