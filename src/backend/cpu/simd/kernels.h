// The float kernels written once over the traits type (f32x16.h): their
// entry points, the one registration that every SIMD tier calls, and the
// explicit instantiation a tier's simd_kernels.cc makes for its S.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/rope_tables.h"
#include "backend/cpu/drivers/row_drivers.h"
#include "backend/cpu/drivers/supports.h"

namespace folio::cpu::simd {

// elementwise.h: add, mul, scale, unary (silu, gelu, sigmoid, exp) and glu
// (swiglu, geglu, swiglu_oai) as elementwise<S, add_rows>, ... (the row
// drivers of drivers/row_drivers.h).
using ElementwiseRowsFn = Status (*)(const Op& op, const KernelContext& ctx,
                                     const ElementwiseSpanFns& fns);
template <class S, ElementwiseRowsFn Rows>
Status elementwise(const Op& op, const KernelContext& ctx);

// norm.h
template <class S>
Status rms_norm(const Op& op, const KernelContext& ctx);
template <class S>
Status add_rms_norm(const Op& op, const KernelContext& ctx);

// softmax.h
template <class S>
Status soft_max(const Op& op, const KernelContext& ctx);

// rope.h: the ops drivers/rope_tables.h supports (supports_rope_tables).
template <class S>
Status rope(const Op& op, const KernelContext& ctx);

// flash_attn.h: kFlashAttn with f32 / f16 / q8_0 K and V (the tiles of
// drivers/flash_attn_tiled.h; bf16 K/V: the portable tiled kernel,
// flash_attn.scalar, converts those rows).
template <class S>
Status flash_attn(const Op& op, const KernelContext& ctx);

// set_rows.h: F32 rows into F32, F16 or Q8_0 tables (supports_set_rows_simd).
template <class S>
Status set_rows(const Op& op, const KernelContext& ctx);

// "OP.ISA" with static storage (Kernel::name).
const char* kernel_name(const char* op, const char* isa);

// Registers the kernels above for tier S (called from register_<tier>.cc,
// which is compiled with baseline flags: this only takes addresses).
template <class S>
void register_simd_kernels(KernelTable& t) {
  t.add({OpKind::kAdd, S::kTier, kernel_name("add", S::kName), nullptr, elementwise<S, add_rows>});
  t.add({OpKind::kMul, S::kTier, kernel_name("mul", S::kName), nullptr, elementwise<S, mul_rows>});
  t.add({OpKind::kScale, S::kTier, kernel_name("scale", S::kName), nullptr,
         elementwise<S, scale_rows>});
  t.add({OpKind::kUnary, S::kTier, kernel_name("unary", S::kName), supports_unary_simd,
         elementwise<S, unary_rows>});
  t.add({OpKind::kGlu, S::kTier, kernel_name("glu", S::kName), supports_glu_simd,
         elementwise<S, glu_rows>});
  t.add({OpKind::kRmsNorm, S::kTier, kernel_name("rms_norm", S::kName), supports_rms_norm_simd,
         rms_norm<S>});
  t.add({OpKind::kAddRmsNorm, S::kTier, kernel_name("add_rms_norm", S::kName),
         supports_add_rms_norm_simd, add_rms_norm<S>});
  t.add({OpKind::kSoftMax, S::kTier, kernel_name("soft_max", S::kName), supports_soft_max_simd,
         soft_max<S>});
  t.add({OpKind::kRope, S::kTier, kernel_name("rope", S::kName), supports_rope_tables, rope<S>});
  t.add({OpKind::kFlashAttn, S::kTier, kernel_name("flash_attn", S::kName),
         supports_flash_attn_simd, flash_attn<S>});
  t.add({OpKind::kSetRows, S::kTier, kernel_name("set_rows", S::kName), supports_set_rows_simd,
         set_rows<S>});
}

}  // namespace folio::cpu::simd

// In a tier's simd_kernels.cc, after the bodies: the definitions
// register_simd_kernels<S> takes the addresses of.
#define FOLIO_SIMD_INSTANTIATE(S)                                                     \
  namespace folio::cpu::simd {                                                        \
  template Status elementwise<S, add_rows>(const Op& op, const KernelContext& ctx);   \
  template Status elementwise<S, mul_rows>(const Op& op, const KernelContext& ctx);   \
  template Status elementwise<S, scale_rows>(const Op& op, const KernelContext& ctx); \
  template Status elementwise<S, unary_rows>(const Op& op, const KernelContext& ctx); \
  template Status elementwise<S, glu_rows>(const Op& op, const KernelContext& ctx);   \
  template Status rms_norm<S>(const Op& op, const KernelContext& ctx);                \
  template Status add_rms_norm<S>(const Op& op, const KernelContext& ctx);            \
  template Status soft_max<S>(const Op& op, const KernelContext& ctx);                \
  template Status rope<S>(const Op& op, const KernelContext& ctx);                    \
  template Status flash_attn<S>(const Op& op, const KernelContext& ctx);              \
  template Status set_rows<S>(const Op& op, const KernelContext& ctx);                \
  }
