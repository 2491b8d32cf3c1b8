// NEON activation quantizers for mul_mat: bit-identical to the scalar
// reference quantizers (quant/quant_ref.h) that define Q8_0 and Q8_K, with
// the rules spelled out in avx2/quantize_act.cc. Here:
// Q8_0 block of 32: max|x| by FMAXNM (NaN ignored, like fmax), d = max / 127,
//   q = roundf(x / d) by FCVTAS (to nearest, ties away; NaN -> 0;
//   saturating), clamped to [-128, 127]; the scale kept as its f16 rounding.
// Q8_K block of 256: max = the first element of largest magnitude, iscale =
//   -127 / max, q = min(127, round-to-nearest-even(iscale * x)) by FCVTNS
//   (NaN -> 0), d = 1 / iscale, bsums = sums of 16; an all-zero block is all
//   zeros.
#include <cstring>

#include "backend/cpu/neon/kernels.h"
#include "backend/cpu/neon/simd.h"
#include "quant/blocks.h"

namespace folio::cpu {

namespace {

using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

// 16 int32 (in element order) in [-128, 127] to 16 bytes.
FOLIO_INLINE_NEON int8x16_t narrow(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  const int16x8_t lo = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
  const int16x8_t hi = vcombine_s16(vqmovn_s32(c), vqmovn_s32(d));
  return vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi));
}

// max |x[i]| over n (a multiple of 4) elements, NaN ignored.
FOLIO_INLINE_NEON float abs_max(const float* x, int n) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < n; i += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + i)));
  return vmaxnmvq_f32(m);
}

}  // namespace

void quantize_act_q8_0_neon(const float* x, void* dst, int64_t k) {
  const MutableQ8Row32 row = q8row32(dst, k);
  const int32x4_t lo = vdupq_n_s32(-128), hi = vdupq_n_s32(127);
  for (int64_t b = 0; b < k / kQK; ++b, x += kQK) {
    const float d = abs_max(x, kQK) / 127.0f;
    const float32x4_t id = vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f);
    int32x4_t q[8];
    int32x4_t sum = vdupq_n_s32(0);
    for (int j = 0; j < 8; ++j) {
      q[j] = vminq_s32(vmaxq_s32(vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * j), id)), lo), hi);
      sum = vaddq_s32(sum, q[j]);
    }
    vst1q_s8(row.qs + b * kQK, narrow(q[0], q[1], q[2], q[3]));
    vst1q_s8(row.qs + b * kQK + 16, narrow(q[4], q[5], q[6], q[7]));
    row.d[b] = static_cast<float>(static_cast<float16_t>(d));  // f16 rounding (RNE)
    row.sum[b] = vaddvq_s32(sum);
  }
}

void quantize_act_q8_k_neon(const float* x, void* dst, int64_t k) {
  for (int64_t b = 0; b < k / kQKK; ++b, x += kQKK) {
    BlockQ8_K* out = static_cast<BlockQ8_K*>(dst) + b;
    const float am = abs_max(x, kQKK);
    if (am == 0.0f) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    float max = 0.0f;  // the first element whose magnitude is the maximum
    for (int i = 0; i < kQKK; ++i) {
      if (x[i] == am || x[i] == -am) {
        max = x[i];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const float32x4_t isv = vdupq_n_f32(iscale);
    const int32x4_t hi = vdupq_n_s32(127);
    for (int i = 0; i < kQKK; i += 16) {
      int32x4_t q[4];
      for (int j = 0; j < 4; ++j) {
        q[j] = vminq_s32(vcvtnq_s32_f32(vmulq_f32(isv, vld1q_f32(x + i + 4 * j))), hi);
      }
      vst1q_s8(out->qs + i, narrow(q[0], q[1], q[2], q[3]));
      out->bsums[i / 16] =
          static_cast<int16_t>(vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3]))));
    }
    out->d = 1.0f / iscale;
  }
}

}  // namespace folio::cpu
