// The Vulkan int8 matrix path (shaders/mul_mat_q8.glsl) against its scalar
// model, bit for bit: activations quantized by the reference Q8_0 quantizer
// (its f16 scale widened), exact integer block dots (the K-quant, IQ4 and
// FP4 sub-scales applied as integers per 16-element half), each block's
// term and the chunked sum in the order the shaders promise (NVFP4: each
// 16-element half's dot times its own UE4M3 scale in float); and against
// the float product of the reference dequantizer's weights (NMSE). Decode
// (mul_mat_vec_q8, up to 8 columns) and prefill (quant_act_q8 + mul_mat_q8
// tiles, partial in both directions) for every weight format the path
// takes, K with a partial last 256-element chunk where the blocks allow.
// The model decodes each format element by element from quant/blocks.h's
// layout comments, independently of the shaders' word-wise unpacking.
// mul_mat_id (quant_act_q8, then mul_mat_vec_id_q8 for few pairs per
// expert or mul_mat_id_q8's expert-grouped tiles) against the same model,
// one token alone against the same token in a batch, and ids out of range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/buffer_type.h"
#include "backend/op.h"
#include "backend/vulkan/kernels.h"
#include "backend/vulkan/shaders/mat_interface.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"
#include "tensor/dtype.h"
#include "vulkan_test_device.h"

