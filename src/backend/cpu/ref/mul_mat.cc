// mul_mat / mul_mat_id reference: dequantize one weight row to f32 with the
// reference dequantizer, then accumulate each dot product in double (every
// product of two floats is exact in double) and round once to float. This is
// the precision ceiling optimised kernels are measured against; they may
// legitimately round activations (f16, bf16, q8) and accumulate in float.
//
// mul_mat:    W [K, N, B2w, B3w] (any dtype), X F32 [K, M, B2, B3],
//             dst F32 [N, M, B2, B3]; batch (b2, b3) uses weight batch
//             (b2 / (B2 / B2w), b3 / (B3 / B3w)).
// mul_mat_id: W [K, N, E], X F32 [K, X1, T], ids I32 [n_used, T],
//             dst F32 [N, n_used, T]; dst[:, u, t] = W_e^T X[:, u % X1, t]
//             with e = ids[u, t], range-checked before anything is written.
#include "backend/cpu/ref/mul_mat_ref.h"
#include "backend/cpu/ref/ref_util.h"
#include "quant/quant.h"

namespace folio::ref {

Status mul_mat(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];  // [K, N, B2w, B3w]
  return mul_mat_rows(op, [&w](int64_t in, int64_t i2, int64_t i3, float* out) {
    quant::dequantize_row_ref(w.dtype, w.row(in, i2, i3), out, w.ne[0]);
  });
}

Status mul_mat_id(const Op& op, const KernelContext& /*ctx*/) {
  const TensorView& w = op.src[0];  // [K, N, E]
  return mul_mat_id_rows(op, [&w](int64_t in, int64_t e, int64_t, float* out) {
    quant::dequantize_row_ref(w.dtype, w.row(in, e), out, w.ne[0]);
  });
}

}  // namespace folio::ref
