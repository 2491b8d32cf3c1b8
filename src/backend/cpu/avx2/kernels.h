// AVX2 + FMA + F16C kernel entry points. Entry points are plain functions:
// register_avx2.cc (compiled with baseline flags) only takes their addresses;
// the SIMD work happens in FOLIO_TARGET_AVX2 helpers inside each file.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"

namespace folio::cpu {

// simd_kernels.cc (simd/quantize_act.h): activation rows for the integer dot kernels,
// bit-identical to the reference (mul_mat_tiled.h convert_act_row): Q8Row32 /
// BlockQ8_K.
void quantize_act_q8_0_avx2(const float* x, void* dst, int64_t k);
void quantize_act_q8_k_avx2(const float* x, void* dst, int64_t k);

// simd_kernels.cc / mul_mat_quant.cc: the tile spec for a weight type
// (F32, F16, BF16 / every quantized type below; CHECKs the type); F16 /
// BF16 with many activation rows get a panel.
// quant_mul_mat_spec_avx2 covers the 32-element blocks (Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL) and forwards the super-block types to
// kquant_mul_mat_spec_avx2 (mul_mat_kquant.cc: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS) and the FP4 types to fp4_mul_mat_spec_avx2 (mul_mat_fp4.cc:
// MXFP4, NVFP4). m: activation rows of the op (the quantized tiles do not
// depend on it).
MatMulSpec float_mul_mat_spec_avx2(DType w, int64_t m);
MatMulSpec quant_mul_mat_spec_avx2(DType w, int64_t m);
MatMulSpec kquant_mul_mat_spec_avx2(DType w);
MatMulSpec fp4_mul_mat_spec_avx2(DType w);

// mul_mat / mul_mat_id for every weight type above (drivers/mul_mat_tiled.h).
inline constexpr KernelFn mul_mat_avx2 =
    tier_mul_mat<&float_mul_mat_spec_avx2, &quant_mul_mat_spec_avx2>;
inline constexpr KernelFn mul_mat_id_avx2 =
    tier_mul_mat_id<&float_mul_mat_spec_avx2, &quant_mul_mat_spec_avx2>;

}  // namespace folio::cpu
