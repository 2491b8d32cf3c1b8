// The reference recurrent kernels (ssm_conv.ref, gated_delta_net.ref) checked
// on hand-computed cases and against direct float64 implementations of the
// formulas in op.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace folio {
namespace ref_recurrent_test {

Status run_ref(const Op& op) {
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  return ref.run(op);
}

std::vector<float> random_vec(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// ---------------------------------------------------------------------------
// ssm_conv

struct Conv {
  int k = 3, channels = 2, n_t = 2, n_seq = 1;
  std::vector<float> x, w, bias, out;
  bool silu = false;

  void resize() {
    x.assign(static_cast<size_t>((k - 1 + n_t) * channels * n_seq), 0.0f);
    w.assign(static_cast<size_t>(k * channels), 0.0f);
    out.assign(static_cast<size_t>(channels * n_t * n_seq), 0.0f);
  }
  float& xat(int t, int c, int s) {
    return x[static_cast<size_t>((s * channels + c) * (k - 1 + n_t) + t)];
  }
  float& wat(int j, int c) { return w[static_cast<size_t>(c * k + j)]; }
  float at(int c, int t, int s) const {
    return out[static_cast<size_t>((s * n_t + t) * channels + c)];
  }

  Op op() {
    Op o;
    o.kind = OpKind::kSsmConv;
    o.src[0] = TensorView::contiguous(x.data(), DType::F32, {k - 1 + n_t, channels, n_seq});
    o.src[1] = TensorView::contiguous(w.data(), DType::F32, {k, channels});
    if (!bias.empty()) o.src[2] = TensorView::contiguous(bias.data(), DType::F32, {channels});
    o.dst = TensorView::contiguous(out.data(), DType::F32, {channels, n_t, n_seq});
    o.params = SsmConvParams{silu};
    return o;
  }
};

TEST(RefSsmConv, KnownTaps) {
  Conv c;
  c.resize();
  const float x0[] = {1, 2, 3, 4}, x1[] = {0.5f, -1, 2, 0};
  for (int t = 0; t < 4; ++t) c.xat(t, 0, 0) = x0[t], c.xat(t, 1, 0) = x1[t];
  c.wat(0, 0) = 1, c.wat(1, 0) = 10, c.wat(2, 0) = 100;  // tap 0 multiplies the oldest input
  c.wat(0, 1) = 2, c.wat(1, 1) = 0.5f, c.wat(2, 1) = -1;
  ASSERT_TRUE(run_ref(c.op()).ok());
  EXPECT_EQ(c.at(0, 0, 0), 321.0f);
  EXPECT_EQ(c.at(0, 1, 0), 432.0f);
  EXPECT_EQ(c.at(1, 0, 0), -1.5f);
  EXPECT_EQ(c.at(1, 1, 0), -1.0f);
  c.bias = {1.0f, -1.0f};
  ASSERT_TRUE(run_ref(c.op()).ok());
  EXPECT_EQ(c.at(0, 0, 0), 322.0f);
  EXPECT_EQ(c.at(1, 1, 0), -2.0f);
  c.silu = true;
  ASSERT_TRUE(run_ref(c.op()).ok());
  auto silu = [](double v) { return v / (1.0 + std::exp(-v)); };
  EXPECT_NEAR(c.at(0, 1, 0), silu(433.0), 1e-3);
  EXPECT_NEAR(c.at(1, 0, 0), silu(-2.5), 1e-6);
  EXPECT_NEAR(c.at(1, 1, 0), silu(-2.0), 1e-6);
}

// The multiply-add order is part of the definition (the fused in-place
// conv update must reproduce it bit for bit): ascending taps from 0.0f in
// f32, then the bias, then SiLU.
TEST(RefSsmConv, AscendingTapOrderInF32) {
  std::mt19937 rng(1);
  Conv c;
  c.k = 4, c.channels = 33, c.n_t = 5, c.n_seq = 3;
  c.resize();
  c.x = random_vec(c.x.size(), -2.0f, 2.0f, rng);
  c.w = random_vec(c.w.size(), -1.0f, 1.0f, rng);
  c.bias = random_vec(static_cast<size_t>(c.channels), -0.5f, 0.5f, rng);
  for (bool silu : {false, true}) {
    c.silu = silu;
    ASSERT_TRUE(run_ref(c.op()).ok());
    for (int s = 0; s < c.n_seq; ++s) {
      for (int t = 0; t < c.n_t; ++t) {
        for (int ch = 0; ch < c.channels; ++ch) {
          volatile float sum = 0.0f;  // volatile: one rounding per operation
          for (int j = 0; j < c.k; ++j) {
            volatile float prod = c.xat(t + j, ch, s) * c.wat(j, ch);
            sum = sum + prod;
          }
          float r = sum + c.bias[static_cast<size_t>(ch)];
          if (silu) r = r / (1.0f + std::exp(-r));
          double exact = c.bias[static_cast<size_t>(ch)];
          for (int j = 0; j < c.k; ++j)
            exact += static_cast<double>(c.xat(t + j, ch, s)) * c.wat(j, ch);
          if (silu) exact = exact / (1.0 + std::exp(-exact));
          ASSERT_EQ(c.at(ch, t, s), r) << s << " " << t << " " << ch;
          ASSERT_NEAR(c.at(ch, t, s), exact, 1e-5);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// gated_delta_net

struct Gdn {
  int sk = 4, sv = 4, hk = 1, hv = 1, n_t = 1, n_seq = 1;
  std::vector<float> q, k, v, g, beta, state, out, state_out;
  GatedDeltaNetParams params;

  void resize() {
    q.assign(static_cast<size_t>(sk * hk * n_t * n_seq), 0.0f);
    k = q;
    v.assign(static_cast<size_t>(sv * hv * n_t * n_seq), 0.0f);
    g.assign(static_cast<size_t>(hv * n_t * n_seq), 0.0f);
    beta = g;
    state.assign(static_cast<size_t>(sk * sv * hv * n_seq), 0.0f);
    out.assign(static_cast<size_t>(sv * hv * n_t * n_seq), 0.0f);
    state_out = state;
  }
  void randomize(std::mt19937& rng) {
    q = random_vec(q.size(), -1.0f, 1.0f, rng);
    k = random_vec(k.size(), -1.0f, 1.0f, rng);
    v = random_vec(v.size(), -1.0f, 1.0f, rng);
    g = random_vec(g.size(), -1.0f, -0.01f, rng);
    beta = random_vec(beta.size(), 0.05f, 0.95f, rng);
    state = random_vec(state.size(), -0.5f, 0.5f, rng);
    params.scale = 1.0f / std::sqrt(static_cast<float>(sk));
  }
  // in_place: the state output is the state input.
  Op op(bool in_place = false) {
    Op o;
    o.kind = OpKind::kGatedDeltaNet;
    o.src[0] = TensorView::contiguous(q.data(), DType::F32, {sk, hk, n_t, n_seq});
    o.src[1] = TensorView::contiguous(k.data(), DType::F32, {sk, hk, n_t, n_seq});
    o.src[2] = TensorView::contiguous(v.data(), DType::F32, {sv, hv, n_t, n_seq});
    o.src[3] = TensorView::contiguous(g.data(), DType::F32, {hv, n_t, n_seq});
    o.src[4] = TensorView::contiguous(beta.data(), DType::F32, {hv, n_t, n_seq});
    o.src[5] = TensorView::contiguous(state.data(), DType::F32, {sk, sv, hv, n_seq});
    o.dst = TensorView::contiguous(out.data(), DType::F32, {sv, hv, n_t, n_seq});
    o.dst2 = in_place ? o.src[5]
                      : TensorView::contiguous(state_out.data(), DType::F32, {sk, sv, hv, n_seq});
    o.params = params;
    return o;
  }
};

// op.h's formula, directly, in double. Returns out; `st` (the state, same
// layout as Gdn::state) is updated in place.
std::vector<double> gdn_f64(const Gdn& p, std::vector<double>& st) {
  std::vector<double> out(p.out.size());
  const int ratio = p.hv / p.hk;
  auto norm = [&](const float* x, std::vector<double>& y) {
    double ss = 0;
    for (int i = 0; i < p.sk; ++i) ss += static_cast<double>(x[i]) * x[i];
    const double n =
        p.params.l2_norm_qk ? std::max(std::sqrt(ss), static_cast<double>(p.params.eps)) : 1.0;
    for (int i = 0; i < p.sk; ++i) y[i] = x[i] / n;
  };
  std::vector<double> q(p.sk), k(p.sk);
  for (int s = 0; s < p.n_seq; ++s) {
    for (int h = 0; h < p.hv; ++h) {
      const int kh = p.params.head_map == HeadMap::kDiv ? h / ratio : h % p.hk;
      double* S = &st[static_cast<size_t>((s * p.hv + h) * p.sv * p.sk)];  // S[v * sk + i]
      for (int t = 0; t < p.n_t; ++t) {
        const size_t qk_off = static_cast<size_t>(((s * p.n_t + t) * p.hk + kh) * p.sk);
        norm(&p.q[qk_off], q);
        norm(&p.k[qk_off], k);
        for (double& x : q) x *= p.params.scale;
        const size_t gi = static_cast<size_t>((s * p.n_t + t) * p.hv + h);
        const double decay = std::exp(static_cast<double>(p.g[gi]));
        const double* vt = nullptr;
        std::vector<double> vv(p.sv);
        for (int r = 0; r < p.sv; ++r)
          vv[r] = p.v[static_cast<size_t>(((s * p.n_t + t) * p.hv + h) * p.sv + r)];
        vt = vv.data();
        for (int e = 0; e < p.sv * p.sk; ++e) S[e] *= decay;
        for (int r = 0; r < p.sv; ++r) {
          double m = 0;
          for (int i = 0; i < p.sk; ++i) m += S[r * p.sk + i] * k[i];
          const double d = p.beta[gi] * (vt[r] - m);
          for (int i = 0; i < p.sk; ++i) S[r * p.sk + i] += d * k[i];
        }
        for (int r = 0; r < p.sv; ++r) {
          double o = 0;
          for (int i = 0; i < p.sk; ++i) o += S[r * p.sk + i] * q[i];
          out[static_cast<size_t>(((s * p.n_t + t) * p.hv + h) * p.sv + r)] = o;
        }
      }
    }
  }
  return out;
}

double max_rel_err(const std::vector<float>& got, const std::vector<double>& want) {
  double scale = 0, err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, std::abs(want[i]));
    err = std::max(err, std::abs(got[i] - want[i]));
  }
  return err / scale;
}

TEST(RefGatedDeltaNet, HandComputedScalarState) {
  Gdn p;
  p.sk = p.sv = 1, p.n_t = 2;
  p.resize();
  p.state = {0.25f};
  p.q = {-3.0f, 5.0f};  // L2-normalised: -1, then 1
  p.k = {-3.0f, 2.0f};  // -1, then 1
  p.v = {2.0f, 0.0f};
  p.g = {0.0f, std::log(0.5f)};
  p.beta = {0.5f, 1.0f};
  ASSERT_TRUE(run_ref(p.op()).ok());
  // t0: S = 0.25; m = -0.25; d = 0.5 * 2.25 = 1.125; S = 0.25 - 1.125 = -0.875; out = 0.875.
  EXPECT_EQ(p.out[0], 0.875f);
  // t1: S = -0.4375; m = -0.4375; d = 0.4375; S = 0; out = 0.
  EXPECT_NEAR(p.out[1], 0.0f, 1e-7);
  EXPECT_NEAR(p.state_out[0], 0.0f, 1e-7);
}

TEST(RefGatedDeltaNet, MatchesFloat64Formula) {
  std::mt19937 rng(2);
  for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
    for (bool l2 : {true, false}) {
      Gdn p;
      p.sk = 16, p.sv = 8, p.hk = 2, p.hv = 4, p.n_t = 5, p.n_seq = 2;  // S_k != S_v on purpose
      p.resize();
      p.randomize(rng);
      p.params.head_map = map;
      p.params.l2_norm_qk = l2;
      if (!l2) {
        for (float& x : p.k) x *= 0.25f;  // keep the delta rule contractive
      }
      ASSERT_TRUE(run_ref(p.op()).ok());
      std::vector<double> st(p.state.begin(), p.state.end());
      const std::vector<double> want = gdn_f64(p, st);
      EXPECT_LT(max_rel_err(p.out, want), 1e-5);
      EXPECT_LT(max_rel_err(p.state_out, st), 1e-5);
    }
  }
}

TEST(RefGatedDeltaNet, HeadMapsDifferAndFollowTheirDefinition) {
  std::mt19937 rng(3);
  Gdn p;
  p.sk = p.sv = 8, p.hk = 2, p.hv = 4, p.n_t = 3;
  p.resize();
  p.randomize(rng);
  std::vector<float> outs[2];
  for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
    p.params.head_map = map;
    ASSERT_TRUE(run_ref(p.op()).ok());
    outs[static_cast<int>(map)] = p.out;
  }
  // Value head 1 uses key head 0 under kDiv (1 / 2) and key head 1 under kMod (1 % 2).
  for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
    Gdn m = p;
    m.params.head_map = map;
    std::vector<double> st(p.state.begin(), p.state.end());
    const std::vector<double> want = gdn_f64(m, st);
    EXPECT_LT(max_rel_err(outs[static_cast<int>(map)], want), 1e-5);
    const HeadMap other = map == HeadMap::kDiv ? HeadMap::kMod : HeadMap::kDiv;
    EXPECT_GT(max_rel_err(outs[static_cast<int>(other)], want), 1e-2);
  }
}

TEST(RefGatedDeltaNet, TokensInOneCallEqualChainedSingleTokenCalls) {
  std::mt19937 rng(4);
  Gdn all;
  all.sk = all.sv = 16, all.hk = 1, all.hv = 2, all.n_t = 6, all.n_seq = 2;
  all.resize();
  all.randomize(rng);
  ASSERT_TRUE(run_ref(all.op()).ok());

  Gdn one = all;
  one.n_t = 1;
  one.resize();
  one.params = all.params;
  one.state = all.state;
  for (int t = 0; t < all.n_t; ++t) {
    for (int s = 0; s < all.n_seq; ++s) {
      auto copy = [&](const std::vector<float>& from, std::vector<float>& to, int per_token) {
        std::memcpy(&to[static_cast<size_t>(s * per_token)],
                    &from[static_cast<size_t>((s * all.n_t + t) * per_token)],
                    per_token * sizeof(float));
      };
      copy(all.q, one.q, all.sk * all.hk);
      copy(all.k, one.k, all.sk * all.hk);
      copy(all.v, one.v, all.sv * all.hv);
      copy(all.g, one.g, all.hv);
      copy(all.beta, one.beta, all.hv);
    }
    ASSERT_TRUE(run_ref(one.op(/*in_place=*/true)).ok());
    for (int s = 0; s < all.n_seq; ++s) {
      const int n = all.sv * all.hv;
      EXPECT_EQ(
          std::memcmp(&one.out[static_cast<size_t>(s * n)],
                      &all.out[static_cast<size_t>((s * all.n_t + t) * n)], n * sizeof(float)),
          0)
          << "token " << t << " seq " << s;
    }
  }
  EXPECT_EQ(
      std::memcmp(one.state.data(), all.state_out.data(), all.state_out.size() * sizeof(float)), 0);
}

TEST(RefGatedDeltaNet, InPlaceEqualsSeparateOutput) {
  std::mt19937 rng(5);
  Gdn p;
  p.sk = p.sv = 32, p.hk = 2, p.hv = 4, p.n_t = 3, p.n_seq = 2;
  p.resize();
  p.randomize(rng);
  ASSERT_TRUE(run_ref(p.op()).ok());
  const std::vector<float> out = p.out, st = p.state_out;
  ASSERT_TRUE(run_ref(p.op(/*in_place=*/true)).ok());
  EXPECT_EQ(p.out, out);
  EXPECT_EQ(p.state, st);
}

TEST(RefGatedDeltaNet, PartialOverlapOfStatesIsAnError) {
  std::mt19937 rng(6);
  Gdn p;
  p.sk = p.sv = 4, p.hv = 2, p.n_seq = 2;
  p.resize();
  p.randomize(rng);
  p.state.resize(p.state.size() + 4);
  Op op = p.op();
  op.dst2 = TensorView::contiguous(p.state.data() + 4, DType::F32, {p.sk, p.sv, p.hv, p.n_seq});
  EXPECT_FALSE(run_ref(op).ok());
}

TEST(RefGatedDeltaNet, L2NormEpsIsAFloorOnTheNorm) {
  Gdn p;
  p.sk = 2, p.sv = 1;
  p.resize();
  p.params.eps = 1e-6f;
  p.state = {1.0f, 0.0f};  // S[0, :] = (1, 0); zero key: the state only decays (g = 0)
  p.q = {1e-8f, 0.0f};     // |q| < eps: q / eps = (0.01, 0), not q / sqrt(|q|^2 + eps)
  p.k = {0.0f, 0.0f};
  p.v = {0.5f};
  p.beta = {0.5f};
  ASSERT_TRUE(run_ref(p.op()).ok());
  EXPECT_NEAR(p.out[0], 0.01f, 1e-9);
  EXPECT_EQ(p.state_out, std::vector<float>({1.0f, 0.0f}));
}

// GDN's own normalisation is the kL2Norm op: normalising q and k with it
// first and switching l2_norm_qk off gives the same bits.
TEST(RefGatedDeltaNet, NormalisationEqualsTheL2NormOp) {
  std::mt19937 rng(8);
  Gdn p;
  p.sk = p.sv = 64, p.hk = 2, p.hv = 4, p.n_t = 3, p.n_seq = 2;
  p.resize();
  p.randomize(rng);
  ASSERT_TRUE(run_ref(p.op()).ok());
  const std::vector<float> out = p.out, st = p.state_out;
  for (std::vector<float>* x : {&p.q, &p.k}) {
    std::vector<float> normed(x->size());
    Op n;
    n.kind = OpKind::kL2Norm;
    n.src[0] = TensorView::contiguous(x->data(), DType::F32, {p.sk, p.hk * p.n_t * p.n_seq});
    n.dst = TensorView::contiguous(normed.data(), DType::F32, {p.sk, p.hk * p.n_t * p.n_seq});
    n.params = NormParams{p.params.eps};
    ASSERT_TRUE(run_ref(n).ok());
    *x = normed;
  }
  p.params.l2_norm_qk = false;
  ASSERT_TRUE(run_ref(p.op()).ok());
  EXPECT_EQ(p.out, out);
  EXPECT_EQ(p.state_out, st);
}

}  // namespace
}  // namespace folio
