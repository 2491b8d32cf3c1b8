// MoE kernels.
//   moe_route (moe_route.comp): one workgroup per token; probabilities,
//     selection values and the group scores live in shared memory, so rows
//     of more than kMaxExperts experts, more than kMaxGroups groups or more
//     than kMaxChosen chosen experts are declined (and run on the CPU).
//   moe_sum (moe_sum.comp, a device fusion): the weighted sum of the chosen
//     experts' outputs, one invocation per output element.
// Parameter structs, bounds and codes: shaders/moe_interface.h.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/moe_interface.h"

namespace folio::vulkan {
namespace {

// moe_route.comp's shared memory: s_p and s_sel, s_red, the group scores
// and flags, the chosen experts (4 bytes each).
constexpr uint64_t kSharedBytes =
    (2 * kMoeMaxExperts + kElementWorkgroup + 2 * kMoeMaxGroups + kMoeMaxChosen) * 4;

bool match_moe_route(const Op& op, const DeviceCaps& caps) {
  const auto& p = op.p<MoeRouteParams>();
  const TensorView& l = op.src[0];
  return l.dtype == DType::F32 && op.dst.dtype == DType::I32 && op.dst2.dtype == DType::F32 &&
         (op.src[1].empty() || op.src[1].dtype == DType::F32) && l.ne[0] <= kMoeMaxExperts &&
         p.n_groups <= static_cast<int>(kMoeMaxGroups) && p.k <= static_cast<int>(kMoeMaxChosen) &&
         fits_u32(l.ne[1]) && caps.max_workgroup_size >= kElementWorkgroup &&
         caps.max_shared_bytes >= kSharedBytes;
}

struct MoeRouteShaderParams {
  FOLIO_VK_MOE_ROUTE_PARAMS
};
static_assert(sizeof(MoeRouteShaderParams) == 4 * sizeof(TensorDesc) + 7 * 4);
static_assert(offsetof(MoeRouteShaderParams, gating) == 144 &&
              offsetof(MoeRouteShaderParams, has_bias) == 164 &&
              offsetof(MoeRouteShaderParams, scale) == 168);

uint32_t moe_gating_code(MoeGating g) {
  switch (g) {
    case MoeGating::kSoftmax:
      return kMoeGatingSoftmax;
    case MoeGating::kSigmoid:
      return kMoeGatingSigmoid;
    case MoeGating::kSoftmaxWeight:
      return kMoeGatingSoftmaxWeight;
  }
  return kMoeGatingSoftmax;
}

Status record_moe_route(Recorder& r, const Op& op) {
  const auto& prm = op.p<MoeRouteParams>();
  MoeRouteShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.l, r.desc(op.src[0]));
  if (!op.src[1].empty()) {
    FOLIO_ASSIGN_OR_RETURN(p.b, r.desc(op.src[1]));
  }
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(op.dst2));
  for (const TensorDesc* d : {&p.l, &p.b, &p.d, &p.w}) FOLIO_RETURN_IF_ERROR(aligned4(*d, op));
  p.gating = moe_gating_code(prm.gating);
  p.k = static_cast<uint32_t>(prm.k);
  p.n_groups = static_cast<uint32_t>(prm.n_groups);
  p.n_groups_used = static_cast<uint32_t>(prm.n_groups_used);
  p.norm = prm.norm ? 1u : 0u;
  p.has_bias = op.src[1].empty() ? 0u : 1u;
  p.scale = prm.scale;
  uint32_t gx, gy;
  Recorder::split_groups(static_cast<uint64_t>(op.src[0].ne[1]), gx, gy);
  return r.dispatch("moe_route", {}, &p, sizeof p, {op.src[0], op.src[1], op.dst, op.dst2}, gx, gy);
}

bool match_moe_sum(const Op& op, const DeviceCaps& /*caps*/) {
  return op.src[0].dtype == DType::F32 && op.src[1].dtype == DType::F32 &&
         op.dst.dtype == DType::F32 && fits_u32(op.dst.nelements());
}

struct MoeSumShaderParams {
  FOLIO_VK_MOE_SUM_PARAMS
};
static_assert(sizeof(MoeSumShaderParams) == 3 * sizeof(TensorDesc));

Status record_moe_sum(Recorder& r, const Op& op) {
  MoeSumShaderParams p;
  FOLIO_ASSIGN_OR_RETURN(p.e, r.desc(op.src[0]));
  FOLIO_ASSIGN_OR_RETURN(p.w, r.desc(op.src[1]));
  FOLIO_ASSIGN_OR_RETURN(p.d, r.desc(op.dst));
  uint32_t gx, gy;
  Recorder::split_groups(
      (static_cast<uint64_t>(op.dst.nelements()) + kElementWorkgroup - 1) / kElementWorkgroup, gx,
      gy);
  return r.dispatch("moe_sum", {}, &p, sizeof p, {op.src[0], op.src[1], op.dst}, gx, gy);
}

}  // namespace

void add_moe_kernels(std::vector<KernelDef>& out) {
  out.push_back({"moe_route", OpKind::kMoeRoute, match_moe_route, record_moe_route});
  out.push_back({"moe_sum", OpKind::kMoeSum, match_moe_sum, record_moe_sum});
}

}  // namespace folio::vulkan
