// Independent validation of the rope reference: identity at position 0,
// rotation by known angles in each mode, neox vs normal pairing, partial
// rotary, multi-section position selection (mrope blocks, imrope interleave),
// linear scaling and YaRN (correction dims, ramp, magnitude).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backend/cpu/ref/ref_util.h"
#include "backend/ref_test_util.h"

namespace folio::reftest {
namespace ref_rope_test {

bool is_multi(RopeMode m) {
  return m == RopeMode::kMrope || m == RopeMode::kImrope;
}

Op rope_op(const Tensor& x, const Tensor& pos, const Tensor& d, const RopeParams& p) {
  return make_op(OpKind::kRope, {&x, &pos}, d, p);
}

// Positions for n_tok tokens: plain modes use `t`; multi modes get the four
// sections (t, h, w, e) one after another.
Tensor positions(RopeMode mode, const std::vector<int32_t>& t, const std::vector<int32_t>& h = {},
                 const std::vector<int32_t>& w = {}, const std::vector<int32_t>& e = {}) {
  const int64_t n = static_cast<int64_t>(t.size());
  Tensor pos(DType::I32, {is_multi(mode) ? 4 * n : n});
  std::vector<int32_t> all = t;
  if (is_multi(mode)) {
    for (const auto* s : {&h, &w, &e})
      all.insert(all.end(), s->empty() ? t.begin() : s->begin(), s->empty() ? t.end() : s->end());
  }
  set_i32(pos, all);
  return pos;
}

// One token, one head of width head_dim, each rotated pair set to (1, 0):
// returns the angle and magnitude the reference applied to each pair.
struct PairResult {
  std::vector<double> angle, magnitude;
};
PairResult rotate_unit_pairs(const RopeParams& p, int64_t head_dim, const Tensor& pos,
                             const Tensor* ff = nullptr) {
  Tensor x(DType::F32, {head_dim, 1, 1}), d(DType::F32, {head_dim, 1, 1});
  const int64_t half = p.n_dims / 2;
  const bool adjacent = p.mode == RopeMode::kNormal;
  for (int64_t i = 0; i < half; ++i) x.f()[adjacent ? 2 * i : i] = 1.0f;
  Op op = rope_op(x, pos, d, p);
  if (ff) op.src[2] = ff->v;
  EXPECT_TRUE(run_ref(op, "rope.ref").ok());
  PairResult r;
  for (int64_t i = 0; i < half; ++i) {
    const double c = d.f()[adjacent ? 2 * i : i], s = d.f()[adjacent ? 2 * i + 1 : i + half];
    r.angle.push_back(std::atan2(s, c));
    r.magnitude.push_back(std::hypot(c, s));
  }
  return r;
}

double inv_freq(double base, int64_t i, int n_dims) {
  return std::pow(base, -2.0 * i / n_dims);
}

constexpr RopeMode kModes[] = {RopeMode::kNormal, RopeMode::kNeox, RopeMode::kMrope,
                               RopeMode::kImrope};

TEST(RefRope, PositionZeroIsIdentity) {
  std::mt19937 rng(1);
  for (RopeMode mode : kModes) {
    Tensor x(DType::F32, {10, 3, 2}), d(DType::F32, {10, 3, 2});
    fill_uniform(x, rng);
    Tensor pos = positions(mode, {0, 0});
    RopeParams p;
    p.mode = mode;
    p.n_dims = 8;
    p.sections = {2, 1, 1, 0};
    ASSERT_TRUE(run_ref(rope_op(x, pos, d, p), "rope.ref").ok());
    EXPECT_EQ(d.floats(), x.floats()) << static_cast<int>(mode);
  }
}

TEST(RefRope, KnownAnglesNormalVsNeoxPairing) {
  // head_dim = n_dims = 4, base 10000, pos 1: theta_0 = 1, theta_1 = 0.01.
  // x = [1, 0, 0, 1].
  Tensor x(DType::F32, {4}), d(DType::F32, {4});
  set_f32(x, {1, 0, 0, 1});
  Tensor pos = positions(RopeMode::kNormal, {1});
  RopeParams p;
  p.n_dims = 4;
  // normal: pairs (x0, x1) = (1, 0) by 1 and (x2, x3) = (0, 1) by 0.01.
  ASSERT_TRUE(run_ref(rope_op(x, pos, d, p), "rope.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(d.f()[1], std::sin(1.0f));
  EXPECT_FLOAT_EQ(d.f()[2], -std::sin(0.01f));
  EXPECT_FLOAT_EQ(d.f()[3], std::cos(0.01f));
  // neox: pairs (x0, x2) = (1, 0) by 1 and (x1, x3) = (0, 1) by 0.01.
  p.mode = RopeMode::kNeox;
  ASSERT_TRUE(run_ref(rope_op(x, pos, d, p), "rope.ref").ok());
  EXPECT_FLOAT_EQ(d.f()[0], std::cos(1.0f));
  EXPECT_FLOAT_EQ(d.f()[2], std::sin(1.0f));
  EXPECT_FLOAT_EQ(d.f()[1], -std::sin(0.01f));
  EXPECT_FLOAT_EQ(d.f()[3], std::cos(0.01f));
}

TEST(RefRope, AnglesFollowThePairFrequency) {
  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
    RopeParams p;
    p.mode = mode;
    p.n_dims = 16;
    p.freq_base = 500.0f;
    Tensor pos = positions(mode, {3});
    PairResult r = rotate_unit_pairs(p, 16, pos);
    for (int64_t i = 0; i < 8; ++i) {
      EXPECT_NEAR(r.angle[i], 3 * inv_freq(500, i, 16), 1e-6) << i;
      EXPECT_NEAR(r.magnitude[i], 1.0, 1e-6);
    }
  }
}

TEST(RefRope, PartialRotaryLeavesTailUntouched) {
  std::mt19937 rng(2);
  for (RopeMode mode : kModes) {
    Tensor x(DType::F32, {12, 2, 3}), d(DType::F32, {12, 2, 3});
    fill_uniform(x, rng);
    Tensor pos = positions(mode, {5, 6, 7});
    RopeParams p;
    p.mode = mode;
    p.n_dims = 4;
    p.sections = {1, 1, 0, 0};
    ASSERT_TRUE(run_ref(rope_op(x, pos, d, p), "rope.ref").ok());
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t j = 4; j < 12; ++j) EXPECT_EQ(d.f()[r * 12 + j], x.f()[r * 12 + j]);
      EXPECT_NE(d.f()[r * 12], x.f()[r * 12]);  // the rotated part did move
    }
  }
}

TEST(RefRope, MultiSectionWithEqualPositionsEqualsNeox) {
  std::mt19937 rng(3);
  Tensor x(DType::F32, {16, 3, 4}), ff(DType::F32, {6});
  fill_uniform(x, rng);
  fill_uniform(ff, rng, 0.5f, 4.0f);
  const std::vector<int32_t> t = {0, 7, 100, 3000};
  RopeParams p;
  p.n_dims = 12;
  p.freq_base = 1e6f;
  p.freq_scale = 0.5f;
  p.ext_factor = 1.0f;
  p.attn_factor = 0.9f;
  p.n_ctx_orig = 2048;
  Tensor want(DType::F32, {16, 3, 4});
  p.mode = RopeMode::kNeox;
  Tensor pos_neox = positions(RopeMode::kNeox, t);
  Op neox = rope_op(x, pos_neox, want, p);
  neox.src[2] = ff.v;
  ASSERT_TRUE(run_ref(neox, "rope.ref").ok());
  for (RopeMode mode : {RopeMode::kMrope, RopeMode::kImrope}) {
    for (std::array<int, 4> sec : {std::array<int, 4>{2, 2, 2, 0}, std::array<int, 4>{3, 2, 1, 0},
                                   std::array<int, 4>{1, 1, 1, 1}}) {
      Tensor d(DType::F32, {16, 3, 4});
      Tensor pos = positions(mode, t);
      p.mode = mode;
      p.sections = sec;
      Op op = rope_op(x, pos, d, p);
      op.src[2] = ff.v;
      ASSERT_TRUE(run_ref(op, "rope.ref").ok());
      EXPECT_EQ(d.floats(), want.floats()) << static_cast<int>(mode) << " " << sec[0];
    }
  }
}

TEST(RefRope, SectionSelection) {
  // Positions t=1, h=2, w=3, e=-1 for one token; n_dims = 12 (6 pairs).
  const double pos_of[4] = {1, 2, 3, -1};
  struct Case {
    RopeMode mode;
    std::array<int, 4> sections;
    std::array<int, 6> want;  // section of each pair
  };
  const Case cases[] = {
      // mrope: consecutive blocks.
      {RopeMode::kMrope, {2, 2, 2, 0}, {0, 0, 1, 1, 2, 2}},
      {RopeMode::kMrope, {1, 2, 1, 2}, {0, 1, 1, 2, 3, 3}},
      {RopeMode::kMrope, {2, 1, 1, 0}, {0, 0, 1, 2, 0, 0}},  // sum 4 < 6: wraps around
      // imrope: t h w t h w ... while each section lasts, then e.
      {RopeMode::kImrope, {2, 2, 2, 0}, {0, 1, 2, 0, 1, 2}},
      {RopeMode::kImrope, {1, 1, 1, 3}, {0, 1, 2, 3, 3, 3}},
      {RopeMode::kImrope, {2, 1, 1, 2}, {0, 1, 2, 0, 3, 3}},
  };
  for (const Case& c : cases) {
    RopeParams p;
    p.mode = c.mode;
    p.n_dims = 12;
    p.freq_base = 100.0f;
    p.sections = c.sections;
    Tensor pos = positions(c.mode, {1}, {2}, {3}, {-1});
    PairResult r = rotate_unit_pairs(p, 14, pos);
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_NEAR(r.angle[i], pos_of[c.want[i]] * inv_freq(100, i, 12), 1e-6)
          << static_cast<int>(c.mode) << " sections " << c.sections[0] << c.sections[1]
          << c.sections[2] << c.sections[3] << " pair " << i;
    }
  }
}

