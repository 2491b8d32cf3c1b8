// AVX2 activation quantizers for mul_mat: bit-identical to the scalar
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
// Four vectors of 8 int32 are narrowed to 32 bytes with two saturating packs
// (values are already in range) and one lane permutation.
#include <cstring>

#include "backend/cpu/avx2/kernels.h"
#include "backend/cpu/avx2/simd.h"
#include "backend/cpu/scalar/mul_mat_tiled.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

// roundf(v) for 8 lanes, NaN -> 0, clamped to [-128, 127], as int32.
FOLIO_INLINE_AVX2 __m256i round_away_i8(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 sign_one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign));
  __m256 r = _mm256_add_ps(t, _mm256_and_ps(up, sign_one));
  r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
  const __m256 ordered = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
  return _mm256_and_si256(_mm256_cvttps_epi32(r), _mm256_castps_si256(ordered));
}

// 32 int32 in [-128, 127] (a, b, c, d in element order) to 32 bytes.
FOLIO_INLINE_AVX2 __m256i narrow(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

FOLIO_INLINE_AVX2 int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

FOLIO_TARGET_AVX2 void quantize_q8_0(const float* x, void* dst, int64_t k) {
  const MutableQ8Row32 row = q8row32(dst, k);
  int8_t* qs = row.qs;
  float* ds = row.d;
  int32_t* sums = row.sum;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + 8 * j);
      // max_ps returns its second operand when one is NaN: NaN lanes are skipped.
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[j]), amax);
    }
    const float d = avx2::hmax(amax) / 127.0f;
    const __m256 idv = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) q[j] = round_away_i8(_mm256_mul_ps(v[j], idv));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + b * kQK), narrow(q[0], q[1], q[2], q[3]));
    ds[b] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
    sums[b] =
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  }
}

FOLIO_TARGET_AVX2 void quantize_q8_k(const float* x, void* dst, int64_t k) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ8_K* out = static_cast<BlockQ8_K*>(dst) + b;
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < kQKK; i += 8)
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), amax);
    const float am = avx2::hmax(amax);
    if (am == 0.0f) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    // The first element whose magnitude is the maximum.
    float max = 0.0f;
    const __m256 amv = _mm256_set1_ps(am);
    for (int i = 0; i < kQKK; i += 8) {
      const int hit = _mm256_movemask_ps(
          _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), amv, _CMP_EQ_OQ));
      if (hit != 0) {
        max = x[i + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 isv = _mm256_set1_ps(iscale);
    for (int i = 0; i < kQKK; i += 32) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        const __m256 v = _mm256_mul_ps(isv, _mm256_loadu_ps(x + i + 8 * j));
        // NaN -> 0, as the reference's magic-number rounding gives.
        const __m256i ordered = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
        q[j] = _mm256_min_epi32(_mm256_and_si256(_mm256_cvtps_epi32(v), ordered),
                                _mm256_set1_epi32(127));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out->qs + i), narrow(q[0], q[1], q[2], q[3]));
      out->bsums[i / 16] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      out->bsums[i / 16 + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
    out->d = 1.0f / iscale;
  }
}

}  // namespace

void quantize_act_q8_0_avx2(const float* x, void* dst, int64_t k) {
  quantize_q8_0(x, dst, k);
}
void quantize_act_q8_k_avx2(const float* x, void* dst, int64_t k) {
  quantize_q8_k(x, dst, k);
}

}  // namespace folio::cpu
