// K-quants: 256-element super-blocks (Q2_K .. Q6_K) and the activation
// format Q8_K. Layouts and element order in blocks.h.
//
// Dequantize: value = (super scale * sub-block scale) * q [- super min * sub min],
// each product rounded to f32 in that order, as the gguf package computes it.
//
// Quantize (Q4_K, Q5_K, Q6_K, Q8_K): the algorithms of ggml's reference
// quantizers (quantize_row_*_ref, no importance matrix), so that files we
// write are byte-identical to llama.cpp's:
//   Q4_K/Q5_K  per 32-element group, a weighted least-squares fit of
//              (scale, min) over a small grid of candidate inverse scales
//              (fit_scale_min below), then both are quantized to 6 bits
//              against the super-block maxima and the elements re-quantized
//              with the rounded scales.
//   Q6_K       per 16-element group, a symmetric scale chosen among 19
//              candidates by x^2-weighted error (fit_symmetric_scale), then
//              8-bit group scales against the largest one.
//   Q8_K       one f32 scale per super-block (max |x| maps to -127 via the
//              signed maximum), plus 16-element sums for the dot kernels.
// All rounding to integers is round-half-to-even (nearest_int), unlike the
// legacy Q8_0 (roundf).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_ref.h"
#include "quant/strict_fp.h"

