#include "backend/cpu/kernel.h"

namespace folio {

KernelTier max_tier_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return KernelTier::kScalar;
    case Isa::kNeon: return KernelTier::kNeon;
    case Isa::kNeonDotprod: return KernelTier::kNeonDotprod;
    case Isa::kNeonI8mm: return KernelTier::kNeonI8mm;
    case Isa::kAvx2: return KernelTier::kAvx2;
    case Isa::kAvx2Vnni: return KernelTier::kAvx2Vnni;
    case Isa::kAvx512: return KernelTier::kAvx512;
    case Isa::kAmx: return KernelTier::kAmx;
  }
  return KernelTier::kScalar;
}

bool op_has_packed(const Op& op) {
  if (is_packed(op.dst.dtype) || is_packed(op.dst2.dtype)) return true;
  for (const TensorView& s : op.src) {
    if (!s.empty() && is_packed(s.dtype)) return true;
  }
  return false;
}

const Kernel* KernelTable::find(const Op& op, KernelTier max_tier, bool ref_only) const {
  const Kernel* best = nullptr;
  const bool packed = op_has_packed(op);
  for (const Kernel& k : kernels_) {
    if (k.kind != op.kind || k.reads_packed != packed) continue;
    if (ref_only ? k.tier != KernelTier::kRef : k.tier > max_tier) continue;
    if (best != nullptr && k.tier <= best->tier) continue;
    if (k.supports != nullptr && !k.supports(op)) continue;
    best = &k;
  }
  return best;
}

const KernelTable& cpu_kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    register_ref_kernels_basic(t);
    register_ref_kernels_attention(t);
    register_ref_kernels_recurrent(t);
    register_ref_kernels_cache(t);
    register_ref_kernels_fused(t);
    register_scalar_kernels(t);
#if defined(__x86_64__)
    register_avx2_kernels(t);
    register_avx512_kernels(t);
    register_amx_kernels(t);
#elif defined(__aarch64__)
    register_neon_kernels(t);
#endif
    register_packed_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace folio
