// The Vulkan int8 matrix path (shaders/mul_mat_q8.glsl) against its scalar
// model, bit for bit: activations quantized by the reference Q8_0 quantizer
// (its f16 scale widened), exact integer block dots, each block's term and
// the chunked sum in the order the shaders promise. Decode (mul_mat_vec_q8,
// up to 8 columns) and prefill (quant_act_q8 + mul_mat_q8 tiles, partial in
// both directions) for every weight format the path takes, K with a partial
// last 256-element chunk.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/buffer_type.h"
#include "backend/op.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/quant_ref.h"
#include "tensor/dtype.h"
#include "vulkan_test_device.h"

namespace folio {
namespace vulkan_int8_test {

constexpr int64_t kChunk = 256;  // mat_interface.h's kMatSumChunk

// One weight block as the path reads it: codes, scale, minimum, offset.
struct WeightBlock {
  int c[32];
  float d = 0, m = 0;
  int off = 0;
  bool has_min = false;
};

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

WeightBlock weight_block(DType t, const uint8_t* row, int64_t b) {
  WeightBlock w;
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

// Output (n, m) of the int8 path, as mul_mat_q8.glsl defines it.
float model_output(DType t, const uint8_t* wrow, const float* x, int64_t k) {
  float total = 0.0f, partial = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b) {
    quant::BlockQ8_0 xb;
    quant::ref::quantize_q8_0(x + 32 * b, &xb, 32);
    const float dx = f16_to_f32(xb.d);
    const WeightBlock w = weight_block(t, wrow, b);
    int dot = 0, xs = 0;
    for (int e = 0; e < 32; ++e) {
      dot += w.c[e] * xb.qs[e];
      xs += xb.qs[e];
    }
    float term = mul(static_cast<float>(dot - w.off * xs), mul(w.d, dx));
    if (w.has_min) term = add(term, mul(w.m, mul(dx, static_cast<float>(xs))));
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

TEST(VulkanInt8, MatchesItsScalarModelBitForBit) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t k = 1120, n = 70;  // four whole chunks and 96 more; a partial row tile
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int checked = 0;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    std::vector<float> wf(static_cast<size_t>(k * n));
    for (float& v : wf) v = u(rng);
    const size_t row_bytes = row_size(t, k);
    std::vector<uint8_t> wq(row_bytes * n);
    for (int64_t r = 0; r < n; ++r) {
      quant::quantize_row_ref(t, wf.data() + r * k, wq.data() + r * row_bytes, k);
    }
    auto wbuf = upload(*dev, wq.data(), wq.size());
    ASSERT_NE(wbuf, nullptr);
    // The decode matvec (up to 8 columns) and the tiles (a partial one):
    // each (shader, format, column count) is a pipeline for the driver to
    // compile, so two counts.
    for (int64_t m : {3, 70}) {
      std::vector<float> x(static_cast<size_t>(k * m));
      for (float& v : x) v = u(rng);
      x[5] = 0.0f;  // a block with a zero and one of all zeros
      for (int e = 64; e < 96; ++e) x[static_cast<size_t>(e)] = 0.0f;
      auto xbuf = upload(*dev, x.data(), x.size() * 4);
      auto dbuf = upload(*dev, nullptr, static_cast<size_t>(n * m) * 4);
      ASSERT_NE(xbuf, nullptr);
      ASSERT_NE(dbuf, nullptr);
      Op op;
      op.kind = OpKind::kMulMat;
      op.src[0] = TensorView::contiguous(wbuf->data(), t, {k, n});
      op.src[1] = TensorView::contiguous(xbuf->data(), DType::F32, {k, m});
      op.dst = TensorView::contiguous(dbuf->data(), DType::F32, {n, m});
      if (dev->kernel_name(op) != "vulkan.mul_mat_q8") {
        GTEST_SKIP() << "hardware: the device has no integer dot products (it selects "
                     << dev->kernel_name(op) << ")";
      }
      ASSERT_TRUE(dev->run(op).ok());
      ASSERT_TRUE(dev->synchronize().ok());
      std::vector<float> got(static_cast<size_t>(n * m));
      ASSERT_TRUE(dbuf->read(0, got.data(), got.size() * 4).ok());
      for (int64_t c = 0; c < m; ++c) {
        for (int64_t r = 0; r < n; ++r) {
          const float want = model_output(t, wq.data() + r * row_bytes, x.data() + c * k, k);
          const float g = got[static_cast<size_t>(c * n + r)];
          ASSERT_EQ(std::memcmp(&g, &want, 4), 0)
              << dtype_name(t) << " M=" << m << " row " << r << " column " << c << ": " << g
              << " vs " << want;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 70 * (3 + 70));
}

}  // namespace vulkan_int8_test
}  // namespace folio
