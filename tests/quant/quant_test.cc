// Properties of the scalar reference quantizers that hold independently of
// the committed vectors: error bounds per format and distribution, stability
// under re-quantization, zero / signed-zero / tie / non-finite edge cases,
// block layouts, and the checked wrappers' errors.
#include "quant/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_ref.h"

namespace folio::quant {
namespace quant_test {

// splitmix64 + Box-Muller: inputs that do not depend on the standard
// library's distribution implementations.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double normal() {
    const double u1 = std::max(uniform(), 1e-300);
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * uniform());
  }

 private:
  uint64_t s_;
};

enum class Dist { kGauss, kUniform, kUniformPos, kNegative, kWeights, kOutliers, kLognormal };
constexpr Dist kRegular[] = {Dist::kGauss, Dist::kUniform, Dist::kUniformPos, Dist::kNegative,
                             Dist::kWeights};
constexpr Dist kHeavy[] = {Dist::kOutliers, Dist::kLognormal};

std::vector<float> make_input(Dist dist, int64_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) {
    switch (dist) {
      case Dist::kGauss:
        v = static_cast<float>(r.normal());
        break;
      case Dist::kUniform:
        v = static_cast<float>(2 * r.uniform() - 1);
        break;
      case Dist::kUniformPos:
        v = static_cast<float>(4 * r.uniform());
        break;
      case Dist::kNegative:
        v = static_cast<float>(-(0.1 + 3 * r.uniform()));
        break;
      case Dist::kWeights:
        v = static_cast<float>(0.02 * r.normal());
        break;
      case Dist::kOutliers:
        v = static_cast<float>(r.normal() * (r.uniform() < 0.01 ? 30 : 1));
        break;
      case Dist::kLognormal:
        v = static_cast<float>((r.uniform() < 0.5 ? -1 : 1) * std::exp(1.5 * r.normal()));
        break;
    }
  }
  return x;
}

std::vector<uint8_t> quantized(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_size(t, static_cast<int64_t>(x.size())));
  quantize_row_ref(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantized(DType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row_ref(t, q.data(), y.data(), n);
  return y;
}

double nmse(const std::vector<float>& ref, const std::vector<float>& y) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(ref[i]) - y[i];
    err += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm > 0 ? err / norm : err;
}

uint32_t bits(float f) {
  return f32_bits(f);
}

// ------------------------------------------------------------------ layouts

TEST(QuantBlocks, StructSizesMatchDTypeTraits) {
  EXPECT_EQ(sizeof(BlockQ4_0), type_size(DType::Q4_0));
  EXPECT_EQ(sizeof(BlockQ4_1), type_size(DType::Q4_1));
  EXPECT_EQ(sizeof(BlockQ5_0), type_size(DType::Q5_0));
  EXPECT_EQ(sizeof(BlockQ5_1), type_size(DType::Q5_1));
  EXPECT_EQ(sizeof(BlockQ8_0), type_size(DType::Q8_0));
  EXPECT_EQ(sizeof(BlockQ8_1), type_size(DType::Q8_1));
  EXPECT_EQ(sizeof(BlockQ2_K), type_size(DType::Q2_K));
  EXPECT_EQ(sizeof(BlockQ3_K), type_size(DType::Q3_K));
  EXPECT_EQ(sizeof(BlockQ4_K), type_size(DType::Q4_K));
  EXPECT_EQ(sizeof(BlockQ5_K), type_size(DType::Q5_K));
  EXPECT_EQ(sizeof(BlockQ6_K), type_size(DType::Q6_K));
  EXPECT_EQ(sizeof(BlockQ8_K), type_size(DType::Q8_K));
  EXPECT_EQ(sizeof(BlockIQ4_NL), type_size(DType::IQ4_NL));
  EXPECT_EQ(sizeof(BlockIQ4_XS), type_size(DType::IQ4_XS));
  EXPECT_EQ(sizeof(BlockMXFP4), type_size(DType::MXFP4));
  EXPECT_EQ(sizeof(BlockNVFP4), type_size(DType::NVFP4));
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1,
                  DType::IQ4_NL, DType::MXFP4}) {
    EXPECT_EQ(block_size(t), kQK) << dtype_name(t);
  }
  EXPECT_EQ(block_size(DType::NVFP4), kQKNV);
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K,
                  DType::IQ4_XS}) {
    EXPECT_EQ(block_size(t), kQKK) << dtype_name(t);
  }
}

