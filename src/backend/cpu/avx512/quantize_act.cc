// AVX-512 activation quantizers for mul_mat: bit-identical to the scalar
// reference quantizers (quant/quant_ref.h) that define Q8_0 and Q8_K, only
// faster (the reference calls libm roundf per element). Output layouts are
// the driver's (backend/cpu/scalar/mul_mat_tiled.h): Q8Row32 rows for Q8_0,
// BlockQ8_K super-blocks for Q8_K.
//
// Q8_0 block of 32: d = max|x| / 127 (NaN ignored, like fmax), id = 1/d or 0,
//   q = roundf(x * id) (ties away from zero: trunc(v), plus sign(v) when
//   |v - trunc(v)| >= 0.5, exact since v - trunc(v) is), NaN -> 0, clamped
//   to [-128, 127]; the scale is kept as its f16 rounding (RNE, vcvtps2ph).
// Q8_K block of 256: max = the first element of largest magnitude, iscale =
//   -127 / max, q = min(127, round-to-nearest-even(iscale * x)) (vcvtps2dq in
//   the default rounding mode, the reference's magic-number rounding), d =
//   1 / iscale, bsums = sums of 16; an all-zero block is all zeros.
#include <cstring>

#include "backend/cpu/avx512/kernels.h"
#include "backend/cpu/avx512/simd.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

// roundf(v) for 16 lanes, NaN -> 0, clamped to [-128, 127], as int32.
FOLIO_INLINE_AVX512 __m512i round_away_i8(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
  const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 sign_one =
      _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
  __m512 r = _mm512_mask_add_ps(t, up, t, sign_one);
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  return _mm512_maskz_cvttps_epi32(ordered, r);
}

FOLIO_TARGET_AVX512 void quantize_q8_0(const float* x, void* dst, int64_t k) {
  const MutableQ8Row32 row = q8row32(dst, k);
  int8_t* qs = row.qs;
  float* ds = row.d;
  int32_t* sums = row.sum;
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    // max_ps returns its second operand when one is NaN: NaN lanes are skipped.
    const __m512 amax =
        _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0), _mm512_setzero_ps()));
    const float d = avx512::hmax(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 idv = _mm512_set1_ps(id);
    const __m512i q0 = round_away_i8(_mm512_mul_ps(v0, idv));
    const __m512i q1 = round_away_i8(_mm512_mul_ps(v1, idv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * kQK), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + b * kQK + 16), _mm512_cvtepi32_epi8(q1));
    ds[b] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
    sums[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}

FOLIO_TARGET_AVX512 void quantize_q8_k(const float* x, void* dst, int64_t k) {
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ8_K* out = static_cast<BlockQ8_K*>(dst) + b;
    __m512 amax = _mm512_setzero_ps();
    for (int i = 0; i < kQKK; i += 16)
      amax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), amax);
    const float am = avx512::hmax(amax);
    if (am == 0.0f) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    // The first element whose magnitude is the maximum.
    float max = 0.0f;
    const __m512 amv = _mm512_set1_ps(am);
    for (int i = 0; i < kQKK; i += 16) {
      const __mmask16 hit =
          _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), amv, _CMP_EQ_OQ);
      if (hit != 0) {
        max = x[i + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 isv = _mm512_set1_ps(iscale);
    for (int i = 0; i < kQKK; i += 16) {
      const __m512 v = _mm512_mul_ps(isv, _mm512_loadu_ps(x + i));
      // NaN -> 0, as the reference's magic-number rounding gives.
      __m512i q = _mm512_maskz_cvtps_epi32(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
      q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out->qs + i), _mm512_cvtepi32_epi8(q));
      out->bsums[i / 16] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    out->d = 1.0f / iscale;
  }
}

}  // namespace

void quantize_act_q8_0_avx512(const float* x, void* dst, int64_t k) {
  quantize_q8_0(x, dst, k);
}
void quantize_act_q8_k_avx512(const float* x, void* dst, int64_t k) {
  quantize_q8_k(x, dst, k);
}

}  // namespace folio::cpu
