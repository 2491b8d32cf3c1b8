// Packed layouts (quant/repack.h): unpacking gives back every GGUF byte (any
// bit pattern, not just quantizer output), sizes and views are as documented,
// and a packed row dequantizes to the plain row's values.
#include "quant/repack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace folio::quant {
namespace repack_test {

constexpr DType kSources[] = {DType::Q4_0, DType::Q4_1,   DType::Q5_0,  DType::Q5_1,
                              DType::Q8_0, DType::IQ4_NL, DType::MXFP4, DType::Q4_K,
                              DType::Q5_K, DType::Q6_K,   DType::IQ4_XS, DType::F16};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Repack, PackedTypesAndTraits) {
  for (DType src : kSources) {
    const auto p = packed_type_for(src);
    ASSERT_TRUE(p.has_value()) << dtype_name(src);
    EXPECT_TRUE(is_packed(*p));
    EXPECT_FALSE(is_packed(src));
    EXPECT_EQ(packed_source(*p), src);
    EXPECT_EQ(block_size(*p), block_size(src));
    // GGUF ids never name a packed type.
    EXPECT_FALSE(dtype_traits_for_id(static_cast<uint32_t>(*p)).has_value());
    EXPECT_FALSE(has_dequantize(*p));
  }
  EXPECT_FALSE(packed_type_for(DType::F32).has_value());
  EXPECT_FALSE(packed_type_for(DType::Q2_K).has_value());
  EXPECT_FALSE(packed_type_for(DType::NVFP4).has_value());
  // Same bytes as GGUF per row (Q4_K, Q5_K: unpacked 6-bit scales and mins,
  // +4; IQ4_XS: unpacked 6-bit scales, +2).
  EXPECT_EQ(type_size(DType::Q4_0_X16), type_size(DType::Q4_0));
  EXPECT_EQ(type_size(DType::Q5_0_X16), type_size(DType::Q5_0));
  EXPECT_EQ(type_size(DType::Q4_1_X16), type_size(DType::Q4_1));
  EXPECT_EQ(type_size(DType::Q8_0_X16), type_size(DType::Q8_0));
  EXPECT_EQ(type_size(DType::Q4_K_X16), type_size(DType::Q4_K) + 4);
  EXPECT_EQ(type_size(DType::Q5_K_X16), type_size(DType::Q5_K) + 4);
  EXPECT_EQ(type_size(DType::Q6_K_X16), type_size(DType::Q6_K));
  EXPECT_EQ(type_size(DType::Q5_1_X16), type_size(DType::Q5_1));
  EXPECT_EQ(type_size(DType::IQ4_NL_X16), type_size(DType::IQ4_NL));
  EXPECT_EQ(type_size(DType::IQ4_XS_X16), type_size(DType::IQ4_XS) + 2);
  EXPECT_EQ(x16_block_bytes(DType::Q5_1_X16), 16 * sizeof(BlockQ5_1));
  EXPECT_EQ(x16_block_bytes(DType::IQ4_NL_X16), 16 * sizeof(BlockIQ4_NL));
  EXPECT_EQ(type_size(DType::MXFP4_X16), type_size(DType::MXFP4));
  EXPECT_EQ(x16_block_bytes(DType::MXFP4_X16), 16 * sizeof(BlockMXFP4));
  EXPECT_EQ(packed_panel_bytes(DType::IQ4_XS_X16, 512), 2 * kIQ4XSxBytes);
  EXPECT_EQ(packed_panel_bytes(DType::Q4_0_X16, 64), 2 * x16_block_bytes(DType::Q4_0_X16));
  EXPECT_EQ(packed_panel_bytes(DType::Q4_K_X16, 512), 2 * kQ4KxBytes);
  EXPECT_EQ(packed_panel_bytes(DType::Q5_K_X16, 768), 3 * kQ5KxBytes);
  EXPECT_EQ(packed_panel_bytes(DType::Q6_K_X16, 256), kQ6KxBytes);
  EXPECT_EQ(packed_matrix_bytes(DType::Q8_0_X16, 32, 17), 2 * x16_block_bytes(DType::Q8_0_X16));
}

