// AMX kernels on plain weights (the packed layouts' AMX panels are
// registered in packed/register_packed.cc): BF16 mul_mat and mul_mat_id for
// every batch size, decode included, so that a BF16 model's outputs do not
// depend on the batch (amx/mul_mat_bf16_amx.cc). Needs AMX-BF16 and the
// tile state the OS granted (CpuFeatures::amx_bf16).
#include "backend/cpu/amx/kernels.h"
#include "core/cpu_features.h"

namespace folio {

namespace {

bool bf16_weight_with_amx(const Op& op) {
  return op.src[0].dtype == DType::BF16 && cpu_features().amx_bf16;
}

}  // namespace

void register_amx_kernels(KernelTable& t) {
  using namespace cpu;
  t.add({OpKind::kMulMat, KernelTier::kAmx, "mul_mat.bf16.amx", bf16_weight_with_amx,
         mul_mat_bf16_amx});
  t.add({OpKind::kMulMatId, KernelTier::kAmx, "mul_mat_id.bf16.amx", bf16_weight_with_amx,
         mul_mat_id_bf16_amx});
}

}  // namespace folio
