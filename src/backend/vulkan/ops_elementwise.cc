// Element-wise kernels: add / mul with broadcasting.
#include "backend/vulkan/kernels.h"

namespace folio::vulkan {
namespace {

bool all_f32(const Op& op, int n_src) {
  if (op.dst.dtype != DType::F32) return false;
  for (int i = 0; i < n_src; ++i) {
    if (op.src[i].dtype != DType::F32) return false;
  }
  return true;
}

struct BinaryParams {
  TensorDesc a, b, d;
};

bool match_binary(const Op& op, const DeviceCaps&) { return all_f32(op, 2); }

Status record_binary(Recorder& r, const Op& op) {
  BinaryParams p;
  FOLIO_ASSIGN_OR_RETURN(p.a, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  uint32_t gx, gy;
  Recorder::split_groups((static_cast<uint64_t>(op.dst.nelements()) + 255) / 256, gx, gy);
  const uint32_t kind = op.kind == OpKind::kAdd ? 0u : 1u;
  return r.dispatch("add", {kind}, &p, sizeof p, {op.src[0], op.src[1], op.dst}, gx, gy);
}

}  // namespace

void add_elementwise_kernels(std::vector<KernelDef>& out) {
  out.push_back({"add", OpKind::kAdd, match_binary, record_binary});
  out.push_back({"mul", OpKind::kMul, match_binary, record_binary});
}

}  // namespace folio::vulkan
