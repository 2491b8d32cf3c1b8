// AVX-512 kernel entry points (F/BW/VL/DQ; the integer dot kernels also need
// VNNI). Entry points are plain functions: register_avx512.cc (compiled with
// baseline flags) only takes their addresses; the SIMD work happens in
// FOLIO_TARGET_AVX512 helpers inside each file.
#pragma once

#include "backend/cpu/kernel.h"
#include "backend/cpu/drivers/mul_mat_tiled.h"

namespace folio::cpu {

// simd_kernels.cc (simd/quantize_act.h): activation rows for the integer dot kernels,
// bit-identical to the reference (mul_mat_tiled.h convert_act_row): Q8Row32 /
// BlockQ8_K.
void quantize_act_q8_0_avx512(const float* x, void* dst, int64_t k);
void quantize_act_q8_k_avx512(const float* x, void* dst, int64_t k);

// simd_kernels.cc / mul_mat_quant.cc: the tile spec for a weight type
// (F32, F16, BF16 / every quantized type below; CHECKs the type). `m`
// (activation rows per weight of the op) picks the tile shape; outputs do
// not depend on it.
// quant_mul_mat_spec_avx512 covers the 32-element blocks (Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL) and forwards the super-block types to
// kquant_mul_mat_spec_avx512 (mul_mat_kquant.cc: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
// IQ4_XS).
MatMulSpec float_mul_mat_spec_avx512(DType w, int64_t m);
MatMulSpec quant_mul_mat_spec_avx512(DType w, int64_t m);
MatMulSpec kquant_mul_mat_spec_avx512(DType w, int64_t m);

// mul_mat / mul_mat_id for every weight type above (drivers/mul_mat_tiled.h).
inline constexpr KernelFn mul_mat_avx512 =
    tier_mul_mat<&float_mul_mat_spec_avx512, &quant_mul_mat_spec_avx512>;
inline constexpr KernelFn mul_mat_id_avx512 =
    tier_mul_mat_id<&float_mul_mat_spec_avx512, &quant_mul_mat_spec_avx512>;

}  // namespace folio::cpu
