// f32 -> BF16 in AVX-512F integer steps, exactly as amx_bf16::act_to_bf16
// (vcvtneps2bf16's rounding: nearest even, denormals to signed zero, NaN
// quieted), and the F16 path's activation split (amx_f16::split_activation).
// Shared by the AMX F16/BF16 tile kernel (amx/mul_mat_bf16_amx.cc) and the
// AVX-512 F16 rows kernel (amx/mul_mat_f16_rows.cc), whose outputs must be
// the same bits; integer steps, so the emulated build needs no AVX512_BF16.
#pragma once

#include <immintrin.h>

#include "core/target.h"

namespace folio::cpu::amx_bf16 {

#define FOLIO_INLINE_BF16_ROUND FOLIO_TARGET_AVX512 __attribute__((always_inline)) static inline

// 16 f32 -> 16 bf16 bit patterns.
FOLIO_INLINE_BF16_ROUND __m256i bf16_round16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f800000));
  const __mmask16 denormal =
      _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));  // exponent 0 (zeros too)
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  r = _mm512_mask_and_epi32(r, denormal, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000));
  return _mm512_cvtepi32_epi16(r);
}

// 16 f32 -> their BF16 parts (amx_f16::split_activation): hi rounded, lo
// the rounded rest (zero where hi is infinite or NaN). Run with the MXCSR's
// default DAZ off: the rest of a denormal keeps its sign, as in the model.
FOLIO_INLINE_BF16_ROUND void act_split16(__m512 v, __m256i& hi, __m256i& lo) {
  hi = bf16_round16(v);
  const __m512i hi32 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16);
  const __m512i exp = _mm512_set1_epi32(0x7f800000);
  const __mmask16 finite = _mm512_cmpneq_epi32_mask(_mm512_and_si512(hi32, exp), exp);
  lo = bf16_round16(_mm512_maskz_sub_ps(finite, v, _mm512_castsi512_ps(hi32)));
}

#undef FOLIO_INLINE_BF16_ROUND

}  // namespace folio::cpu::amx_bf16