// Any bytes round-trip, for row counts below, at and above a panel.
TEST(Repack, UnpackGivesBackEveryByte) {
  uint32_t seed = 1;
  for (DType src : kSources) {
    const DType p = *packed_type_for(src);
    for (int64_t k : {block_size(src), 3 * block_size(src)}) {
      for (int64_t n : {1, 5, 16, 37}) {
        const size_t row = row_size(src, k);
        const std::vector<uint8_t> plain = random_bytes(row * static_cast<size_t>(n), seed++);
        std::vector<uint8_t> packed(packed_matrix_bytes(p, k, n));
        pack_rows(p, plain.data(), row, k, n, packed.data());
        std::vector<uint8_t> back(row);
        for (int64_t r = 0; r < n; ++r) {
          unpack_row(p, packed.data(), k, r, back.data());
          ASSERT_EQ(0, std::memcmp(back.data(), plain.data() + r * row, row))
              << dtype_name(p) << " k=" << k << " n=" << n << " row " << r;
        }
      }
    }
  }
}

// F16_X16: per panel and step of 32 elements, pair q's dword i is row i's
// elements 2q, 2q + 1; K padded to 32 with zeros, rows past n zero; any K
// (tails of one, an odd and an even count) and n round-trip.
TEST(Repack, F16LayoutIsInterleavedPairs) {
  EXPECT_EQ(packed_type_for(DType::F16), DType::F16_X16);
  EXPECT_EQ(packed_panel_bytes(DType::F16_X16, 64), 2 * kF16xStepBytes);
  EXPECT_EQ(packed_panel_bytes(DType::F16_X16, 65), 3 * kF16xStepBytes);
  EXPECT_EQ(packed_matrix_bytes(DType::F16_X16, 32, 17), 2 * kF16xStepBytes);
  uint32_t seed = 7;
  for (int64_t k : {1, 31, 61, 64, 100}) {
    for (int64_t n : {1, 16, 37}) {
      const std::vector<uint8_t> plain = random_bytes(static_cast<size_t>(2 * k * n), seed++);
      std::vector<uint8_t> packed(packed_matrix_bytes(DType::F16_X16, k, n));
      pack_rows(DType::F16_X16, plain.data(), static_cast<size_t>(2 * k), k, n, packed.data());
      const int64_t kpad = (k + 31) / 32 * 32;
      for (int64_t r = 0; r < (n + 15) / 16 * 16; ++r) {
        for (int64_t e = 0; e < kpad; ++e) {
          uint16_t want = 0, got;
          if (r < n && e < k) std::memcpy(&want, plain.data() + 2 * (r * k + e), 2);
          const size_t at = static_cast<size_t>((r / 16) * (kpad / 32) * 1024 + (e / 32) * 1024 +
                                                (e % 32 / 2) * 64 + (r % 16) * 4 + e % 2 * 2);
          std::memcpy(&got, packed.data() + at, 2);
          ASSERT_EQ(got, want) << "k=" << k << " n=" << n << " row " << r << " element " << e;
        }
      }
      std::vector<uint8_t> back(static_cast<size_t>(2 * k));
      for (int64_t r = 0; r < n; ++r) {
        unpack_row(DType::F16_X16, packed.data(), k, r, back.data());
        ASSERT_EQ(0, std::memcmp(back.data(), plain.data() + 2 * r * k, back.size()));
      }
    }
  }
}

// Strided source rows (a view into wider rows) pack the same as contiguous ones.
TEST(Repack, StridedSourceRows) {
  const DType src = DType::Q4_K, p = DType::Q4_K_X16;
  const int64_t k = 512, n = 20;
  const size_t row = row_size(src, k), stride = row + 64;
  const std::vector<uint8_t> wide = random_bytes(stride * n, 99);
  std::vector<uint8_t> tight(row * n);
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(tight.data() + r * row, wide.data() + r * stride, row);
  std::vector<uint8_t> a(packed_matrix_bytes(p, k, n)), b(a.size());
  pack_rows(p, wide.data(), stride, k, n, a.data());
  pack_rows(p, tight.data(), row, k, n, b.data());
  EXPECT_EQ(a, b);
}