TEST(RefRope, YarnOffEqualsPlainRope) {
  std::mt19937 rng(4);
  for (RopeMode mode : kModes) {
    Tensor x(DType::F32, {8, 2, 3}), a(DType::F32, {8, 2, 3}), b(DType::F32, {8, 2, 3});
    fill_uniform(x, rng);
    Tensor pos = positions(mode, {1, 50, 4000});
    RopeParams plain;
    plain.mode = mode;
    plain.n_dims = 8;
    plain.sections = {2, 1, 1, 0};
    RopeParams yarn = plain;
    yarn.ext_factor = 0.0f;
    yarn.freq_scale = 1.0f;
    yarn.beta_fast = 32.0f;
    yarn.beta_slow = 1.0f;
    yarn.n_ctx_orig = 4096;
    ASSERT_TRUE(run_ref(rope_op(x, pos, a, plain), "rope.ref").ok());
    ASSERT_TRUE(run_ref(rope_op(x, pos, b, yarn), "rope.ref").ok());
    EXPECT_EQ(a.floats(), b.floats());
  }
}

TEST(RefRope, LinearScalingEqualsScaledPositions) {
  std::mt19937 rng(5);
  for (RopeMode mode : kModes) {
    Tensor x(DType::F32, {8, 2, 3}), a(DType::F32, {8, 2, 3}), b(DType::F32, {8, 2, 3});
    fill_uniform(x, rng);
    Tensor pos = positions(mode, {8, 12, 4000});
    Tensor pos_scaled = positions(mode, {2, 3, 1000});
    RopeParams p;
    p.mode = mode;
    p.n_dims = 8;
    p.sections = {1, 2, 1, 0};
    RopeParams lin = p;
    lin.freq_scale = 0.25f;
    ASSERT_TRUE(run_ref(rope_op(x, pos, a, lin), "rope.ref").ok());
    ASSERT_TRUE(run_ref(rope_op(x, pos_scaled, b, p), "rope.ref").ok());
    // Scaling by a power of two is exact: identical angles.
    EXPECT_EQ(a.floats(), b.floats());
  }
}