TEST(QuantTables, EverySupportedTypeDequantizes) {
  for (uint32_t id = 0; id < kDTypeIdLimit; ++id) {
    const auto t = dtype_traits_for_id(id);
    if (!t) {
      EXPECT_FALSE(has_dequantize(static_cast<DType>(id))) << id;
      EXPECT_FALSE(has_quantize(static_cast<DType>(id))) << id;
      continue;
    }
    const auto type = static_cast<DType>(id);
    if (t->supported) {
      EXPECT_TRUE(has_dequantize(type)) << t->name;
    }
    if (has_quantize(type)) {
      EXPECT_TRUE(has_dequantize(type)) << t->name;
    }
  }
  EXPECT_TRUE(has_dequantize(DType::Q8_1));
  EXPECT_FALSE(has_dequantize(DType::IQ2_XXS));
}

TEST(QuantTables, QuantizeList) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                  DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                  DType::Q8_K, DType::MXFP4, DType::NVFP4}) {
    EXPECT_TRUE(has_quantize(t)) << dtype_name(t);
  }
  for (DType t :
       {DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::IQ2_XXS, DType::I32}) {
    EXPECT_FALSE(has_quantize(t)) << dtype_name(t);
  }
}

// ------------------------------------------------------------ error bounds

struct Bound {
  DType type;
  double regular;  // NMSE bound for gaussian / uniform / one-signed / small-weight rows
  double heavy;    // and for rows with outliers or a log-normal spread
};

// Bounds are ~1.3x the measured NMSE of these exact inputs: a quantizer that
// loses precision (wrong rounding, a skipped scale search) trips them.
constexpr Bound kBounds[] = {
    {DType::F16, 6e-8, 7e-8},         {DType::BF16, 3.8e-6, 4.3e-6},
    {DType::Q4_0, 9.6e-3, 2e-2},      {DType::Q4_1, 8e-3, 1.85e-2},
    {DType::Q5_0, 2.5e-3, 8.6e-3},    {DType::Q5_1, 1.9e-3, 4.3e-3},
    {DType::Q8_0, 3.7e-5, 2.1e-4},    {DType::Q8_1, 3.7e-5, 2.1e-4},
    {DType::Q4_K, 6.7e-3, 1.22e-2},   {DType::Q5_K, 1.7e-3, 4e-3},
    {DType::Q6_K, 4.2e-4, 1.5e-3},    {DType::Q8_K, 6.3e-5, 1.36e-3},
    {DType::MXFP4, 2.75e-2, 3.95e-2}, {DType::NVFP4, 1.38e-2, 8.1e-3},
};

void PrintTo(const Bound& b, std::ostream* os) {
  *os << dtype_name(b.type);
}

class QuantRoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(QuantRoundTrip, ErrorWithinBound) {
  const Bound b = GetParam();
  const int64_t n = 16 * kQKK;
  auto check = [&](Dist d, double bound) {
    const auto x = make_input(d, n, 100 + static_cast<int>(d));
    const auto y = dequantized(b.type, quantized(b.type, x), n);
    const double e = nmse(x, y);
    EXPECT_LT(e, bound) << dtype_name(b.type) << " dist " << static_cast<int>(d);
    EXPECT_GT(e, 0.0) << dtype_name(b.type) << " is lossy on dist " << static_cast<int>(d);
  };
  for (Dist d : kRegular) check(d, b.regular);
  for (Dist d : kHeavy) check(d, b.heavy);
}

// Quantizing the dequantized values again loses little: exactly nothing for
// the formats whose scale is a function of the block's extreme values, at most
// a tenth of the first pass for the searched K-quant scales.
TEST_P(QuantRoundTrip, RequantizeIsStable) {
  const Bound b = GetParam();
  const int64_t n = 16 * kQKK;
  const bool exact = b.type != DType::Q4_K && b.type != DType::Q5_K && b.type != DType::Q6_K &&
                     b.type != DType::Q8_K;
  for (Dist d :
       {Dist::kGauss, Dist::kUniformPos, Dist::kNegative, Dist::kOutliers, Dist::kLognormal}) {
    const auto x = make_input(d, n, 200 + static_cast<int>(d));
    const auto y = dequantized(b.type, quantized(b.type, x), n);
    const auto y2 = dequantized(b.type, quantized(b.type, y), n);
    if (exact) {
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits(y2[i]), bits(y[i]))
            << dtype_name(b.type) << " dist " << static_cast<int>(d) << " element " << i;
      }
    } else {
      EXPECT_LE(nmse(y, y2), 0.1 * nmse(x, y))
          << dtype_name(b.type) << " dist " << static_cast<int>(d);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantRoundTrip, ::testing::ValuesIn(kBounds),
                         [](const ::testing::TestParamInfo<Bound>& info) {
                           return std::string(dtype_name(info.param.type));
                         });

