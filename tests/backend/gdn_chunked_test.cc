// The chunked gated DeltaNet kernels (drivers/gdn_chunked.h): which kernel
// each CPU tier picks (the chunked form only for long sequences that allow
// it, so decode and short ops keep the bit-identical kernels), that a
// sequence's result does not depend on the other sequences of the op nor on
// the thread count (bit for bit), that the SIMD tiers give the same bytes,
// and the tolerance against a float64
// evaluation of op.h's formula. The parity harness compares the kernels
// with the reference over many shapes (tests/parity/cases_recurrent.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/drivers/gdn_chunked.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace folio {
namespace gdn_chunked_test {

std::vector<float> random_vec(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Inputs and outputs of one kGatedDeltaNet op, contiguous.
struct Gdn {
  int64_t s = 32, hk = 1, hv = 2, n_t = 64, n_seq = 1;
  std::vector<float> q, k, v, g, beta, state, out;
  GatedDeltaNetParams params;

  Gdn(int64_t s_, int64_t hk_, int64_t hv_, int64_t n_t_, int64_t n_seq_, std::mt19937& rng)
      : s(s_), hk(hk_), hv(hv_), n_t(n_t_), n_seq(n_seq_) {
    q = random_vec(static_cast<size_t>(s * hk * n_t * n_seq), -1, 1, rng);
    k = random_vec(q.size(), -1, 1, rng);
    v = random_vec(static_cast<size_t>(s * hv * n_t * n_seq), -1, 1, rng);
    g = random_vec(static_cast<size_t>(hv * n_t * n_seq), -1, -0.01f, rng);
    beta = random_vec(g.size(), 0.05f, 0.95f, rng);
    state = random_vec(static_cast<size_t>(s * s * hv * n_seq), -0.5f, 0.5f, rng);
    out.assign(v.size(), 0.0f);
    params.scale = 1.0f / std::sqrt(static_cast<float>(s));
  }
  Op op() {
    Op o;
    o.kind = OpKind::kGatedDeltaNet;
    o.src[0] = TensorView::contiguous(q.data(), DType::F32, {s, hk, n_t, n_seq});
    o.src[1] = TensorView::contiguous(k.data(), DType::F32, {s, hk, n_t, n_seq});
    o.src[2] = TensorView::contiguous(v.data(), DType::F32, {s, hv, n_t, n_seq});
    o.src[3] = TensorView::contiguous(g.data(), DType::F32, {hv, n_t, n_seq});
    o.src[4] = TensorView::contiguous(beta.data(), DType::F32, {hv, n_t, n_seq});
    o.src[5] = TensorView::contiguous(state.data(), DType::F32, {s, s, hv, n_seq});
    o.dst = TensorView::contiguous(out.data(), DType::F32, {s, hv, n_t, n_seq});
    o.dst2 = o.src[5];  // in place
    o.params = params;
    return o;
  }
  // Sequence `seq` alone, as a one-sequence problem.
  Gdn sequence(int64_t seq) const {
    Gdn one = *this;
    one.n_seq = 1;
    auto cut = [&](const std::vector<float>& from, std::vector<float>& to) {
      const size_t per = from.size() / static_cast<size_t>(n_seq);
      to.assign(from.begin() + static_cast<std::ptrdiff_t>(per * seq),
                from.begin() + static_cast<std::ptrdiff_t>(per * (seq + 1)));
    };
    cut(q, one.q), cut(k, one.k), cut(v, one.v), cut(g, one.g), cut(beta, one.beta);
    cut(state, one.state), cut(out, one.out);
    return one;
  }
};

std::string kernel_for(Isa isa, int64_t s, int64_t n_t, bool allow_chunked) {
  std::mt19937 rng(1);
  Gdn p(s, 1, 2, n_t, 1, rng);
  p.params.allow_chunked = allow_chunked;
  return CpuBackend(CpuBackendOptions{isa, false, nullptr}).kernel_name(p.op());
}

TEST(GdnChunked, ChosenOnlyForLongSequencesThatAllowIt) {
  // Scalar tier: the portable chunked kernel from 64 tokens, else the reference.
  EXPECT_EQ(kernel_for(Isa::kScalar, 32, 63, true), "gated_delta_net.ref");
  EXPECT_EQ(kernel_for(Isa::kScalar, 32, 64, true), "gated_delta_net.chunked.scalar");
  EXPECT_EQ(kernel_for(Isa::kScalar, 32, 64, false), "gated_delta_net.ref");
  if (active_isa() >= Isa::kAvx2) {
    EXPECT_EQ(kernel_for(Isa::kAvx2, 32, 1, true), "gated_delta_net.avx2");
    EXPECT_EQ(kernel_for(Isa::kAvx2, 32, 255, true), "gated_delta_net.avx2");
    EXPECT_EQ(kernel_for(Isa::kAvx2, 32, 256, true), "gated_delta_net.chunked.avx2");
    EXPECT_EQ(kernel_for(Isa::kAvx2, 32, 256, false), "gated_delta_net.avx2");
  }
  if (active_isa() >= Isa::kAvx512) {
    EXPECT_EQ(kernel_for(Isa::kAvx512, 32, 1, true), "gated_delta_net.avx512");
    EXPECT_EQ(kernel_for(Isa::kAvx512, 32, 63, true), "gated_delta_net.avx512");
    EXPECT_EQ(kernel_for(Isa::kAvx512, 32, 64, true), "gated_delta_net.chunked.avx512");
    EXPECT_EQ(kernel_for(Isa::kAvx512, 32, 64, false), "gated_delta_net.avx512");
    // S a multiple of 8, not 16: the chunked form (a masked last vector).
    EXPECT_EQ(kernel_for(Isa::kAvx512, 24, 300, true), "gated_delta_net.chunked.avx512");
    EXPECT_EQ(kernel_for(Isa::kAvx512, 24, 300, false), "gated_delta_net.ref");
  }
}

// Each (sequence, value head) is computed on its own: batching sequences
// together or splitting the work across threads changes no bit.
TEST(GdnChunked, SequenceResultIndependentOfBatchAndThreads) {
  std::mt19937 rng(2);
  Gdn batch(32, 2, 4, 300, 3, rng);  // >= 256 tokens: every tier's chunked kernel
  ThreadPool pool(3);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa > active_isa()) continue;
    CpuBackend one_thread(CpuBackendOptions{isa, false, nullptr});
    CpuBackend threads(CpuBackendOptions{isa, false, &pool});
    Gdn b1 = batch, b3 = batch;
    Op o1 = b1.op();
    ASSERT_NE(one_thread.kernel_name(o1).find("chunked"), std::string::npos) << isa_name(isa);
    ASSERT_TRUE(one_thread.run(o1).ok());
    ASSERT_TRUE(threads.run(b3.op()).ok());
    EXPECT_EQ(b1.out, b3.out) << isa_name(isa) << ": 3 threads vs 1";
    EXPECT_EQ(b1.state, b3.state) << isa_name(isa) << ": 3 threads vs 1";
    for (int64_t seq = 0; seq < batch.n_seq; ++seq) {
      Gdn alone = batch.sequence(seq);
      ASSERT_TRUE(one_thread.run(alone.op()).ok());
      const Gdn want = b1.sequence(seq);
      EXPECT_EQ(alone.out, want.out) << isa_name(isa) << ": sequence " << seq;
      EXPECT_EQ(alone.state, want.state) << isa_name(isa) << ": sequence " << seq;
    }
  }
}

