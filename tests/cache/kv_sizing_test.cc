#include "cache/kv_sizing.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio::cache {
namespace kv_sizing_test {

TEST(KvSizing, BlockBytesSumLayersKAndV) {
  // Llama-3-8B-like: 32 layers, 8 KV heads of 128.
  const std::vector<KvLayerShape> layers(32, KvLayerShape{8, 128, 128});
  // f16: 32 * 16 positions * (8*128*2 bytes) * 2 (K and V) = 2 MiB per block.
  EXPECT_EQ(*kv_block_bytes(layers, DType::F16, 16), size_t{2} << 20);
  EXPECT_EQ(*kv_block_bytes(layers, DType::F32, 16), size_t{4} << 20);
  EXPECT_EQ(*kv_block_bytes(layers, DType::BF16, 32), size_t{4} << 20);
  // q8_0: 34 bytes per 32 values.
  EXPECT_EQ(*kv_block_bytes(layers, DType::Q8_0, 16), size_t{32} * 16 * (8 * 4 * 34) * 2);
  // Mixed layers and K/V dims add up per layer.
  const std::vector<KvLayerShape> mixed = {{4, 64, 32}, {2, 256, 256}};
  EXPECT_EQ(*kv_block_bytes(mixed, DType::F32, 8),
            size_t{8} * ((4 * 64 + 4 * 32) + (2 * 256 + 2 * 256)) * 4);
}

// Latent layers (multi-head latent attention, deepseek2) store one row of
// kv_lora_rank + rope dims per token and read V from it: K bytes only.
TEST(KvSizing, LatentRowsCountKOnly) {
  const KvLayerShape latent{1, 576, 512, 0, true};  // DeepSeek V2 / V3: 512 + 64
  const std::vector<KvLayerShape> layers(27, latent);
  EXPECT_EQ(*kv_block_bytes(layers, DType::F16, 16), size_t{27} * 16 * 576 * 2);
  EXPECT_EQ(*kv_block_bytes(layers, DType::Q8_0, 16), size_t{27} * 16 * (576 / 32) * 34);
  // About a tenth of an MHA model of the same width: DeepSeek-V2-Lite's
  // n_embd 2048 as 16 heads of 128 keeps 2 * 2048 values a layer per token.
  const std::vector<KvLayerShape> mha(27, KvLayerShape{16, 128, 128});
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::Q8_0}) {
    const double ratio = static_cast<double>(*kv_block_bytes(layers, t, 16)) /
                         static_cast<double>(*kv_block_bytes(mha, t, 16));
    EXPECT_NEAR(ratio, 576.0 / 4096.0, 1e-9) << dtype_name(t);
    EXPECT_LT(ratio, 0.15) << dtype_name(t);
  }
  // DeepSeek V3 (n_embd 7168 as 56 heads of 128): 576 values instead of 14336.
  const std::vector<KvLayerShape> v3_mha(61, KvLayerShape{56, 128, 128});
  const std::vector<KvLayerShape> v3(61, latent);
  EXPECT_LT(static_cast<double>(*kv_block_bytes(v3, DType::F16, 16)),
            0.05 * static_cast<double>(*kv_block_bytes(v3_mha, DType::F16, 16)));
  // V cannot be longer than the rows it is read from.
  const std::vector<KvLayerShape> bad = {{1, 64, 128, 0, true}};
  EXPECT_EQ(kv_block_bytes(bad, DType::F16, 16).status().code(), StatusCode::kInvalidArgument);
}

TEST(KvSizing, BlocksForBudget) {
  const std::vector<KvLayerShape> layers(32, KvLayerShape{8, 128, 128});
  EXPECT_EQ(*kv_blocks_for_budget(1024, layers, DType::F16, 16), 512);
  EXPECT_EQ(*kv_blocks_for_budget(1025, layers, DType::F16, 16), 512);  // rounds down
  EXPECT_EQ(*kv_blocks_for_budget(4, layers, DType::F16, 16), 2);
  const auto small = kv_blocks_for_budget(3, layers, DType::F16, 16);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), StatusCode::kResourceExhausted);
  // Huge budgets are capped at the int32 slot range.
  const std::vector<KvLayerShape> tiny = {{1, 32, 32}};
  EXPECT_EQ(*kv_blocks_for_budget(int64_t{1} << 30, tiny, DType::Q8_0, 128),
            std::numeric_limits<int32_t>::max() / 128);
}

TEST(KvSizing, RejectsBadInput) {
  const std::vector<KvLayerShape> layers = {{8, 128, 128}};
  EXPECT_EQ(kv_block_bytes(layers, DType::Q4_K, 16).status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(kv_block_bytes(layers, DType::F16, 24).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(kv_block_bytes({}, DType::F16, 16).status().code(), StatusCode::kInvalidArgument);
  const std::vector<KvLayerShape> odd = {{8, 128, 128}, {8, 80, 80}};
  EXPECT_TRUE(kv_block_bytes(odd, DType::F16, 16).ok());
  const auto q = kv_block_bytes(odd, DType::Q8_0, 16);  // 80 is not a multiple of 32
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("layer 1"), std::string::npos);
  const std::vector<KvLayerShape> zero = {{0, 128, 128}};
  EXPECT_FALSE(kv_block_bytes(zero, DType::F16, 16).ok());
  EXPECT_FALSE(kv_blocks_for_budget(0, layers, DType::F16, 16).ok());
  EXPECT_FALSE(kv_blocks_for_budget(-5, layers, DType::F16, 16).ok());
  EXPECT_TRUE(is_kv_dtype(DType::BF16));
  EXPECT_FALSE(is_kv_dtype(DType::Q4_0));
}

}  // namespace
}  // namespace folio::cache
