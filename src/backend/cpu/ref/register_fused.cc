// Reference kernels (fused recurrent-state decode ops): registered here,
// implemented one file per op.
#include "backend/cpu/kernel.h"

namespace folio {

namespace fused_ref {
Status ssm_conv_update_ref(const Op& op, const KernelContext& ctx);  // ssm_conv_update.cc
Status gated_delta_net_update_ref(const Op& op,
                                  const KernelContext& ctx);  // gated_delta_net_update.cc
Status ssm_scan_update_ref(const Op& op, const KernelContext& ctx);  // ssm_scan_update.cc
}  // namespace fused_ref

void register_ref_kernels_fused(KernelTable& t) {
  t.add({OpKind::kSsmConvUpdate, KernelTier::kRef, "ssm_conv_update.ref", nullptr,
         &fused_ref::ssm_conv_update_ref});
  t.add({OpKind::kGatedDeltaNetUpdate, KernelTier::kRef, "gated_delta_net_update.ref", nullptr,
         &fused_ref::gated_delta_net_update_ref});
  t.add({OpKind::kSsmScanUpdate, KernelTier::kRef, "ssm_scan_update.ref", nullptr,
         &fused_ref::ssm_scan_update_ref});
}

}  // namespace folio
