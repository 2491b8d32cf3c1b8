// The float kernels written once over the traits type (f32x16.h): their
// entry points, the one registration that every SIMD tier calls, and the
// explicit instantiation a tier's simd_kernels.cc makes for its S.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/scalar/supports.h"

namespace folio::cpu::simd {

// norm.h
template <class S>
Status rms_norm(const Op& op, const KernelContext& ctx);
template <class S>
Status add_rms_norm(const Op& op, const KernelContext& ctx);

// "OP.ISA" with static storage (Kernel::name).
const char* kernel_name(const char* op, const char* isa);

// Registers the kernels above for tier S (called from register_<tier>.cc,
// which is compiled with baseline flags: this only takes addresses).
template <class S>
void register_simd_kernels(KernelTable& t) {
  t.add({OpKind::kRmsNorm, S::kTier, kernel_name("rms_norm", S::kName), supports_rms_norm_simd,
         rms_norm<S>});
  t.add({OpKind::kAddRmsNorm, S::kTier, kernel_name("add_rms_norm", S::kName),
         supports_add_rms_norm_simd, add_rms_norm<S>});
}

}  // namespace folio::cpu::simd

// In a tier's simd_kernels.cc, after the bodies: the definitions
// register_simd_kernels<S> takes the addresses of.
#define FOLIO_SIMD_INSTANTIATE(S)                                          \
  namespace folio::cpu::simd {                                             \
  template Status rms_norm<S>(const Op& op, const KernelContext& ctx);     \
  template Status add_rms_norm<S>(const Op& op, const KernelContext& ctx); \
  }