// The documented VNNI order: byte [r][4n + j] of a Q8_0 block is the code
// (q + 128) of row n, element 4r + j; the scales follow.
TEST(Repack, Q8_0LayoutIsVnniOrder) {
  const int64_t k = 32, n = 16;
  std::vector<float> x(static_cast<size_t>(k * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 61) - 30);
  std::vector<uint8_t> plain(row_size(DType::Q8_0, k) * n);
  for (int64_t r = 0; r < n; ++r) {
    quantize_row_ref(DType::Q8_0, x.data() + r * k, plain.data() + r * row_size(DType::Q8_0, k), k);
  }
  std::vector<uint8_t> packed(packed_matrix_bytes(DType::Q8_0_X16, k, n));
  pack_rows(DType::Q8_0_X16, plain.data(), row_size(DType::Q8_0, k), k, n, packed.data());
  for (int row = 0; row < n; ++row) {
    const auto* blk = reinterpret_cast<const BlockQ8_0*>(plain.data() + row * sizeof(BlockQ8_0));
    for (int e = 0; e < 32; ++e) {
      EXPECT_EQ(packed[(e / 4) * 64 + row * 4 + e % 4], static_cast<uint8_t>(blk->qs[e] + 128));
    }
    uint16_t d;
    std::memcpy(&d, packed.data() + 512 + 2 * row, 2);
    EXPECT_EQ(d, blk->d);
  }
}

// Q5_K_X16: group g of a panel super-block holds the low nibbles (VNNI rows
// 0-3 low, 4-7 high) and a plane whose bit 64 R + 4 n + j is bit 4 of code
// 4 R + j of row n (qh[4 R + j] bit g in the GGUF block).
TEST(Repack, Q5_KPlaneIsVnniOrder) {
  const int64_t k = 256, n = 16;
  const size_t row = row_size(DType::Q5_K, k);
  const std::vector<uint8_t> plain = random_bytes(row * n, 7);
  std::vector<uint8_t> packed(packed_matrix_bytes(DType::Q5_K_X16, k, n));
  pack_rows(DType::Q5_K_X16, plain.data(), row, k, n, packed.data());
  for (int r = 0; r < n; ++r) {
    const auto* blk = reinterpret_cast<const BlockQ5_K*>(plain.data() + r * row);
    for (int e = 0; e < kQKK; ++e) {
      const int g = e / 32, l = e % 32, i = (l / 4) * 64 + r * 4 + l % 4;
      const uint8_t* group = packed.data() + kQ5KxCodes + kQ5KxGroupBytes * g;
      const uint8_t lo = i < 256 ? group[i] & 0xF : group[i - 256] >> 4;
      const uint8_t hi = (group[256 + i / 8] >> (i % 8)) & 1;
      const uint8_t q = blk->qs[32 * (g / 2) + l];
      ASSERT_EQ(lo, g % 2 == 0 ? q & 0xF : q >> 4) << "row " << r << " e " << e;
      ASSERT_EQ(hi, (blk->qh[l] >> g) & 1) << "row " << r << " e " << e;
    }
    uint8_t sc, m;
    for (int j = 0; j < 8; ++j) {
      unpack_scale_min_k4(j, blk->scales, &sc, &m);
      EXPECT_EQ(packed[kQ5KxScales + 16 * j + r], sc);
      EXPECT_EQ(packed[kQ5KxMins + 32 * (j / 2) + 2 * r + j % 2], m);
    }
  }
}

TEST(Repack, PackedView) {
  const std::array<int64_t, kMaxDims> ne{256, 21, 3, 1};
  TensorView v = packed_view(reinterpret_cast<void*>(64), DType::Q4_K_X16, ne);
  EXPECT_TRUE(is_packed_view(v));
  EXPECT_EQ(v.nb[2], packed_matrix_bytes(DType::Q4_K_X16, 256, 21));
  EXPECT_EQ(v.nb[3], 3 * v.nb[2]);
  TensorView plain_strides = TensorView::contiguous(nullptr, DType::Q4_K_X16, ne);
  EXPECT_FALSE(is_packed_view(plain_strides));  // 21 rows: padded panels make nb[2] larger
  EXPECT_FALSE(is_packed_view(TensorView::contiguous(nullptr, DType::Q4_K, ne)));
}

}  // namespace
}  // namespace folio::quant
