// The Vulkan int8 matrix path (shaders/mul_mat_q8.glsl) against its scalar
// model, bit for bit: activations quantized by the reference Q8_0 quantizer
// (its f16 scale widened), exact integer block dots, each block's term and
// the chunked sum in the order the shaders promise. Decode (mul_mat_vec_q8,
// up to 8 columns) and prefill (quant_act_q8 + mul_mat_q8 tiles, partial in
// both directions) for every weight format the path takes, K with a partial
// last 256-element chunk. mul_mat_id (quant_act_q8, then mul_mat_vec_id_q8
// for few pairs per expert or mul_mat_id_q8's expert-grouped tiles) against
// the same model, one token alone against the same token in a batch, and
// ids out of range.
#include <gtest/gtest.h>

#include <algorithm>
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

// Random weights of `n_exp` [k, n] matrices of type t, quantized by the
// reference quantizer.
std::vector<uint8_t> random_weights(DType t, int64_t k, int64_t n, int64_t n_exp,
                                    std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(k));
  const size_t row_bytes = row_size(t, k);
  std::vector<uint8_t> wq(row_bytes * static_cast<size_t>(n * n_exp));
  for (int64_t r = 0; r < n * n_exp; ++r) {
    for (float& v : wf) v = u(rng);
    quant::quantize_row_ref(t, wf.data(), wq.data() + r * row_bytes, k);
  }
  return wq;
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
// each expert: a full 64-pair tile and a partial one.
TEST(VulkanInt8, MulMatIdMatchesItsScalarModelAloneAndInABatch) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t k = 1120, n = 70;
  struct Shape {
    int64_t n_exp, n_used, n_tok, x1;
  };
  const Shape shapes[] = {{4, 2, 40, 1}, {2, 2, 70, 2}};
  std::mt19937 rng(32);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int checked = 0;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0}) {
    for (const Shape& sh : shapes) {
      const std::vector<uint8_t> wq = random_weights(t, k, n, sh.n_exp, rng);
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
      const Op op = mul_mat_id_op(t, *wbuf, *xbuf, *ibuf, *dbuf, k, n, sh.n_exp, sh.n_used,
                                  sh.n_tok, sh.x1);
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
  EXPECT_EQ(checked, 5 * n * (2 * 40 + 2 * 70));
}

// An id outside [0, E) in the decode variant (one token) and in the tiled
// one (40 tokens): OutOfRange at the wait, the bad pair's output zeros,
// every other pair still computed, and the device usable afterwards.
TEST(VulkanInt8, MulMatIdReportsIdsOutOfRange) {
  FOLIO_VULKAN_OR_SKIP(dev);
  constexpr int64_t k = 256, n = 70, n_exp = 4, n_used = 2;
  std::mt19937 rng(33);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::vector<uint8_t> wq = random_weights(DType::Q8_0, k, n, n_exp, rng);
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
    const Op op = mul_mat_id_op(DType::Q8_0, *wbuf, *xbuf, *ibuf, *dbuf, k, n, n_exp, n_used,
                                n_tok, 1);
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
      EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << "T=" << n_tok << " id " << bad << ": "
                                                   << s.to_string();
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

}  // namespace vulkan_int8_test
}  // namespace folio