// --------------------------------------------------------------- edge cases

std::vector<DType> quantizable_blocks() {
  return {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,  DType::Q8_1,
          DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::MXFP4, DType::NVFP4};
}

TEST(QuantEdge, ZeroAndNegativeZeroRowsGiveZeros) {
  const int64_t n = 2 * kQKK;
  for (float z : {0.0f, -0.0f}) {
    const std::vector<float> x(static_cast<size_t>(n), z);
    for (DType t : quantizable_blocks()) {
      const auto q = quantized(t, x);
      const auto y = dequantized(t, q, n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], 0.0f) << dtype_name(t) << " z=" << z << " element " << i;  // +-0, no NaN
      }
    }
  }
}

// Sign of the zero scale of an all-zero block, as the gguf package writes it:
// the scale is x[argmax |x|] / -8 with NumPy's argmax taking the first element.
TEST(QuantEdge, AllZeroBlockScaleSignFollowsGguf) {
  std::vector<float> x(kQK, 0.0f);
  BlockQ4_0 b;
  ref::quantize_q4_0(x.data(), &b, kQK);
  EXPECT_EQ(b.d, 0x8000);  // +0 / -8 = -0
  x[0] = -0.0f;
  ref::quantize_q4_0(x.data(), &b, kQK);
  EXPECT_EQ(b.d, 0x0000);  // -0 / -8 = +0 (ggml C writes -0 here: it starts from +0)
  for (uint8_t q : b.qs) EXPECT_EQ(q, 0x88);
}

// Q8_0 rounds half away from zero (roundf; the gguf package's np_roundf),
// Q8_K half to even (ggml's nearest_int), Q4_0 truncates x/d + 8.5.
TEST(QuantEdge, RoundingTies) {
  std::vector<float> x(kQKK, 0.0f);
  const float ties[] = {-127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f};
  std::copy(std::begin(ties), std::end(ties), x.begin());

  BlockQ8_0 q8;
  ref::quantize_q8_0(x.data(), &q8, kQK);  // amax 127: d = 1 exactly
  EXPECT_EQ(f16_to_f32(q8.d), 1.0f);
  const int8_t away[] = {-127, 1, -1, 2, -2, 3, -3, 127, -127};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(q8.qs[i], away[i]) << i;

  BlockQ8_K qk;
  ref::quantize_q8_k(x.data(), &qk, kQKK);  // signed max -127: iscale = -127 / -127 = 1
  EXPECT_EQ(qk.d, 1.0f);
  const int8_t even[] = {-127, 0, 0, 2, -2, 2, -2, 126, -126};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(qk.qs[i], even[i]) << i;

  std::vector<float> y(kQK, 0.0f);
  const float q4_vals[] = {-8.0f, 7.5f, -7.5f, 0.5f, -0.5f, 3.49f};
  std::copy(std::begin(q4_vals), std::end(q4_vals), y.begin());
  BlockQ4_0 q4;
  ref::quantize_q4_0(y.data(), &q4, kQK);  // d = -8 / -8 = 1
  EXPECT_EQ(f16_to_f32(q4.d), 1.0f);
  const int want[] = {0, 15 /* 16 clamped */, 1, 9, 8, 11};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(q4.qs[i] & 0xF, want[i]) << i;
}

