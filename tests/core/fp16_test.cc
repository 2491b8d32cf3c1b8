#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace folio {
namespace fp16_test {

// Every half value survives f16 -> f32 -> f16 (NaNs keep NaN-ness).
TEST(Fp16, RoundTripsAllHalfs) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(back)));
    } else {
      EXPECT_EQ(back, h) << "h=" << h;
    }
  }
}

// Rounding agrees with the hardware conversion semantics (round to nearest
// even): check midpoints between consecutive halves, including subnormals.
TEST(Fp16, RoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float a = f16_to_f32(static_cast<uint16_t>(h));
    const float b = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = a + (b - a) / 2;  // exact in f32
    const uint16_t r = f32_to_f16(mid);
    EXPECT_EQ(r, (h & 1) ? h + 1 : h) << "h=" << h;
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, 0.0f)), h);
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, 1e9f)), h + 1);
  }
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e-9f), 0);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3f808000)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3f818000)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3f808001)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_f32(0x4049), bits_f32(0x40490000));
}

}  // namespace
}  // namespace folio
