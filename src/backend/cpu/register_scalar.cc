// Portable optimised kernels (tier kScalar, no intrinsics): registered here,
// implemented under scalar/. They run where no SIMD tier applies and are the
// structure reference for the SIMD versions of the same kernels.
#include "backend/cpu/scalar/flash_attn_tiled.h"

namespace folio {

void register_scalar_kernels(KernelTable& t) {
  using namespace cpu;
  t.add({OpKind::kFlashAttn, KernelTier::kScalar, "flash_attn.scalar", nullptr, flash_attn_scalar});
}

}  // namespace folio
