// Portable optimised kernels (tier kScalar, no intrinsics): registered here,
// implemented under drivers/. They run where no SIMD tier applies and are the
// structure reference for the SIMD versions of the same kernels.
#include "backend/cpu/drivers/cpy_tiled.h"
#include "backend/cpu/drivers/flash_attn_tiled.h"
#include "backend/cpu/drivers/gdn_chunked.h"
#include "backend/cpu/drivers/rope_tables.h"

namespace folio {

void register_scalar_kernels(KernelTable& t) {
  using namespace cpu;
  t.add({OpKind::kCpy, KernelTier::kScalar, "cpy.tiled", nullptr, cpy_tiled});
  t.add({OpKind::kFlashAttn, KernelTier::kScalar, "flash_attn.scalar", nullptr, flash_attn_scalar});
  // Normal / neox modes: the reference's arithmetic with memoised angle tables.
  t.add({OpKind::kRope, KernelTier::kScalar, "rope.tables", supports_rope_tables,
         rope_tables_scalar});
  // Long sequences only (T >= 64, params.allow_chunked); the rest keep the
  // bit-identical reference.
  t.add({OpKind::kGatedDeltaNet, KernelTier::kScalar, "gated_delta_net.chunked.scalar",
         supports_gated_delta_net_chunked, gated_delta_net_chunked_scalar});
}

}  // namespace folio