// FP4 scale decoding (ggml's conventions: half the scale, so that the
// doubled E2M1 table gives the true values) and level ties.
TEST(QuantEdge, Fp4ScalesAndTies) {
  EXPECT_EQ(bits(e8m0_half_to_f32(0)), 0x00200000u);  // 2^-128, subnormal
  EXPECT_EQ(bits(e8m0_half_to_f32(1)), 0x00400000u);  // 2^-127
  EXPECT_EQ(e8m0_half_to_f32(2), std::ldexp(1.0f, -126));
  EXPECT_EQ(e8m0_half_to_f32(127), 0.5f);
  EXPECT_EQ(e8m0_half_to_f32(255), std::ldexp(1.0f, 127));
  EXPECT_EQ(ue4m3_half_to_f32(0x00), 0.0f);
  EXPECT_EQ(ue4m3_half_to_f32(0x01), std::ldexp(1.0f, -10));  // subnormal 2^-9, halved
  EXPECT_EQ(ue4m3_half_to_f32(0x07), 7 * std::ldexp(1.0f, -10));
  EXPECT_EQ(ue4m3_half_to_f32(0x08), std::ldexp(1.0f, -7));  // 2^-6, halved
  EXPECT_EQ(ue4m3_half_to_f32(0x38), 0.5f);                  // 1.0
  EXPECT_EQ(ue4m3_half_to_f32(0x7E), 224.0f);                // 448, the largest
  EXPECT_EQ(ue4m3_half_to_f32(0x7F), 0.0f);                  // NaN
  EXPECT_EQ(ue4m3_half_to_f32(0x80), 0.0f);                  // sign bit ignored
  EXPECT_EQ(ue4m3_half_to_f32(0xB8), 0.5f);
  EXPECT_EQ(ue4m3_half_to_f32(0xFF), 240.0f);
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(bits(kE8M0Half[i]), bits(e8m0_half_to_f32(static_cast<uint8_t>(i))));
    EXPECT_EQ(bits(kUE4M3Half[i]), bits(ue4m3_half_to_f32(static_cast<uint8_t>(i))));
  }

  // amax 12: e = floor(log2 12) - 2 + 127 = 128, half scale 1, levels = kFP4Values.
  std::vector<float> x(kQK, 0.0f);
  const float vals[] = {12.0f, 0.5f, -0.5f, 5.0f, -5.0f, 10.0f, -0.0f, 2.9f, -7.0f, 13.0f};
  std::copy(std::begin(vals), std::end(vals), x.begin());
  BlockMXFP4 mx;
  ref::quantize_mxfp4(x.data(), &mx, kQK);
  EXPECT_EQ(mx.e, 128);
  const int want[] = {7, 0, 0, 4, 12, 6, 0, 3, 13, 7};  // ties: the lower code
  for (int i = 0; i < 10; ++i) EXPECT_EQ(mx.qs[i] & 0xF, want[i]) << i;

  // NVFP4: sub-block maxima 6 (scale 1.0 = 0x38), 6.375 (6.375 / 6 = 1.0625,
  // halfway between mantissas 0 and 1: rounds up to 1.125 = 0x39), 0, and
  // 3000 (500, clamped to 448 = 0x7E).
  std::vector<float> y(kQKNV, 0.0f);
  y[0] = 6.0f;
  y[1] = 0.25f;  // halfway between levels 0 and 0.5: code 0
  y[16] = -6.375f;
  y[48] = 3000.0f;
  BlockNVFP4 nv;
  ref::quantize_nvfp4(y.data(), &nv, kQKNV);
  EXPECT_EQ(nv.d[0], 0x38);
  EXPECT_EQ(nv.d[1], 0x39);
  EXPECT_EQ(nv.d[2], 0x00);
  EXPECT_EQ(nv.d[3], 0x7E);
  EXPECT_EQ(nv.qs[0] & 0xF, 7);
  EXPECT_EQ(nv.qs[1] & 0xF, 0);
  EXPECT_EQ(nv.qs[8] & 0xF, 15);  // -6.375 -> -6 * 1.125 = -6.75, code 15 (-12 doubled)
  EXPECT_EQ(nv.qs[24] & 0xF, 7);
  std::vector<float> back(kQKNV);
  ref::dequantize_nvfp4(&nv, back.data(), kQKNV);
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[16], -6.75f);
  EXPECT_EQ(back[48], 2688.0f);  // 448 * 6
}

TEST(QuantEdge, Q8KBlockSumsAndQ8_1Sum) {
  const int64_t n = 4 * kQKK;
  const auto x = make_input(Dist::kGauss, n, 7);
  const auto q = quantized(DType::Q8_K, x);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const auto b = ref::load_block<BlockQ8_K>(q.data(), i);
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
      EXPECT_EQ(b.bsums[g], sum);
    }
  }
  const auto q1 = quantized(DType::Q8_1, x);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = ref::load_block<BlockQ8_1>(q1.data(), i);
    int sum = 0;
    for (int8_t v : b.qs) sum += v;
    // s = sum * d with the unrounded d: within an f16 rounding of sum * f16(d).
    const float want = static_cast<float>(sum) * f16_to_f32(b.d);
    EXPECT_NEAR(f16_to_f32(b.s), want, std::fabs(want) * 2e-3f + 1e-6f) << i;
  }
}

