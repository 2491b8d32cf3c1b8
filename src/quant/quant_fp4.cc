// MXFP4 (32-element blocks, one E8M0 exponent) and NVFP4 (64-element blocks,
// a UE4M3 scale per 16 elements): 4-bit E2M1 codes through kFP4Values
// (blocks.h), whose entries are twice the E2M1 values; the scale decoders
// give half the scale, so value = half_scale * kFP4Values[q], one rounding
// (exact except for overflow and subnormal underflow).
//
// Quantizers follow ggml's quantize_row_{mxfp4,nvfp4}_ref, which the gguf
// package reproduces for MXFP4 (gguf has no NVFP4 quantizer):
//   MXFP4  e = floor(log2f(amax)) - 2 + 127 (0 for an all-zero block): the
//          largest level, 12 * 2^(e - 128) = 1.5 * 2^floor(log2 amax), lies
//          in (0.75 amax, 1.5 amax]; each element takes the level nearest
//          to it, the lowest code on ties (so +0 over -0).
//   NVFP4  per 16 elements, UE4M3 scale = amax / 6 rounded as ggml's
//          fp32_to_ue4m3 does (round half up on the mantissa, clamp to 448,
//          subnormals by x * 512 + 0.5 truncated), then the nearest level
//          under the decoded scale.
// The maxima skip NaNs (ggml compares `amax < |x|`). Deliberate choice where
// ggml's C is undefined: an MXFP4 exponent below 0 (amax < 2^-125) or above
// 254 (amax infinite) is clamped into [0, 254].
#include <cmath>

#include "quant/blocks.h"
#include "quant/quant_ref.h"
#include "quant/strict_fp.h"

namespace folio::quant::ref {

namespace {

// The code whose level * d is nearest to x, the lowest one on ties; NaN
// (every distance NaN) gives 0.
inline uint8_t nearest_fp4(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kFP4Values[0]) * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kFP4Values[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

inline float absmax_skip_nan(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
  }
  return amax;
}

// ggml_fp32_to_ue4m3: the UE4M3 byte for a scale x (0 for x <= 0 or NaN).
uint8_t f32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  int exp = static_cast<int>((bits >> 23) & 0xFF) - 127 + 7;
  if (exp <= 0) {  // subnormal: x = man * 2^-9
    const int man = static_cast<int>(x * 512.0f + 0.5f);
    return static_cast<uint8_t>(man < 1 ? 0 : man > 7 ? 7 : man);
  }
  if (exp >= 15) return 0x7E;  // the largest finite value, 448
  int man = static_cast<int>((bits >> 20) & 7) + static_cast<int>((bits >> 19) & 1);
  if (man > 7) {
    man = 0;
    if (++exp >= 15) return 0x7E;
  }
  return static_cast<uint8_t>(exp << 3 | man);
}

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = e8m0_half_to_f32(b.e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(kFP4Values[b.qs[j] & 0xF]) * d;
      dst[j + kQK / 2] = static_cast<float>(kFP4Values[b.qs[j] >> 4]) * d;
    }
  }
}

void dequantize_nvfp4(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKNV; ++i) {
    const auto b = load_block<BlockNVFP4>(src, i);
    for (int s = 0; s < kQKNV / kNVSub; ++s, dst += kNVSub) {
      const float d = ue4m3_half_to_f32(b.d[s]);
      const uint8_t* qs = b.qs + s * (kNVSub / 2);
      for (int j = 0; j < kNVSub / 2; ++j) {
        dst[j] = static_cast<float>(kFP4Values[qs[j] & 0xF]) * d;
        dst[j + kNVSub / 2] = static_cast<float>(kFP4Values[qs[j] >> 4]) * d;
      }
    }
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float amax = absmax_skip_nan(src, kQK);
    BlockMXFP4 b;
    b.e = 0;
    if (amax > 0.0f) {
      const float e = std::floor(std::log2(amax)) - 2.0f + 127.0f;
      b.e = static_cast<uint8_t>(e < 0.0f ? 0.0f : e > 254.0f ? 254.0f : e);
    }
    const float d = e8m0_half_to_f32(b.e);
    for (int j = 0; j < kQK / 2; ++j) {
      b.qs[j] =
          static_cast<uint8_t>(nearest_fp4(src[j], d) | nearest_fp4(src[j + kQK / 2], d) << 4);
    }
    store_block(dst, i, b);
  }
}

void quantize_nvfp4(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKNV; ++i) {
    BlockNVFP4 b;
    for (int s = 0; s < kQKNV / kNVSub; ++s, src += kNVSub) {
      b.d[s] = f32_to_ue4m3(absmax_skip_nan(src, kNVSub) / 6.0f);
      const float d = ue4m3_half_to_f32(b.d[s]);
      uint8_t* qs = b.qs + s * (kNVSub / 2);
      for (int j = 0; j < kNVSub / 2; ++j) {
        qs[j] =
            static_cast<uint8_t>(nearest_fp4(src[j], d) | nearest_fp4(src[j + kNVSub / 2], d) << 4);
      }
    }
    store_block(dst, i, b);
  }
}

}  // namespace folio::quant::ref
