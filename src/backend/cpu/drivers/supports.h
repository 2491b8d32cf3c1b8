// What the optimised element-wise / normalisation kernels accept, shared by
// every tier's registration (register_avx2.cc, register_avx512.cc). Each
// function adds to validate_op only the checks it leaves open (output
// dtypes, weight layout) and the variants the kernels implement.
#pragma once

#include "backend/op.h"

namespace folio::cpu {

template <DType T>
bool mul_mat_weight_is(const Op& op) {
  return op.src[0].dtype == T;
}

bool supports_unary_simd(const Op& op);         // silu, gelu (tanh), sigmoid, exp
bool supports_glu_simd(const Op& op);           // swiglu, geglu (tanh), swiglu_oai
bool supports_rms_norm_simd(const Op& op);      // weight absent or one F32 row of ne0
bool supports_add_rms_norm_simd(const Op& op);  // F32 outputs, weight as above
bool supports_soft_max_simd(const Op& op);      // F32 output
bool supports_flash_attn_simd(const Op& op);    // K/V f32, f16 or q8_0 (not bf16)
bool supports_set_rows_simd(const Op& op);      // table f32, f16 or q8_0 (not bf16)

}  // namespace folio::cpu