namespace folio {
namespace vulkan_int8_test {

constexpr int64_t kChunk = vulkan::kMatSumChunk;  // the shaders' summation chunk

// One 32-element weight block as the path reads it: codes, scale, minimum,
// offset; for the sub-scaled formats (`scaled`: the K-quants, IQ4_NL,
// IQ4_XS, MXFP4) the integer sub-scales s and min multipliers mi of
// elements 0-15 and 16-31; for NVFP4 (`half_scales`) the float scales hd
// of the two halves.
struct WeightBlock {
  int c[32];
  float d = 0, m = 0;
  int off = 0;
  bool has_min = false;
  bool scaled = false;
  int s[2] = {1, 1}, mi[2] = {0, 0};
  bool half_scales = false;
  float hd[2] = {0, 0};
};

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Block b (32 elements; K-quants and IQ4_XS: group b % 8 of super-block
// b / 8) of a row of a sub-scaled format.
WeightBlock scaled_weight_block(DType t, const uint8_t* row, int64_t b) {
  WeightBlock w;
  w.scaled = true;
  const int64_t sb = b / 8;
  const int g = static_cast<int>(b % 8);
  // Element l of the block: e = 32g + l of its super-block.
  switch (t) {
    case DType::Q2_K: {
      quant::BlockQ2_K x;
      std::memcpy(&x, row + sb * sizeof x, sizeof x);
      w.d = f16_to_f32(x.d);
      w.m = f16_to_f32(x.dmin);
      w.has_min = true;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * g + l;
        w.c[l] = (x.qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      }
      for (int h = 0; h < 2; ++h) {
        w.s[h] = x.scales[2 * g + h] & 15;
        w.mi[h] = x.scales[2 * g + h] >> 4;
      }
      break;
    }
    case DType::Q3_K: {
      quant::BlockQ3_K x;
      std::memcpy(&x, row + sb * sizeof x, sizeof x);
      w.d = f16_to_f32(x.d);
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * g + l;
        const int lo = (x.qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        const bool high = (x.hmask[e % 32] >> (e / 32)) & 1;
        w.c[l] = lo - (high ? 0 : 4);
      }
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * g + h;
        const int lo = (x.scales[j % 8] >> (j < 8 ? 0 : 4)) & 0xF;
        const int hi = (x.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        w.s[h] = (lo | (hi << 4)) - 32;
      }
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const bool q5 = t == DType::Q5_K;
      quant::BlockQ4_K x4;
      quant::BlockQ5_K x5;
      const uint8_t *scales, *qs;
      uint16_t d, dmin;
      if (q5) {
        std::memcpy(&x5, row + sb * sizeof x5, sizeof x5);
        scales = x5.scales, qs = x5.qs, d = x5.d, dmin = x5.dmin;
      } else {
        std::memcpy(&x4, row + sb * sizeof x4, sizeof x4);
        scales = x4.scales, qs = x4.qs, d = x4.d, dmin = x4.dmin;
      }
      w.d = f16_to_f32(d);
      w.m = f16_to_f32(dmin);
      w.has_min = true;
      uint8_t sc, m;
      quant::unpack_scale_min_k4(g, scales, &sc, &m);
      w.s[0] = w.s[1] = sc;
      w.mi[0] = w.mi[1] = m;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * g + l;
        w.c[l] = (qs[(e / 64) * 32 + e % 32] >> ((e % 64) >= 32 ? 4 : 0)) & 15;
        if (q5) w.c[l] |= ((x5.qh[e % 32] >> (e / 32)) & 1) << 4;
      }
      break;
    }
    case DType::Q6_K: {
      quant::BlockQ6_K x;
      std::memcpy(&x, row + sb * sizeof x, sizeof x);
      w.d = f16_to_f32(x.d);
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * g + l;
        const int lo = (x.ql[(e / 128) * 64 + e % 64] >> ((e % 128) >= 64 ? 4 : 0)) & 15;
        const int hi = (x.qh[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        w.c[l] = (lo | (hi << 4)) - 32;
      }
      w.s[0] = x.scales[2 * g];
      w.s[1] = x.scales[2 * g + 1];
      break;
    }
    case DType::IQ4_NL:
    case DType::MXFP4: {
      const bool nl = t == DType::IQ4_NL;
      const uint8_t* bb = row + b * (nl ? 18 : 17);
      w.d = nl ? f16_to_f32(u16_at(bb)) : quant::e8m0_half_to_f32(bb[0]);
      const uint8_t* qs = bb + (nl ? 2 : 1);
      for (int l = 0; l < 32; ++l) {
        const int q = l < 16 ? (qs[l] & 15) : (qs[l - 16] >> 4);
        w.c[l] = nl ? quant::kIQ4NLValues[q] : quant::kFP4Values[q];
      }
      break;
    }
    case DType::NVFP4: {
      // Block b is half b % 2 of 64-element block b / 2: sub-blocks 2h, 2h + 1.
      quant::BlockNVFP4 x;
      std::memcpy(&x, row + (b / 2) * sizeof x, sizeof x);
      w.scaled = false;
      w.half_scales = true;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * static_cast<int>(b % 2) + l, s = e / 16, j = e % 16;
        const int q = j < 8 ? (x.qs[8 * s + j] & 15) : (x.qs[8 * s + j - 8] >> 4);
        w.c[l] = quant::kFP4Values[q];
      }
      for (int h = 0; h < 2; ++h) {
        w.hd[h] = quant::ue4m3_half_to_f32(x.d[2 * static_cast<int>(b % 2) + h]);
      }
      break;
    }
    case DType::IQ4_XS: {
      quant::BlockIQ4_XS x;
      std::memcpy(&x, row + sb * sizeof x, sizeof x);
      w.d = f16_to_f32(x.d);
      const int ls =
          ((x.scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((x.scales_h >> (2 * g)) & 3) << 4);
      w.s[0] = w.s[1] = ls - 32;
      for (int l = 0; l < 32; ++l) {
        const uint8_t q = x.qs[16 * g + l % 16];
        w.c[l] = quant::kIQ4NLValues[l < 16 ? (q & 15) : (q >> 4)];
      }
      break;
    }
    default:
      ADD_FAILURE() << "no int8 model for " << dtype_name(t);
  }
  return w;
}

WeightBlock weight_block(DType t, const uint8_t* row, int64_t b) {
  WeightBlock w;
  if (t != DType::Q4_0 && t != DType::Q4_1 && t != DType::Q5_0 && t != DType::Q5_1 &&
      t != DType::Q8_0) {
    return scaled_weight_block(t, row, b);
  }
  if (t == DType::Q8_0) {
    const uint8_t* bb = row + b * 34;
    w.d = f16_to_f32(u16_at(bb));
    for (int e = 0; e < 32; ++e) w.c[e] = static_cast<int8_t>(bb[2 + e]);
    return w;
  }
  const uint8_t* qs = nullptr;
  uint32_t qh = 0;
  const int size = t == DType::Q4_0 ? 18 : t == DType::Q4_1 ? 20 : t == DType::Q5_0 ? 22 : 24;
  const uint8_t* bb = row + b * size;
  w.d = f16_to_f32(u16_at(bb));
  w.has_min = t == DType::Q4_1 || t == DType::Q5_1;
  if (w.has_min) w.m = f16_to_f32(u16_at(bb + 2));
  const int head = 2 + (w.has_min ? 2 : 0);
  if (t == DType::Q5_0 || t == DType::Q5_1) {
    std::memcpy(&qh, bb + head, 4);
    qs = bb + head + 4;
  } else {
    qs = bb + head;
  }
  w.off = t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : 0;
  for (int e = 0; e < 32; ++e) {
    const int nib = e < 16 ? (qs[e] & 15) : (qs[e - 16] >> 4);
    w.c[e] = nib | static_cast<int>(((qh >> e) & 1u) << 4);
  }
  return w;
}

// Each rounding step on its own (volatile: no fused multiply-add anywhere).
float mul(float a, float b) {
  volatile float p = a * b;
  return p;
}
float add(float a, float b) {
  volatile float s = a + b;
  return s;
}
float sub(float a, float b) {
  volatile float s = a - b;
  return s;
}

// Output (n, m) of the int8 path, as mul_mat_q8.glsl defines it.
float model_output(DType t, const uint8_t* wrow, const float* x, int64_t k) {
  float total = 0.0f, partial = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b) {
    quant::BlockQ8_0 xb;
    quant::ref::quantize_q8_0(x + 32 * b, &xb, 32);
    const float dx = f16_to_f32(xb.d);
    const WeightBlock w = weight_block(t, wrow, b);
    int dot = 0, xs = 0, dh[2] = {0, 0}, xh[2] = {0, 0};
    for (int e = 0; e < 32; ++e) {
      dot += w.c[e] * xb.qs[e];
      xs += xb.qs[e];
      dh[e / 16] += w.c[e] * xb.qs[e];
      xh[e / 16] += xb.qs[e];
    }
    float term;
    if (w.half_scales) {
      term = mul(static_cast<float>(dh[0]), mul(w.hd[0], dx));
      term = add(term, mul(static_cast<float>(dh[1]), mul(w.hd[1], dx)));
    } else if (w.scaled) {
      term = mul(static_cast<float>(w.s[0] * dh[0] + w.s[1] * dh[1]), mul(w.d, dx));
      if (w.has_min) {
        const int msum = w.mi[0] * xh[0] + w.mi[1] * xh[1];
        term = sub(term, mul(w.m, mul(dx, static_cast<float>(msum))));
      }
    } else {
      term = mul(static_cast<float>(dot - w.off * xs), mul(w.d, dx));
      if (w.has_min) term = add(term, mul(w.m, mul(dx, static_cast<float>(xs))));
    }
    partial = add(partial, term);
    if ((32 * (b + 1)) % kChunk == 0 || 32 * (b + 1) == k) {
      total = add(total, partial);
      partial = 0.0f;
    }
  }
  return total;
}

std::unique_ptr<Buffer> upload(Backend& dev, const void* src, size_t bytes) {
  Result<std::unique_ptr<Buffer>> b = dev.default_buffer_type().alloc(bytes);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  if (!b.ok()) return nullptr;
  if (src != nullptr) {
    EXPECT_TRUE((*b)->write(0, src, bytes).ok());
  }
  return std::move(b).value();
}

// n rows of weights of type t, K = k: through the reference quantizer where
// t has one, else random bytes with each block's f16 scales replaced by
// small finite values (Q2_K, Q3_K, IQ4_NL, IQ4_XS are dequantize-only).
std::vector<uint8_t> make_weights(DType t, int64_t k, int64_t n, std::mt19937& rng) {
  const size_t row_bytes = row_size(t, k);
  std::vector<uint8_t> wq(row_bytes * n);
  if (quant::has_quantize(t)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> wf(static_cast<size_t>(k * n));
    for (float& v : wf) v = u(rng);
    for (int64_t r = 0; r < n; ++r) {
      quant::quantize_row_ref(t, wf.data() + r * k, wq.data() + r * row_bytes, k);
    }
    if (t == DType::NVFP4) {
      // The UE4M3 scales' edges in row 1's first blocks (halves of unequal
      // exponents): zero, the NaN code 0x7F (decodes as 0), 0xFF (240: bit 7
      // ignored), subnormals, the largest normal below 0x7F.
      const uint8_t edges[8] = {0x00, 0x7F, 0xFF, 0x01, 0x80, 0x07, 0x7E, 0x08};
      for (int i = 0; i < 8; ++i) {
        wq[row_bytes + (i / 4) * sizeof(quant::BlockNVFP4) + i % 4] = edges[i];
      }
    }
    return wq;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.002f, 0.03f);
  for (uint8_t& b : wq) b = static_cast<uint8_t>(byte(rng));
  auto put = [&](uint8_t* blk, size_t off, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(blk + off, &h, 2);
  };
  const size_t bs = type_size(t);
  for (size_t b = 0; b < wq.size() / bs; ++b) {
    uint8_t* blk = wq.data() + b * bs;
    switch (t) {
      case DType::Q2_K:
        put(blk, offsetof(quant::BlockQ2_K, d), scale(rng));
        put(blk, offsetof(quant::BlockQ2_K, dmin), scale(rng));
        break;
      case DType::Q3_K:
        put(blk, offsetof(quant::BlockQ3_K, d), scale(rng));
        break;
      case DType::IQ4_NL:
        put(blk, offsetof(quant::BlockIQ4_NL, d), scale(rng));
        break;
      case DType::IQ4_XS:
        put(blk, offsetof(quant::BlockIQ4_XS, d), 0.1f * scale(rng));
        break;
      default:
        ADD_FAILURE() << "no random fill for " << dtype_name(t);
    }
  }
  return wq;
}

// Runs W^T X on the device for n rows of type t (K = k) and M = 3 (the
// decode matvec) and 70 (tiles, a partial one) columns, checks every output
// bit for bit against model_output and the whole product against the
// double-precision product of the dequantized weights (NMSE below
// kMaxNmse: the activations' 8-bit rounding). Returns the outputs checked,
// 0 after a failure or a skip.
constexpr double kMaxNmse = 5e-4;  // the parity harness's bound for quantized weights

int check_type(Backend& dev, DType t, int64_t k, int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t row_bytes = row_size(t, k);
  const std::vector<uint8_t> wq = make_weights(t, k, n, rng);
  std::vector<float> wf(static_cast<size_t>(k * n));
  quant::dequantize_row_ref(t, wq.data(), wf.data(), k * n);
  auto wbuf = upload(dev, wq.data(), wq.size());
  if (wbuf == nullptr) return 0;
  int checked = 0;
  // The decode matvec (up to 8 columns) and the tiles (a partial one):
  // each (shader, format, column count) is a pipeline for the driver to
  // compile, so two counts.
  for (int64_t m : {3, 70}) {
    std::vector<float> x(static_cast<size_t>(k * m));
    for (float& v : x) v = u(rng);
    x[5] = 0.0f;  // a block with a zero and one of all zeros
    for (int e = 64; e < 96; ++e) x[static_cast<size_t>(e)] = 0.0f;
    auto xbuf = upload(dev, x.data(), x.size() * 4);
    auto dbuf = upload(dev, nullptr, static_cast<size_t>(n * m) * 4);
    if (xbuf == nullptr || dbuf == nullptr) return 0;
    Op op;
    op.kind = OpKind::kMulMat;
    op.src[0] = TensorView::contiguous(wbuf->data(), t, {k, n});
    op.src[1] = TensorView::contiguous(xbuf->data(), DType::F32, {k, m});
    op.dst = TensorView::contiguous(dbuf->data(), DType::F32, {n, m});
    if (dev.kernel_name(op) != "vulkan.mul_mat_q8") {
      ADD_FAILURE() << dtype_name(t) << " selects " << dev.kernel_name(op);
      return 0;
    }
    EXPECT_TRUE(dev.run(op).ok());
    EXPECT_TRUE(dev.synchronize().ok());
    std::vector<float> got(static_cast<size_t>(n * m));
    EXPECT_TRUE(dbuf->read(0, got.data(), got.size() * 4).ok());
    double err = 0, ref = 0;
    for (int64_t c = 0; c < m; ++c) {
      for (int64_t r = 0; r < n; ++r) {
        const float want = model_output(t, wq.data() + r * row_bytes, x.data() + c * k, k);
        const float g = got[static_cast<size_t>(c * n + r)];
        if (std::memcmp(&g, &want, 4) != 0) {
          ADD_FAILURE() << dtype_name(t) << " M=" << m << " row " << r << " column " << c << ": "
                        << g << " vs " << want;
          return 0;
        }
        double exact = 0;
        for (int64_t e = 0; e < k; ++e) {
          exact += static_cast<double>(wf[static_cast<size_t>(r * k + e)]) *
                   x[static_cast<size_t>(c * k + e)];
        }
        err += (g - exact) * (g - exact);
        ref += exact * exact;
        ++checked;
      }
    }
    EXPECT_LT(err / ref, kMaxNmse) << dtype_name(t) << " M=" << m;
  }
  return checked;
}

// Skips unless the device takes the int8 path (integer dot products).
#define FOLIO_INT8_DEVICE_OR_SKIP(dev)                                                           \
  FOLIO_VULKAN_OR_SKIP(dev);                                                                     \
  if (!int8_device(*dev)) {                                                                      \
    GTEST_SKIP() << "hardware: the device has no integer dot products (or FOLIO_VULKAN_INT8=0)"; \
  }

bool int8_device(Backend& dev) {
  uint8_t w[34] = {};  // one Q8_0 block
  float x[32] = {}, d[1];
  Op op;
  op.kind = OpKind::kMulMat;
  op.src[0] = TensorView::contiguous(w, DType::Q8_0, {32, 1});
  op.src[1] = TensorView::contiguous(x, DType::F32, {32, 1});
  op.dst = TensorView::contiguous(d, DType::F32, {1, 1});
  return dev.kernel_name(op) == "vulkan.mul_mat_q8";
}

TEST(VulkanInt8, MatchesItsScalarModelBitForBit) {
  FOLIO_INT8_DEVICE_OR_SKIP(dev);
  constexpr int64_t k = 1120, n = 70;  // four whole chunks and 96 more; a partial row tile
  std::mt19937 rng(31);
  int checked = 0;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    checked += check_type(*dev, t, k, n, rng);
  }
  EXPECT_EQ(checked, 5 * 70 * (3 + 70));
}

// Activation blocks of every magnitude the product can see, each block in
// its own output (K = 32, so no other block's term absorbs it): largest
// magnitudes from 2^-30 (an f16 scale of 0) to 2^24 (past f16's range: an
// infinite scale), random mantissas, and blocks with zeros, f32 denormals,
// a NaN (ignored by the maximum, code 0) or an infinity. The decode matvec
// (8 columns a dispatch) and the tiles (all columns at once) against the
// model bit for bit; NaN matches NaN whatever its sign and payload.
TEST(VulkanInt8, QuantizesActivationsOfEveryMagnitudeAsTheReference) {
  FOLIO_INT8_DEVICE_OR_SKIP(dev);
  constexpr int64_t k = 32, n = 4, m = 8 * 50;
  std::mt19937 rng(7);
  std::vector<uint8_t> wq = make_weights(DType::Q8_0, k, n, rng);
  std::vector<float> x(static_cast<size_t>(k * m));
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int64_t c = 0; c < m; ++c) {
    float* blk = x.data() + c * k;
    const int e = -30 + static_cast<int>(c % 55);  // the block's top exponent
    for (int64_t j = 0; j < k; ++j) {
      // Below the top: down to 30 binades less, so some codes round to 0.
      const int ej = e - static_cast<int>(rng() % 31);
      const float v = std::ldexp(mant(rng), ej);
      blk[j] = sign(rng) != 0 ? -v : v;
    }
    switch (c % 7) {
      case 1:
        blk[3] = 0.0f;
        blk[4] = -0.0f;
        break;
      case 2:  // f32 denormals beside the block's maximum
        for (int64_t j = 8; j < 16; ++j) blk[j] = std::ldexp(mant(rng), -130 - static_cast<int>(j));
        break;
      case 3:
        blk[5] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 4:
        blk[6] = (c / 7) % 2 != 0 ? std::numeric_limits<float>::infinity()
                                  : -std::numeric_limits<float>::infinity();
        break;
      case 5:  // a block of denormals only
        for (int64_t j = 0; j < k; ++j)
          blk[j] = std::ldexp(mant(rng), -127 - static_cast<int>(j % 20));
        break;
      default:
        break;
    }
  }
  auto wbuf = upload(*dev, wq.data(), wq.size());
  auto xbuf = upload(*dev, x.data(), x.size() * 4);
  auto dbuf = upload(*dev, nullptr, static_cast<size_t>(n * m) * 4);
  ASSERT_TRUE(wbuf && xbuf && dbuf);
  auto same = [](float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
  };
  int checked = 0;
  for (int64_t cols : {int64_t{8}, m}) {  // the matvec, then the tiles
    for (int64_t c0 = 0; c0 < m; c0 += cols) {
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = TensorView::contiguous(wbuf->data(), DType::Q8_0, {k, n});
      op.src[1] = TensorView::contiguous(static_cast<char*>(xbuf->data()) + c0 * k * 4, DType::F32,
                                         {k, cols});
      op.dst = TensorView::contiguous(static_cast<char*>(dbuf->data()) + c0 * n * 4, DType::F32,
                                      {n, cols});
      ASSERT_EQ(dev->kernel_name(op), "vulkan.mul_mat_q8");
      ASSERT_TRUE(dev->run(op).ok());
    }
    ASSERT_TRUE(dev->synchronize().ok());
    std::vector<float> got(static_cast<size_t>(n * m));
    ASSERT_TRUE(dbuf->read(0, got.data(), got.size() * 4).ok());
    for (int64_t c = 0; c < m; ++c) {
      for (int64_t r = 0; r < n; ++r) {
        const float want = model_output(DType::Q8_0, wq.data() + r * 34, x.data() + c * k, k);
        const float g = got[static_cast<size_t>(c * n + r)];
        ASSERT_TRUE(same(g, want)) << (cols == 8 ? "matvec" : "tiles") << " column " << c << " row "
                                   << r << ": " << g << " vs " << want;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * n * m);
}

// n_used distinct experts of n_exp for each of n_tok tokens.
std::vector<int32_t> random_ids(int64_t n_exp, int64_t n_used, int64_t n_tok, std::mt19937& rng) {
  std::vector<int32_t> ids;
  std::vector<int32_t> all(static_cast<size_t>(n_exp));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int32_t e = 0; e < n_exp; ++e) all[static_cast<size_t>(e)] = e;
    std::shuffle(all.begin(), all.end(), rng);
    ids.insert(ids.end(), all.begin(), all.begin() + n_used);
  }
  return ids;
}

