#include "core/cpu_features.h"

#include <gtest/gtest.h>

namespace folio {
namespace {

TEST(CpuFeatures, TiersAreConsistent) {
  const CpuFeatures& f = cpu_features();
  const Isa d = detected_isa();
  if (d >= Isa::kAvx2) {
    EXPECT_TRUE(f.avx2 && f.fma && f.f16c);
  }
  if (d >= Isa::kAvx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx512vl);
  }
  if (d >= Isa::kAmx) {
    EXPECT_TRUE(f.amx_tile && f.amx_int8);
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
  EXPECT_FALSE(parse_isa("sse9", &isa));
}

}  // namespace
}  // namespace folio