// The chunked form is written once over the traits type (simd/gdn_chunked.h):
// every SIMD tier gives the same bytes, with and without the L2 norm, for S
// in whole vectors and with a half-vector tail (24), and with a partial
// last chunk (300 = 4 x 64 + 44).
TEST(GdnChunked, SimdTiersGiveTheSameBytes) {
  if (active_isa() < Isa::kAvx512) GTEST_SKIP() << "hardware: needs AVX-512 to compare with AVX2";
  for (int64_t s : {32, 24}) {
    for (bool l2 : {true, false}) {
      std::mt19937 rng(static_cast<unsigned>(4 + s));
      Gdn input(s, 2, 4, 300, 2, rng);
      input.params.l2_norm_qk = l2;
      Gdn a = input, b = input;
      CpuBackend avx2(CpuBackendOptions{Isa::kAvx2, false, nullptr});
      CpuBackend avx512(CpuBackendOptions{Isa::kAvx512, false, nullptr});
      ASSERT_EQ(avx2.kernel_name(a.op()), "gated_delta_net.chunked.avx2");
      ASSERT_EQ(avx512.kernel_name(b.op()), "gated_delta_net.chunked.avx512");
      ASSERT_TRUE(avx2.run(a.op()).ok());
      ASSERT_TRUE(avx512.run(b.op()).ok());
      EXPECT_EQ(0, std::memcmp(a.out.data(), b.out.data(), a.out.size() * 4)) << s << " " << l2;
      EXPECT_EQ(0, std::memcmp(a.state.data(), b.state.data(), a.state.size() * 4))
          << s << " " << l2;
      EXPECT_NE(a.out, input.out);  // the op ran
    }
  }
}