TEST(RefRope, YarnCorrectionDims) {
  // corr_dim(n_rot) = n_dims ln(n_ctx_orig / (2 pi n_rot)) / (2 ln base):
  // 64 ln(4096 / (64 pi)) / (2 ln 1e4) = 10.47 -> floor 10;
  // 64 ln(4096 / (2 pi)) / (2 ln 1e4) = 22.51 -> ceil 23.
  float dims[2];
  ref::rope_yarn_corr_dims(64, 4096, 10000.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[0], 10.0f);
  EXPECT_EQ(dims[1], 23.0f);
  // Clamped to [0, n_dims - 1].
  ref::rope_yarn_corr_dims(8, 4096, 10000.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[0], 1.0f);  // 8 * 3.014 / 18.42 = 1.31 -> 1
  EXPECT_EQ(dims[1], 3.0f);  // 2.81 -> 3, within 7
  ref::rope_yarn_corr_dims(64, 1 << 30, 10000.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[1], 63.0f);
}

TEST(RefRope, YarnRampAndMagnitude) {
  // n_dims 64, base 1e4, n_ctx_orig 4096: corr dims [10, 23]. Pairs up to 10
  // extrapolate (theta = theta_extrap), pairs from 23 interpolate (theta =
  // freq_scale * theta_extrap), in between the ramp mixes them; every pair's
  // magnitude is attn_factor * (1 + 0.1 ln(1 / freq_scale)).
  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
    for (float ext : {1.0f, 0.5f}) {
      RopeParams p;
      p.mode = mode;
      p.n_dims = 64;
      p.freq_scale = 0.25f;
      p.ext_factor = ext;
      p.attn_factor = 0.8f;
      p.n_ctx_orig = 4096;
      Tensor pos = positions(mode, {2});
      PairResult r = rotate_unit_pairs(p, 64, pos);
      for (int64_t i = 0; i < 32; ++i) {
        const double extrap = 2 * inv_freq(1e4, i, 64), interp = 0.25 * extrap;
        const double ramp = 1.0 - std::clamp((i - 10.0) / 13.0, 0.0, 1.0);
        const double mix = ramp * ext;
        EXPECT_NEAR(r.angle[i], interp * (1 - mix) + extrap * mix, 1e-6) << i;
        EXPECT_NEAR(r.magnitude[i], 0.8 * (1 + 0.1 * std::log(4.0)), 1e-6) << i;
      }
      EXPECT_NEAR(r.angle[5], 2 * inv_freq(1e4, 5, 64) * (ext == 1.0f ? 1.0 : 0.625), 1e-6);
      EXPECT_NEAR(r.angle[30], 0.5 * inv_freq(1e4, 30, 64), 1e-6);
    }
  }
}

