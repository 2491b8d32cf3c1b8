// Private helpers and entry points of the basic scalar reference kernels
// (get_rows ... argsort). Each op family lives in its own file under ref/;
// register_basic.cc puts them in the kernel table.
//
// Addressing: rows (dim 0) are contiguous (validate_op guarantees nb[0] ==
// element size), every other dimension goes through the view's nb[] strides,
// so the kernels accept non-contiguous views (slices, permuted heads).
#pragma once

#include <cstdint>

#include "backend/cpu/kernel.h"
#include "backend/op.h"
#include "core/status.h"
#include "tensor/tensor_view.h"

namespace folio::ref {

// (i1, i2, i3) of flat row index r of `t` (r in [0, t.nrows())).
struct RowIndex {
  int64_t i1, i2, i3;
};
inline RowIndex row_index(const TensorView& t, int64_t r) {
  const int64_t i1 = r % t.ne[1];
  const int64_t rest = r / t.ne[1];
  return {i1, rest % t.ne[2], rest / t.ne[2]};
}

// Pointer to the first byte of flat row r of `t`.
template <typename T = char>
T* row_ptr(const TensorView& t, int64_t r) {
  const RowIndex ri = row_index(t, r);
  return t.row<T>(ri.i1, ri.i2, ri.i3);
}

// Element e (flat index over all four dims, ggml order) of a plain-typed view.
template <typename T>
T elem(const TensorView& t, int64_t e) {
  const int64_t i0 = e % t.ne[0];
  return row_ptr<const T>(t, e / t.ne[0])[i0];
}

// Kernels (one file per family). All are single-threaded and ignore ctx.pool.
Status get_rows(const Op& op, const KernelContext& ctx);      // get_rows.cc
Status mul_mat(const Op& op, const KernelContext& ctx);       // mul_mat.cc
Status mul_mat_id(const Op& op, const KernelContext& ctx);    // mul_mat.cc
Status add(const Op& op, const KernelContext& ctx);           // binary.cc
Status mul(const Op& op, const KernelContext& ctx);           // binary.cc
Status scale(const Op& op, const KernelContext& ctx);         // binary.cc
Status cpy(const Op& op, const KernelContext& ctx);           // cpy.cc
Status rms_norm(const Op& op, const KernelContext& ctx);      // norm.cc
Status add_rms_norm(const Op& op, const KernelContext& ctx);  // norm.cc
Status l2_norm(const Op& op, const KernelContext& ctx);       // norm.cc
Status norm(const Op& op, const KernelContext& ctx);          // norm.cc
Status rope(const Op& op, const KernelContext& ctx);          // rope.cc
Status soft_max(const Op& op, const KernelContext& ctx);      // softmax.cc
Status unary(const Op& op, const KernelContext& ctx);         // unary.cc
Status glu(const Op& op, const KernelContext& ctx);           // glu.cc
Status top_k(const Op& op, const KernelContext& ctx);         // sort.cc
Status argsort(const Op& op, const KernelContext& ctx);       // sort.cc
Status moe_route(const Op& op, const KernelContext& ctx);     // moe_route.cc

// Scalar activations in double (unary.cc), shared with glu.cc. gelu is the
// tanh approximation; softplus follows ggml: x for x > 20, else log(1 + e^x).
double unary_value(UnaryKind kind, double x);

// The angle of rope pair i at position pos (rope.cc): pos * base^(-2i / n_dims)
// [/ freq_factor], times freq_scale, mixed with the unscaled angle by YaRN's
// ramp over corr (rope_yarn_corr_dims) when ext_factor != 0; in double.
double rope_theta(const RopeParams& p, double pos, int64_t i, const float* freq_factor,
                  const float corr[2]);

// Which of the 4 position sections (t, h, w, e) drives rope pair i in the
// multi-section modes (kMrope, kImrope; rope.cc); 0 in the others. The
// sections must be valid (each >= 0, sum > 0).
int rope_section_of(RopeMode mode, const std::array<int, 4>& sections, int64_t i);
// ggml's YaRN correction range (rope.cc), exposed for tests: dims[0] = start,
// dims[1] = end pair-dimension of the extrapolation ramp.
void rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast,
                         float beta_slow, float dims[2]);

}  // namespace folio::ref