// A kMulMatId op over device buffers: w [k, n, n_exp], x [k, x1, n_tok],
// ids [n_used, n_tok], dst [n, n_used, n_tok].
Op mul_mat_id_op(DType t, Buffer& w, Buffer& x, Buffer& ids, Buffer& d, int64_t k, int64_t n,
                 int64_t n_exp, int64_t n_used, int64_t n_tok, int64_t x1) {
  Op op;
  op.kind = OpKind::kMulMatId;
  op.src[0] = TensorView::contiguous(w.data(), t, {k, n, n_exp});
  op.src[1] = TensorView::contiguous(x.data(), DType::F32, {k, x1, n_tok});
  op.src[2] = TensorView::contiguous(ids.data(), DType::I32, {n_used, n_tok});
  op.dst = TensorView::contiguous(d.data(), DType::F32, {n, n_used, n_tok});
  return op;
}

// Each (E, n_used, T, X1): T tokens in one op (the tiled variant: T *
// n_used pairs >= 4 per expert), every output against the model bit for
// bit, then token 7 alone (the decode variant: n_used pairs) against its
// column of the batch, bit for bit. E = 2 with 70 tokens puts 70 pairs on
// each expert: a full 64-pair tile and a partial one. Every format the
// path takes (K = 1280 for the 256-element super-blocks, else 1120).
TEST(VulkanInt8, MulMatIdMatchesItsScalarModelAloneAndInABatch) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t n = 70;
  const DType types[] = {DType::Q4_0,   DType::Q4_1,   DType::Q5_0,  DType::Q5_1, DType::Q8_0,
                         DType::Q2_K,   DType::Q3_K,   DType::Q4_K,  DType::Q5_K, DType::Q6_K,
                         DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::NVFP4};
  struct Shape {
    int64_t n_exp, n_used, n_tok, x1;
  };
  const Shape shapes[] = {{4, 2, 40, 1}, {2, 2, 70, 2}};
  std::mt19937 rng(32);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int checked = 0;
  for (DType t : types) {
    const int64_t k = block_size(t) == 32 ? 1120 : 1280;
    for (const Shape& sh : shapes) {
      const std::vector<uint8_t> wq = make_weights(t, k, n * sh.n_exp, rng);
      std::vector<float> x(static_cast<size_t>(k * sh.x1 * sh.n_tok));
      for (float& v : x) v = u(rng);
      for (int e = 64; e < 96; ++e) x[static_cast<size_t>(e)] = 0.0f;  // an all-zero block
      const std::vector<int32_t> ids = random_ids(sh.n_exp, sh.n_used, sh.n_tok, rng);
      const size_t d_elems = static_cast<size_t>(n * sh.n_used * sh.n_tok);
      auto wbuf = upload(*dev, wq.data(), wq.size());
      auto xbuf = upload(*dev, x.data(), x.size() * 4);
      auto ibuf = upload(*dev, ids.data(), ids.size() * 4);
      auto dbuf = upload(*dev, nullptr, d_elems * 4);
      ASSERT_TRUE(wbuf && xbuf && ibuf && dbuf);
      const Op op =
          mul_mat_id_op(t, *wbuf, *xbuf, *ibuf, *dbuf, k, n, sh.n_exp, sh.n_used, sh.n_tok, sh.x1);
      if (dev->kernel_name(op) != "vulkan.mul_mat_id_q8") {
        GTEST_SKIP() << "hardware: the device has no integer dot products (it selects "
                     << dev->kernel_name(op) << ")";
      }
      ASSERT_TRUE(dev->run(op).ok());
      ASSERT_TRUE(dev->synchronize().ok());
      std::vector<float> got(d_elems);
      ASSERT_TRUE(dbuf->read(0, got.data(), got.size() * 4).ok());
      const size_t row_bytes = row_size(t, k);
      for (int64_t tok = 0; tok < sh.n_tok; ++tok) {
        for (int64_t s = 0; s < sh.n_used; ++s) {
          const int32_t e = ids[static_cast<size_t>(tok * sh.n_used + s)];
          const float* xc = x.data() + (tok * sh.x1 + s % sh.x1) * k;
          for (int64_t r = 0; r < n; ++r) {
            const float want = model_output(t, wq.data() + (e * n + r) * row_bytes, xc, k);
            const float g = got[static_cast<size_t>((tok * sh.n_used + s) * n + r)];
            ASSERT_EQ(std::memcmp(&g, &want, 4), 0)
                << dtype_name(t) << " E=" << sh.n_exp << " T=" << sh.n_tok << " token " << tok
                << " slot " << s << " row " << r << ": " << g << " vs " << want;
            ++checked;
          }
        }
      }
      // Token 7 alone: its views of x, ids and a fresh dst.
      constexpr int64_t kTok = 7;
      auto d1 = upload(*dev, nullptr, static_cast<size_t>(n * sh.n_used) * 4);
      ASSERT_NE(d1, nullptr);
      Op one = op;
      one.src[1].data = static_cast<char*>(xbuf->data()) + kTok * op.src[1].nb[2];
      one.src[1].ne[2] = 1;
      one.src[2].data = static_cast<char*>(ibuf->data()) + kTok * op.src[2].nb[1];
      one.src[2].ne[1] = 1;
      one.dst = TensorView::contiguous(d1->data(), DType::F32, {n, sh.n_used, 1});
      ASSERT_TRUE(dev->run(one).ok());
      ASSERT_TRUE(dev->synchronize().ok());
      std::vector<float> alone(static_cast<size_t>(n * sh.n_used));
      ASSERT_TRUE(d1->read(0, alone.data(), alone.size() * 4).ok());
      EXPECT_EQ(std::memcmp(alone.data(), got.data() + kTok * sh.n_used * n, alone.size() * 4), 0)
          << dtype_name(t) << " E=" << sh.n_exp << ": token " << kTok
          << " alone differs from its column of the batch";
    }
  }
  EXPECT_EQ(checked, 14 * n * (2 * 40 + 2 * 70));
}

