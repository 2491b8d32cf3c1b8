#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include "tensor/tensor_view.h"

namespace folio {
namespace dtype_test {

TEST(DType, TraitsOfRealFormats) {
  EXPECT_EQ(block_size(DType::Q4_0), 32);
  EXPECT_EQ(type_size(DType::Q4_0), 18u);
  EXPECT_EQ(type_size(DType::Q8_0), 34u);
  EXPECT_EQ(type_size(DType::Q4_K), 144u);
  EXPECT_EQ(type_size(DType::Q6_K), 210u);
  EXPECT_EQ(type_size(DType::Q8_K), 292u);
  EXPECT_EQ(type_size(DType::IQ4_XS), 136u);
  EXPECT_EQ(row_size(DType::Q4_K, 4096), 16u * 144u);
  EXPECT_STREQ(dtype_name(DType::Q4_K), "q4_K");
}

TEST(DType, UnsupportedTypeNamesTensor) {
  auto r = dtype_for_tensor(static_cast<uint32_t>(DType::IQ2_XXS), "blk.3.ffn_down.weight");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(r.status().message(), "unsupported tensor type iq2_xxs for tensor 'blk.3.ffn_down.weight'");
  auto bad = dtype_for_tensor(4, "x");  // id 4 was retired by ggml
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_FALSE(dtype_for_tensor(1000, "x").ok());
  EXPECT_TRUE(dtype_for_tensor(12, "x").ok());
}

TEST(DType, ParsesNames) {
  EXPECT_EQ(parse_dtype("Q4_K"), DType::Q4_K);
  EXPECT_EQ(parse_dtype("bf16"), DType::BF16);
  EXPECT_FALSE(parse_dtype("q4_9").has_value());
}

TEST(TensorView, ContiguousStrides) {
  float buf[24];
  TensorView v = TensorView::contiguous(buf, DType::F32, {4, 3, 2});
  EXPECT_EQ(v.nb[0], 4u);
  EXPECT_EQ(v.nb[1], 16u);
  EXPECT_EQ(v.nb[2], 48u);
  EXPECT_EQ(v.nelements(), 24);
  EXPECT_EQ(v.ndims(), 3);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.span_bytes(), sizeof(buf));
  *v.at<float>(1, 2, 1) = 7.0f;
  EXPECT_EQ(buf[1 + 2 * 4 + 1 * 12], 7.0f);
  TensorView r = v.reshape({12, 2});
  EXPECT_EQ(r.ne[1], 2);
  EXPECT_EQ(v.shape_string(), "f32 [4, 3, 2]");
}

TEST(TensorView, QuantizedRows) {
  TensorView v = TensorView::contiguous(nullptr, DType::Q4_K, {512, 3});
  EXPECT_EQ(v.nb[0], 144u);
  EXPECT_EQ(v.nb[1], 288u);
  EXPECT_EQ(v.nbytes_contiguous(), 864u);
}

}  // namespace
}  // namespace folio
