// Activation quantizers for mul_mat over the traits type (f32x16.h):
// byte-identical to the scalar reference quantizers (quant/quant_ref.h)
// that define Q8_0 and Q8_K, only faster (the reference calls libm roundf
// per element). Output layouts are the driver's (drivers/mul_mat_tiled.h):
// Q8Row32 rows for Q8_0, BlockQ8_K super-blocks for Q8_K.
//
// Q8_0 block of 32 (two vectors): d = max|x| / 127 (NaN ignored, like fmax),
//   id = 1/d or 0, q = roundf(x * id) (ties away from zero; NaN -> 0),
//   clamped to [-128, 127]; the scale is kept as its f16 rounding (RNE).
// Q8_K block of 256: max = the first element of largest magnitude, iscale =
//   -127 / max, q = min(127, round-to-nearest-even(iscale * x)) (the
//   reference's magic-number rounding; NaN -> 0), d = 1 / iscale, bsums =
//   sums of 16 (one vector each); an all-zero block is all zeros.
// The tiers' entry points (quantize_act_q8_0_avx2, ...) are the ones
// <tier>/kernels.h declares; their simd_kernels.cc defines them over these.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/cpu/drivers/mul_mat_tiled.h"
#include "quant/blocks.h"

namespace folio::cpu::simd {

// One Q8_0 block of 32 values at x: quants to qs, the scale d (before its
// f16 rounding) returned, the quants' sum to *sum where sum is not null.
template <class S>
__attribute__((always_inline)) inline float quantize_q8_0_block(const float* x, int8_t* qs,
                                                                int32_t* sum) {
  using V = typename S::V;
  const V v0 = S::load(x), v1 = S::load(x + 16);
  const float d = S::hmax(S::max_abs(S::max_abs(S::zero(), v0), v1)) / 127.0f;
  const V idv = S::set1(d != 0.0f ? 1.0f / d : 0.0f);
  const typename S::I q0 = S::round_away_i8(v0 * idv), q1 = S::round_away_i8(v1 * idv);
  S::store_i8(qs, q0);
  S::store_i8(qs + 16, q1);
  if (sum != nullptr) *sum = S::hsum(S::add(q0, q1));
  return d;
}

// Blocks b0 .. b0 + 15 of a row (x: block b0's values) as quantize_q8_0_block
// does each, with the per-block reductions (largest magnitude, quant sum) and
// the scale arithmetic done for the 16 blocks at once: the same values (max
// and integer sums are exact in any order, the divisions and products are
// lane-wise the scalar ones).
template <class S>
__attribute__((always_inline)) inline void quantize_q8_0_blocks16(const float* x,
                                                                  const MutableQ8Row32& row,
                                                                  int64_t b0) {
  using V = typename S::V;
  using I = typename S::I;
  V m[16];
  for (int j = 0; j < 16; ++j) {
    m[j] = S::max_abs(S::max_abs(S::zero(), S::load(x + 32 * j)), S::load(x + 32 * j + 16));
  }
  const V d = S::hmaxs(m) / S::set1(127.0f);
  alignas(64) float id[16];
  S::store(id, S::recip_or_zero(d));
  I sum[16];
  for (int j = 0; j < 16; ++j) {
    const V idv = S::set1(id[j]);
    const I q0 = S::round_away_i8(S::load(x + 32 * j) * idv);
    const I q1 = S::round_away_i8(S::load(x + 32 * j + 16) * idv);
    S::store_i8(row.qs + (b0 + j) * quant::kQK, q0);
    S::store_i8(row.qs + (b0 + j) * quant::kQK + 16, q1);
    sum[j] = S::add(q0, q1);
  }
  const I sums = S::hsums(sum);
  const V dr = S::round_f16(d);
  S::store(row.d + b0, dr);
  S::store(row.sum + b0, sums);
  S::store(row.ds + b0, dr * S::to_float(sums));
}

template <class S>
void quantize_q8_0(const float* x, void* dst, int64_t k) {
  const MutableQ8Row32 row = q8row32(dst, k);
  int64_t b = 0;
  if constexpr (requires(const typename S::V (&a)[16]) { S::hmaxs(a); }) {
    for (; b + 16 <= k / quant::kQK; b += 16, x += 16 * quant::kQK) {
      quantize_q8_0_blocks16<S>(x, row, b);
    }
  }
  for (; b < k / quant::kQK; ++b, x += quant::kQK) {
    row.d[b] = S::round_f16(quantize_q8_0_block<S>(x, row.qs + b * quant::kQK, &row.sum[b]));
    row.ds[b] = row.d[b] * static_cast<float>(row.sum[b]);
  }
}

template <class S>
void quantize_q8_k(const float* x, void* dst, int64_t k) {
  using V = typename S::V;
  for (int64_t b = 0; b < k / quant::kQKK; ++b, x += quant::kQKK) {
    quant::BlockQ8_K* out = static_cast<quant::BlockQ8_K*>(dst) + b;
    V amax = S::zero();
    for (int i = 0; i < quant::kQKK; i += 16) amax = S::max_abs(amax, S::load(x + i));
    const float am = S::hmax(amax);
    if (am == 0.0f) {
      std::memset(out, 0, sizeof(quant::BlockQ8_K));
      continue;
    }
    float max = 0.0f;  // the first element whose magnitude is the maximum
    for (int i = 0; i < quant::kQKK; i += 16) {
      const int lane = S::first_abs_equal(S::load(x + i), am);
      if (lane >= 0) {
        max = x[i + lane];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const V isv = S::set1(iscale);
    for (int i = 0; i < quant::kQKK; i += 16) {
      const typename S::I q = S::round_even_max127(isv * S::load(x + i));
      S::store_i8(out->qs + i, q);
      out->bsums[i / 16] = static_cast<int16_t>(S::hsum(q));
    }
    out->d = 1.0f / iscale;
  }
}

}  // namespace folio::cpu::simd
