// Reference kernels (recurrent): registered here, implemented one file per op family.
#include "backend/cpu/kernel.h"

namespace folio {

namespace recurrent_ref {
Status ssm_conv_ref(const Op& op, const KernelContext& ctx);         // ssm_conv.cc
Status gated_delta_net_ref(const Op& op, const KernelContext& ctx);  // gated_delta_net.cc
Status ssm_scan_ref(const Op& op, const KernelContext& ctx);         // ssm_scan.cc
}  // namespace recurrent_ref

void register_ref_kernels_recurrent(KernelTable& t) {
  t.add(
      {OpKind::kSsmConv, KernelTier::kRef, "ssm_conv.ref", nullptr, &recurrent_ref::ssm_conv_ref});
  t.add({OpKind::kGatedDeltaNet, KernelTier::kRef, "gated_delta_net.ref", nullptr,
         &recurrent_ref::gated_delta_net_ref});
  t.add(
      {OpKind::kSsmScan, KernelTier::kRef, "ssm_scan.ref", nullptr, &recurrent_ref::ssm_scan_ref});
}

}  // namespace folio
