// NEON kernel entry points (64-bit ARM): the neon tier (ARMv8 Advanced
// SIMD), the neon_dotprod tier (+ SDOT) and the neon_i8mm tier (+ SMMLA),
// registered by register_neon.cc. The tiers share these functions; the
// tier's entry point picks the byte dot product (neon/simd.h), which
// changes no result bit.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"

namespace folio::cpu {

// mul_mat_quant.cc: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, NVFP4 (x Q8_0
// rows) and Q4_K, Q5_K, Q6_K (x Q8_K super-blocks).
bool neon_quant_weight(DType w);
enum class NeonDot { kWiden, kSdot, kSmmla };  // WidenI8, SdotI8, MmlaI8 (neon/simd.h)
MatMulSpec quant_mul_mat_spec_neon(DType w, NeonDot dot);

// simd_kernels.cc (simd/quantize_act.h): activation rows for the integer tiles,
// bit-identical to the reference (mul_mat_tiled.h convert_act_row): Q8Row32 /
// BlockQ8_K.
void quantize_act_q8_0_neon(const float* x, void* dst, int64_t k);
void quantize_act_q8_k_neon(const float* x, void* dst, int64_t k);

// mul_mat_float.cc: F32, F16, BF16 weights x F32 activations; Q2_K, Q3_K,
// IQ4_XS dequantized per block (no integer tile).
MatMulSpec float_mul_mat_spec_neon(DType w);

// mul_mat / mul_mat_id for every weight type above with the tier's byte dot
// product D (drivers/mul_mat_tiled.h); the tiles do not depend on m.
template <NeonDot D>
MatMulSpec mul_mat_spec_neon(DType w, int64_t /*m*/) {
  return neon_quant_weight(w) ? quant_mul_mat_spec_neon(w, D) : float_mul_mat_spec_neon(w);
}
inline constexpr KernelFn mul_mat_neon = &mul_mat_kernel<&mul_mat_spec_neon<NeonDot::kWiden>>;
inline constexpr KernelFn mul_mat_id_neon = &mul_mat_id_kernel<&mul_mat_spec_neon<NeonDot::kWiden>>;
inline constexpr KernelFn mul_mat_neon_dotprod =
    &mul_mat_kernel<&mul_mat_spec_neon<NeonDot::kSdot>>;
inline constexpr KernelFn mul_mat_id_neon_dotprod =
    &mul_mat_id_kernel<&mul_mat_spec_neon<NeonDot::kSdot>>;
inline constexpr KernelFn mul_mat_neon_i8mm = &mul_mat_kernel<&mul_mat_spec_neon<NeonDot::kSmmla>>;
inline constexpr KernelFn mul_mat_id_neon_i8mm =
    &mul_mat_id_kernel<&mul_mat_spec_neon<NeonDot::kSmmla>>;

}  // namespace folio::cpu
