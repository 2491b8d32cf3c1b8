// Row normalisations: one workgroup per row (dim 0), the sum of squares
// reduced in shared memory (workgroup_sum.glsl), then the row scaled by the
// same invocations that read it, so outputs may alias inputs.
//   rms_norm, l2_norm  norm.comp (spec: workgroup size, mode, weight)
//   add_rms_norm       add_rms_norm.comp (spec: workgroup size, weight);
//                      writes the sum to dst2, normalises what dst2 holds
//   rms_norm_add_rms_norm  rms_norm_add_rms_norm.comp (the same, b first
//                      normalised as norm.comp does: a sandwich norm's end)
//   rms_norm_add       rms_norm_add_rms_norm.comp without its last pass
//                      (spec NEXT false): the sum into dst, no next norm
// The workgroup is the smallest power of two >= the row length, from 32 to
// 256 (or the largest power of two within the device's limit;
// norm_workgroup in kernels.h): one element per invocation for rows up to
// that size, a strided loop beyond. Parameter structs and constants:
// shaders/norm_interface.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/norm_interface.h"

namespace folio::vulkan {
namespace {

bool f32_rows(const TensorView& t) {
  return !t.empty() && t.dtype == DType::F32 &&
         static_cast<uint64_t>(t.nelements()) <= std::numeric_limits<uint32_t>::max();
}

Status dispatch_rows(Recorder& r, const char* shader, std::initializer_list<uint32_t> spec,
                     const void* params, size_t bytes, std::initializer_list<TensorView> tensors,
                     int64_t rows) {
  uint32_t gx, gy;
  Recorder::split_groups(static_cast<uint64_t>(rows), gx, gy);
  return r.dispatch(shader, spec, params, bytes, tensors, gx, gy);
}

// ---- rms_norm / l2_norm

struct NormShaderParams {
  FOLIO_VK_NORM_PARAMS
};
static_assert(sizeof(NormShaderParams) == 3 * sizeof(TensorDesc) + 4);
static_assert(offsetof(NormShaderParams, w) == 36 && offsetof(NormShaderParams, d) == 72 &&
              offsetof(NormShaderParams, eps) == 108);

bool match_norm(const Op& op, const DeviceCaps& caps) {
  const TensorView& w = op.src[1];
  const bool weight_ok = op.kind == OpKind::kL2Norm || w.empty() || w.dtype == DType::F32;
  return f32_rows(op.src[0]) && f32_rows(op.dst) && weight_ok &&
         caps.max_workgroup_size >= kNormMinWorkgroup;
}

Status record_norm(Recorder& r, const Op& op) {
  const bool l2 = op.kind == OpKind::kL2Norm;
  const TensorView& x = op.src[0];
  const TensorView w = l2 ? TensorView{} : op.src[1];
  NormShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.x, r.desc(x));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));  // empty: a default descriptor, never read
  const bool has_w = !w.empty();
  p.eps = l2 ? op.p<NormParams>().eps : op.p<RmsNormParams>().eps;
  const uint32_t block = norm_workgroup(x.ne[0], r.caps());
  return dispatch_rows(r, "norm", {block, l2 ? kNormModeL2 : kNormModeRms, has_w ? 1u : 0u}, &p,
                       sizeof p, {x, w, op.dst}, x.nrows());
}

// ---- add_rms_norm, rms_norm_add_rms_norm (a device fusion: rms_norm of b,
// then add_rms_norm) and rms_norm_add (the same without the next norm):
// one parameter struct and binding layout, b's norm weight wb (src[3];
// rms_norm_add's src[2]) absent from add_rms_norm.

struct AddRmsNormShaderParams {
  FOLIO_VK_ADD_RMS_NORM_PARAMS
};
static_assert(sizeof(AddRmsNormShaderParams) == 6 * sizeof(TensorDesc) + 4);
static_assert(offsetof(AddRmsNormShaderParams, b) == 36 &&
              offsetof(AddRmsNormShaderParams, w) == 72 &&
              offsetof(AddRmsNormShaderParams, wb) == 108 &&
              offsetof(AddRmsNormShaderParams, d) == 144 &&
              offsetof(AddRmsNormShaderParams, d2) == 180 &&
              offsetof(AddRmsNormShaderParams, eps) == 216);

bool match_rms_norm_add(const Op& op, const DeviceCaps& caps) {
  return f32_rows(op.src[0]) && f32_rows(op.src[1]) && f32_rows(op.src[2]) && f32_rows(op.dst) &&
         caps.max_workgroup_size >= kNormMinWorkgroup;
}

// The sum goes to d2, which pass 1 writes and NEXT = false ends with; d is
// bound to the same tensor and never written.
Status record_rms_norm_add(Recorder& r, const Op& op) {
  const TensorView& a = op.src[0];
  AddRmsNormShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.a, r.desc(a));
  FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.wb, r.desc(op.src[2]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  p.d2 = p.d;
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(TensorView{}));  // a default descriptor, never read
  p.eps = op.p<RmsNormParams>().eps;
  const uint32_t block = norm_workgroup(a.ne[0], r.caps());
  return dispatch_rows(r, "rms_norm_add_rms_norm", {block, 0u, 0u}, &p, sizeof p,
                       {a, op.src[1], TensorView{}, op.src[2], op.dst, op.dst}, a.nrows());
}

bool match_add_rms_norm(const Op& op, const DeviceCaps& caps) {
  const TensorView& w = op.src[2];
  const bool fused = op.kind == OpKind::kRmsNormAddRmsNorm;
  return f32_rows(op.src[0]) && f32_rows(op.src[1]) && f32_rows(op.dst) && f32_rows(op.dst2) &&
         (w.empty() || w.dtype == DType::F32) && (!fused || f32_rows(op.src[3])) &&
         caps.max_workgroup_size >= kNormMinWorkgroup;
}

Status record_add_rms_norm(Recorder& r, const Op& op) {
  const bool fused = op.kind == OpKind::kRmsNormAddRmsNorm;
  const TensorView& a = op.src[0];
  const TensorView& w = op.src[2];
  const TensorView wb = fused ? op.src[3] : TensorView{};
  AddRmsNormShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.a, r.desc(a));
  FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.wb, r.desc(wb));  // empty: a default descriptor, never read
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.d2, r.desc(op.dst2));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(w));  // empty: a default descriptor, never read
  const bool has_w = !w.empty();
  p.eps = op.p<RmsNormParams>().eps;
  const uint32_t block = norm_workgroup(a.ne[0], r.caps());
  return dispatch_rows(r, fused ? "rms_norm_add_rms_norm" : "add_rms_norm",
                       {block, has_w ? 1u : 0u}, &p, sizeof p,
                       {a, op.src[1], w, wb, op.dst, op.dst2}, a.nrows());
}

}  // namespace

void add_norm_kernels(std::vector<KernelDef>& out) {
  out.push_back({"rms_norm", OpKind::kRmsNorm, match_norm, record_norm});
  out.push_back({"l2_norm", OpKind::kL2Norm, match_norm, record_norm});
  out.push_back({"add_rms_norm", OpKind::kAddRmsNorm, match_add_rms_norm, record_add_rms_norm});
  out.push_back({"rms_norm_add_rms_norm", OpKind::kRmsNormAddRmsNorm, match_add_rms_norm,
                 record_add_rms_norm});
  out.push_back({"rms_norm_add", OpKind::kRmsNormAdd, match_rms_norm_add, record_rms_norm_add});
}

}  // namespace folio::vulkan
