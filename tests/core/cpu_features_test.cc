#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <vector>

namespace folio {
namespace cpu_features_test {

TEST(CpuFeatures, TiersAreConsistent) {
  const CpuFeatures& f = cpu_features();
  const Isa d = detected_isa();
  if (d >= Isa::kAvx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (d == Isa::kAvx2Vnni) {
    EXPECT_TRUE(f.vnni256());
  }
  if (d == Isa::kAvx2) {
    EXPECT_FALSE(f.vnni256());  // a CPU with 256-bit VNNI and no AVX-512 is avx2_vnni
  }
  if (d >= Isa::kAvx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl);
  }
  if (d >= Isa::kAmx) {
    EXPECT_TRUE(f.amx_tile && f.amx_int8);
  }
  if (d == Isa::kNeon || d == Isa::kNeonDotprod || d == Isa::kNeonI8mm) {
    EXPECT_TRUE(f.neon);
    EXPECT_EQ(d != Isa::kNeon, f.dotprod);
    EXPECT_EQ(d == Isa::kNeonI8mm, f.dotprod && f.i8mm);
    EXPECT_FALSE(f.avx2);
  }
  EXPECT_FALSE(f.to_string().empty());
}

TEST(CpuFeatures, LimitCapsActiveIsa) {
  const Isa before = active_isa();
  set_isa_limit(Isa::kScalar);
  EXPECT_EQ(active_isa(), Isa::kScalar);
  set_isa_limit(Isa::kAmx);
  EXPECT_EQ(active_isa(), detected_isa());
  set_isa_limit(before);
}

TEST(CpuFeatures, ParsesIsaNames) {
  Isa isa;
  EXPECT_TRUE(parse_isa("avx2", &isa));
  EXPECT_EQ(isa, Isa::kAvx2);
  EXPECT_TRUE(parse_isa("avx2_vnni", &isa));
  EXPECT_EQ(isa, Isa::kAvx2Vnni);
  EXPECT_TRUE(parse_isa("neon_dotprod", &isa));
  EXPECT_EQ(isa, Isa::kNeonDotprod);
  EXPECT_TRUE(parse_isa("neon_i8mm", &isa));
  EXPECT_EQ(isa, Isa::kNeonI8mm);
  EXPECT_FALSE(parse_isa("sse9", &isa));
}

// Each architecture's ladder starts at scalar and holds only its own tiers.
TEST(CpuFeatures, LaddersPerArchitecture) {
  EXPECT_EQ(isa_ladder(Isa::kAmx), (std::vector<Isa>{Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni,
                                                     Isa::kAvx512, Isa::kAmx}));
  EXPECT_EQ(isa_ladder(Isa::kAvx2), (std::vector<Isa>{Isa::kScalar, Isa::kAvx2}));
  EXPECT_EQ(isa_ladder(Isa::kAvx2Vnni),
            (std::vector<Isa>{Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni}));
  EXPECT_EQ(isa_ladder(Isa::kNeonDotprod),
            (std::vector<Isa>{Isa::kScalar, Isa::kNeon, Isa::kNeonDotprod}));
  EXPECT_EQ(isa_ladder(Isa::kNeonI8mm),
            (std::vector<Isa>{Isa::kScalar, Isa::kNeon, Isa::kNeonDotprod, Isa::kNeonI8mm}));
  EXPECT_EQ(isa_ladder(Isa::kScalar), (std::vector<Isa>{Isa::kScalar}));
  const std::vector<Isa> here = isa_ladder(detected_isa());
  EXPECT_EQ(here.back(), detected_isa());
}

}  // namespace
}  // namespace folio