TEST(RefRope, FreqFactorsDivideTheAngle) {
  RopeParams p;
  p.mode = RopeMode::kNeox;
  p.n_dims = 8;
  Tensor ff(DType::F32, {4});
  set_f32(ff, {1, 2, 4, 0.5f});
  Tensor pos = positions(RopeMode::kNeox, {2});
  PairResult r = rotate_unit_pairs(p, 8, pos, &ff);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_NEAR(r.angle[i], 2 * inv_freq(1e4, i, 8) / ff.f()[i], 1e-6);
}

TEST(RefRope, StridedAndInPlace) {
  // x as a view of 2 heads of width 8 inside rows of 24 floats (a fused qkv
  // row), rotated out of place, then in place.
  std::mt19937 rng(6);
  Tensor qkv(DType::F32, {24, 3}), xc(DType::F32, {8, 2, 3}), want(DType::F32, {8, 2, 3});
  fill_uniform(qkv, rng);
  TensorView xs = TensorView::contiguous(qkv.v.data, DType::F32, {8, 2, 3});
  xs.nb[2] = qkv.v.nb[1];
  for (int64_t t = 0; t < 3; ++t) std::memcpy(xc.v.row(0, t), qkv.v.row(t), 16 * sizeof(float));
  Tensor pos = positions(RopeMode::kNeox, {3, 9, 27});
  RopeParams p;
  p.mode = RopeMode::kNeox;
  p.n_dims = 6;
  ASSERT_TRUE(run_ref(rope_op(xc, pos, want, p), "rope.ref").ok());
  Tensor d(DType::F32, {8, 2, 3});
  Op op = rope_op(xc, pos, d, p);
  op.src[0] = xs;
  ASSERT_TRUE(run_ref(op, "rope.ref").ok());
  EXPECT_EQ(d.floats(), want.floats());
  const std::vector<float> untouched(qkv.f() + 16, qkv.f() + 24);
  op.dst = xs;  // in place, through the strided view
  ASSERT_TRUE(run_ref(op, "rope.ref").ok());
  for (int64_t t = 0; t < 3; ++t) {
    EXPECT_EQ(std::vector<float>(qkv.v.row<float>(t), qkv.v.row<float>(t) + 16),
              std::vector<float>(want.v.row<float>(0, t), want.v.row<float>(0, t) + 16));
  }
  EXPECT_EQ(std::vector<float>(qkv.f() + 16, qkv.f() + 24), untouched);
}

TEST(RefRope, BadSectionsAreAnError) {
  Tensor x(DType::F32, {8}), d(DType::F32, {8});
  Tensor pos = positions(RopeMode::kMrope, {1});
  RopeParams p;
  p.mode = RopeMode::kMrope;
  p.n_dims = 8;
  p.sections = {0, 0, 0, 0};
  Status s = run_ref(rope_op(x, pos, d, p), "rope.ref");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sections"), std::string::npos) << s.message();
  p.sections = {4, -1, 0, 0};
  EXPECT_FALSE(run_ref(rope_op(x, pos, d, p), "rope.ref").ok());
}

}  // namespace
}  // namespace folio::reftest