// inf / NaN need not match other tools, but must stay defined (no crash, no
// UB in float->int conversion: the sanitizer presets run this too).
TEST(QuantEdge, NonFiniteInputDoesNotCrash) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float big = std::numeric_limits<float>::max();
  const int64_t n = kQKK;
  std::vector<std::vector<float>> rows;
  for (float special : {inf, -inf, nan, big, -big}) {
    auto x = make_input(Dist::kGauss, n, 3);
    for (int64_t i = 0; i < n; i += 37) x[static_cast<size_t>(i)] = special;
    rows.push_back(x);
    rows.emplace_back(static_cast<size_t>(n), special);
  }
  for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q8_0, DType::Q8_1, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K,
                  DType::MXFP4, DType::NVFP4}) {
    for (const auto& x : rows) {
      const auto y = dequantized(t, quantized(t, x), n);
      EXPECT_EQ(static_cast<int64_t>(y.size()), n);
    }
  }
}

// The packed side needs no alignment.
TEST(QuantEdge, UnalignedBuffers) {
  const int64_t n = 2 * kQKK;
  const auto x = make_input(Dist::kGauss, n, 11);
  for (DType t : quantizable_blocks()) {
    const auto q = quantized(t, x);
    std::vector<uint8_t> shifted(q.size() + 1);
    quantize_row_ref(t, x.data(), shifted.data() + 1, n);
    ASSERT_EQ(std::memcmp(shifted.data() + 1, q.data(), q.size()), 0) << dtype_name(t);
    const auto y = dequantized(t, q, n);
    std::vector<float> y_shifted(static_cast<size_t>(n));
    dequantize_row_ref(t, shifted.data() + 1, y_shifted.data(), n);
    ASSERT_EQ(std::memcmp(y.data(), y_shifted.data(), y.size() * 4), 0) << dtype_name(t);
  }
}

// ---------------------------------------------------------- checked wrappers

TEST(QuantChecked, AcceptsExactSizes) {
  const auto x = make_input(Dist::kUniform, 64, 5);
  std::vector<uint8_t> q(row_size(DType::Q8_0, 64));
  ASSERT_TRUE(quantize(DType::Q8_0, x.data(), 64, q.data(), q.size()).ok());
  std::vector<float> y(64);
  ASSERT_TRUE(dequantize(DType::Q8_0, q.data(), q.size(), y.data(), 64).ok());
  EXPECT_LT(nmse(x, y), 1e-4);
  EXPECT_TRUE(quantize(DType::Q4_K, nullptr, 0, nullptr, 0).ok());  // empty row
  EXPECT_TRUE(dequantize(DType::F32, nullptr, 0, nullptr, 0).ok());
}

TEST(QuantChecked, RejectsBadInput) {
  std::vector<float> x(512, 1.0f);
  std::vector<uint8_t> buf(4096);
  std::vector<float> y(512);

  Status s = dequantize(DType::Q4_0, buf.data(), 18, y.data(), 33);  // not a block multiple
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("block size 32"), std::string::npos) << s.message();

  s = dequantize(DType::Q4_0, buf.data(), 35, y.data(), 64);  // 2 blocks are 36 bytes
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("take 36 bytes, got 35"), std::string::npos) << s.message();

  s = quantize(DType::Q6_K, x.data(), 256, buf.data(), 211);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("q6_K"), std::string::npos) << s.message();

  EXPECT_EQ(quantize(DType::Q8_0, x.data(), -32, buf.data(), 0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(quantize(DType::Q8_0, nullptr, 32, buf.data(), 34).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize(DType::Q8_0, buf.data(), 34, nullptr, 32).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(dequantize(static_cast<DType>(4), buf.data(), 0, y.data(), 0).code(),
            StatusCode::kInvalidArgument);  // retired id
  EXPECT_EQ(quantize(static_cast<DType>(1000), x.data(), 32, buf.data(), 128).code(),
            StatusCode::kInvalidArgument);

  s = quantize(DType::Q2_K, x.data(), 256, buf.data(), row_size(DType::Q2_K, 256));
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("q2_K"), std::string::npos) << s.message();
  EXPECT_EQ(
      dequantize(DType::IQ2_XXS, buf.data(), row_size(DType::IQ2_XXS, 256), y.data(), 256).code(),
      StatusCode::kUnsupported);
  EXPECT_EQ(quantize(DType::IQ4_NL, x.data(), 32, buf.data(), 18).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace folio::quant