// An id outside [0, E) in the decode variant (one token) and in the tiled
// one (40 tokens): OutOfRange at the wait, the bad pair's output zeros,
// every other pair still computed, and the device usable afterwards.
TEST(VulkanInt8, MulMatIdReportsIdsOutOfRange) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t k = 256, n = 70, n_exp = 4, n_used = 2;
  std::mt19937 rng(33);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::vector<uint8_t> wq = make_weights(DType::Q8_0, k, n * n_exp, rng);
  auto wbuf = upload(*dev, wq.data(), wq.size());
  ASSERT_NE(wbuf, nullptr);
  for (int64_t n_tok : {1, 40}) {
    std::vector<float> x(static_cast<size_t>(k * n_tok));
    for (float& v : x) v = u(rng);
    std::vector<int32_t> ids = random_ids(n_exp, n_used, n_tok, rng);
    auto xbuf = upload(*dev, x.data(), x.size() * 4);
    auto ibuf = upload(*dev, nullptr, ids.size() * 4);
    auto dbuf = upload(*dev, nullptr, static_cast<size_t>(n * n_used * n_tok) * 4);
    ASSERT_TRUE(xbuf && ibuf && dbuf);
    const Op op =
        mul_mat_id_op(DType::Q8_0, *wbuf, *xbuf, *ibuf, *dbuf, k, n, n_exp, n_used, n_tok, 1);
    if (dev->kernel_name(op) != "vulkan.mul_mat_id_q8") {
      GTEST_SKIP() << "hardware: the device has no integer dot products (it selects "
                   << dev->kernel_name(op) << ")";
    }
    for (int32_t bad : {int32_t{n_exp}, int32_t{-1}}) {
      std::vector<int32_t> bad_ids = ids;
      const size_t at = static_cast<size_t>(n_tok == 1 ? 1 : 2 * 17);  // slot 1 / token 17 slot 0
      bad_ids[at] = bad;
      ASSERT_TRUE(ibuf->write(0, bad_ids.data(), bad_ids.size() * 4).ok());
      const std::vector<float> ones(static_cast<size_t>(n * n_used * n_tok), 1.0f);
      ASSERT_TRUE(dbuf->write(0, ones.data(), ones.size() * 4).ok());
      ASSERT_TRUE(dev->run(op).ok());
      const Status s = dev->synchronize();
      EXPECT_EQ(s.code(), StatusCode::kOutOfRange)
          << "T=" << n_tok << " id " << bad << ": " << s.to_string();
      std::vector<float> got(ones.size());
      ASSERT_TRUE(dbuf->read(0, got.data(), got.size() * 4).ok());
      for (size_t pair = 0; pair < bad_ids.size(); ++pair) {
        for (int64_t r = 0; r < n; ++r) {
          const float g = got[pair * n + static_cast<size_t>(r)];
          if (pair == at) {
            ASSERT_EQ(g, 0.0f) << "T=" << n_tok << " bad pair row " << r;
          } else {
            ASSERT_NE(g, 1.0f) << "T=" << n_tok << " pair " << pair << " row " << r;
          }
        }
      }
    }
    ASSERT_TRUE(ibuf->write(0, ids.data(), ids.size() * 4).ok());
    ASSERT_TRUE(dev->run(op).ok());
    EXPECT_TRUE(dev->synchronize().ok());
  }
}

// The sub-scaled formats: the K-quants and IQ4_XS (256-element super-blocks:
// K = 1280, five whole chunks), IQ4_NL and MXFP4 (K = 1120 as above), and
// NVFP4 (64-element blocks with a scale per 16 elements: K = 1280).
TEST(VulkanInt8, SubScaledFormatsMatchTheirScalarModelBitForBit) {
  FOLIO_INT8_DEVICE_OR_SKIP(dev);
  constexpr int64_t n = 70;
  std::mt19937 rng(32);
  int checked = 0;
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL,
                  DType::IQ4_XS, DType::MXFP4, DType::NVFP4}) {
    checked += check_type(*dev, t, block_size(t) == 32 ? 1120 : 1280, n, rng);
  }
  EXPECT_EQ(checked, 9 * 70 * (3 + 70));
}

}  // namespace vulkan_int8_test
}  // namespace folio