// op.h's formula in double (q, k normalised in double), one sequence.
void gdn_f64(const Gdn& p, std::vector<double>& out, std::vector<double>& st) {
  const int64_t s = p.s, ratio = p.hv / p.hk;
  st.assign(p.state.begin(), p.state.end());
  out.assign(p.out.size(), 0.0);
  std::vector<double> q(static_cast<size_t>(s)), k(static_cast<size_t>(s));
  auto norm = [&](const float* x, std::vector<double>& y) {
    double ss = 0;
    for (int64_t i = 0; i < s; ++i) ss += static_cast<double>(x[i]) * x[i];
    const double n = std::max(std::sqrt(ss), static_cast<double>(p.params.eps));
    for (int64_t i = 0; i < s; ++i) y[static_cast<size_t>(i)] = x[i] / n;
  };
  for (int64_t h = 0; h < p.hv; ++h) {
    const int64_t kh = h / ratio;
    double* S = &st[static_cast<size_t>(h * s * s)];  // S[v * s + i]
    for (int64_t t = 0; t < p.n_t; ++t) {
      norm(&p.q[static_cast<size_t>((t * p.hk + kh) * s)], q);
      norm(&p.k[static_cast<size_t>((t * p.hk + kh) * s)], k);
      for (double& x : q) x *= p.params.scale;
      const size_t gi = static_cast<size_t>(t * p.hv + h);
      const double decay = std::exp(static_cast<double>(p.g[gi]));
      for (int64_t e = 0; e < s * s; ++e) S[e] *= decay;
      for (int64_t r = 0; r < s; ++r) {
        double m = 0;
        for (int64_t i = 0; i < s; ++i) m += S[r * s + i] * k[static_cast<size_t>(i)];
        const double d = p.beta[gi] * (p.v[static_cast<size_t>((t * p.hv + h) * s + r)] - m);
        for (int64_t i = 0; i < s; ++i) S[r * s + i] += d * k[static_cast<size_t>(i)];
      }
      for (int64_t r = 0; r < s; ++r) {
        double o = 0;
        for (int64_t i = 0; i < s; ++i) o += S[r * s + i] * q[static_cast<size_t>(i)];
        out[static_cast<size_t>((t * p.hv + h) * s + r)] = o;
      }
    }
  }
}

double nmse(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return err / ref;
}

// Against float64 the chunked kernels are as close as the token-by-token
// reference is (both well inside the stated bound).
TEST(GdnChunked, WithinToleranceOfFloat64Formula) {
  std::mt19937 rng(3);
  const Gdn input(64, 1, 2, 300, 1, rng);
  std::vector<double> want_out, want_state;
  gdn_f64(input, want_out, want_state);
  Gdn ref = input;
  ASSERT_TRUE(CpuBackend(CpuBackendOptions{Isa::kScalar, true, nullptr}).run(ref.op()).ok());
  const double ref_err = std::max(nmse(ref.out, want_out), nmse(ref.state, want_state));
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa > active_isa()) continue;
    Gdn got = input;
    CpuBackend b(CpuBackendOptions{isa, false, nullptr});
    ASSERT_NE(b.kernel_name(got.op()).find("chunked"), std::string::npos) << isa_name(isa);
    ASSERT_TRUE(b.run(got.op()).ok());
    const double err = std::max(nmse(got.out, want_out), nmse(got.state, want_state));
    EXPECT_LT(err, cpu::kGdnChunkMaxNmse) << isa_name(isa);
    EXPECT_LT(err, 100 * ref_err + 1e-14) << isa_name(isa) << " vs the reference's " << ref_err;
  }
}

}  // namespace
}  // namespace folio
