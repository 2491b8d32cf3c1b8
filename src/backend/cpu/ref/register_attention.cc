// Reference kernels (attention): registered here, implemented one file per op family.
#include "backend/cpu/kernel.h"
#include "backend/cpu/ref/attn_util.h"

namespace folio {

void register_ref_kernels_attention(KernelTable& t) {
  t.add(
      {OpKind::kFlashAttn, KernelTier::kRef, "flash_attn.ref", nullptr, &attn_ref::flash_attn_ref});
  t.add({OpKind::kSdpa, KernelTier::kRef, "sdpa.ref", nullptr, &attn_ref::sdpa_ref});
}

}  // namespace folio