namespace folio::quant::ref {

namespace {

// Groups whose largest magnitude is below this are all-zero.
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, by adding 1.5 * 2^23 and reading the low
// mantissa bits: exact for |f| < 2^22, the range the quantizers use. Outside
// it (inf/NaN input) the result is garbage but well defined, as in ggml.
inline int nearest_int(float f) {
  const float v = f + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

inline int clamp_int(int v, int lo, int hi) {
  return std::max(lo, std::min(hi, v));
}

// Asymmetric fit for one group of n elements: finds scale >= 0 and an offset
// (returned negated in *neg_min, >= 0) minimising sum w * (scale*L + min - x)^2
// with L in [0, nmax]. Starts from the min/max grid, then tries
// nstep + 1 candidate inverse scales (rmin + rdelta*is + nmax) / (max - min)
// and solves the 2x2 least-squares system for each. L receives the levels.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += w[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        cur_error += w[i] * (diff * diff);
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// Symmetric fit for one group: levels l in [-nmax, nmax-1] (stored in L as
// l + nmax) and a signed scale maximising (sum w*x*l)^2 / sum w*l^2 with
// w = x^2, over the inverse scales -(nmax + 0.1*is) / max, is = -9 .. 9
// (max = the signed element of largest magnitude).
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float fnmax = static_cast<float>(nmax);
  float iscale = -fnmax / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(fnmax + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      const float fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Shared first half of Q4_K / Q5_K: fits the 8 groups, packs the 6-bit
// (scale, min) pairs and the two f16 super-scales into d/dmin/scales, and
// leaves in L[256] the levels in [0, nmax] for the rounded scales.
void quantize_k_groups(const float* x, int nmax, float rmin, int nstep, uint16_t* d_out,
                       uint16_t* dmin_out, uint8_t* packed, uint8_t* L) {
  constexpr int kGroups = kQKK / 32;
  float scales[kGroups];
  float mins[kGroups];
  float weights[32];
  uint8_t Laux[32];
  float max_scale = 0;  // scales are >= 0: the min is subtracted
  float max_min = 0;
  for (int j = 0; j < kGroups; ++j) {
    const float* xg = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xg[l] * xg[l];
    const float av_x = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xg[l]);
    scales[j] = fit_scale_min(32, nmax, xg, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(packed, 0, 12);
  for (int j = 0; j < kGroups; ++j) {
    // Truncation to 8 bits before the clamp mirrors ggml (values are <= 63 anyway).
    const uint8_t ls =
        std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = f32_to_f16(max_scale / 63.0f);
  *dmin_out = f32_to_f16(max_min / 63.0f);

  const float d_super = f16_to_f32(*d_out);
  const float dmin_super = f16_to_f32(*dmin_out);
  for (int j = 0; j < kGroups; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, packed, &sc, &m);
    const float d = d_super * static_cast<float>(sc);
    if (d == 0.0f) continue;  // keep the levels of the fit
    const float dm = dmin_super * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- dequantize

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int e = 0; e < kQKK; ++e) {
      const uint8_t sc = b.scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const int q = (b.qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      dst[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = f16_to_f32(b.d);
    // 16 6-bit scales: low 4 bits are nibble (j % 8) of byte j % 8 (low for j < 8),
    // high 2 bits are bits 2*(j/4) of byte 8 + j % 4.
    int scales[16];
    for (int j = 0; j < 16; ++j) {
      const int lo = (b.scales[j % 8] >> (j < 8 ? 0 : 4)) & 0xF;
      const int hi = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (lo | (hi << 4)) - 32;
    }
    for (int e = 0; e < kQKK; ++e) {
      const float dl = d * static_cast<float>(scales[e / 16]);
      const int lo = (b.qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
      dst[e] = dl * static_cast<float>(lo - (high ? 0 : 4));
    }
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int g = 0; g < kQKK / 32; ++g) {
      uint8_t sc, m;
      unpack_scale_min_k4(g, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + (g / 2) * 32;
      const int shift = (g % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        dst[g * 32 + l] = d1 * static_cast<float>((q[l] >> shift) & 0xF) - m1;
      }
    }
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = f16_to_f32(b.d);
    const float dmin = f16_to_f32(b.dmin);
    for (int g = 0; g < kQKK / 32; ++g) {
      uint8_t sc, m;
      unpack_scale_min_k4(g, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + (g / 2) * 32;
      const int shift = (g % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b.qh[l] >> g) & 1) << 4);
        dst[g * 32 + l] = d1 * static_cast<float>(v) - m1;
      }
    }
  }
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = f16_to_f32(b.d);
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128;  // 128-element halves
      const int r = e % 128;
      const int lo = (b.ql[half * 64 + r % 64] >> (r < 64 ? 0 : 4)) & 0xF;
      const int hi = (b.qh[half * 32 + r % 32] >> (2 * (r / 32))) & 3;
      const float ds = d * static_cast<float>(b.scales[e / 16]);
      dst[e] = ds * static_cast<float>((lo | (hi << 4)) - 32);
    }
  }
}

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int e = 0; e < kQKK; ++e) dst[e] = b.d * static_cast<float>(b.qs[e]);
  }
}

// ------------------------------------------------------------------ quantize

void quantize_q4_k(const float* src, void* dst, int64_t n) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    BlockQ4_K b;
    quantize_k_groups(src, 15, -1.0f, 20, &b.d, &b.dmin, b.scales, L);
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        b.qs[c * 32 + l] = static_cast<uint8_t>(L[c * 64 + l] | (L[c * 64 + 32 + l] << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n) {
  uint8_t L[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    BlockQ5_K b;
    quantize_k_groups(src, 31, -0.5f, 15, &b.d, &b.dmin, b.scales, L);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int c = 0; c < kQKK / 64; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int l0 = L[c * 64 + l];
        const int l1 = L[c * 64 + 32 + l];
        b.qs[c * 32 + l] = static_cast<uint8_t>((l0 & 0xF) | ((l1 & 0xF) << 4));
        b.qh[l] |= static_cast<uint8_t>(((l0 >> 4) << (2 * c)) | ((l1 >> 4) << (2 * c + 1)));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  constexpr int kGroups = kQKK / 16;
  int8_t L[kQKK];
  float scales[kGroups];
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    BlockQ6_K b;
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int g = 0; g < kGroups; ++g) {
      scales[g] = fit_symmetric_scale(16, 32, src + 16 * g, L + 16 * g);
      const float abs_scale = std::fabs(scales[g]);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scales[g];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&b, 0, sizeof(b));
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    b.d = f32_to_f16(1.0f / iscale);
    for (int g = 0; g < kGroups; ++g) {
      b.scales[g] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[g])));
    }
    const float d_super = f16_to_f32(b.d);
    for (int g = 0; g < kGroups; ++g) {
      const float d = d_super * static_cast<float>(b.scales[g]);
      if (d == 0.0f) continue;  // keep the levels of the fit
      for (int ii = 0; ii < 16; ++ii) {
        const int l = clamp_int(nearest_int(src[16 * g + ii] / d), -32, 31);
        L[16 * g + ii] = static_cast<int8_t>(l + 32);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const int8_t* Lh = L + half * 128;
      for (int l = 0; l < 32; ++l) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        b.ql[half * 64 + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        b.ql[half * 64 + l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        b.qh[half * 32 + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                                   ((q4 >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    BlockQ8_K b;
    float max = 0;
    float amax = 0;
    for (int j = 0; j < kQKK; ++j) {
      const float ax = std::fabs(src[j]);
      if (ax > amax) {
        amax = ax;
        max = src[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b, 0, sizeof(b));  // ggml leaves bsums unwritten here; we zero them
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQKK; ++j) {
      b.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * src[j])));
    }
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[g * 16 + l];
      b.bsums[g] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
    store_block(dst, i, b);
  }
}

}  // namespace folio::quant::ref
