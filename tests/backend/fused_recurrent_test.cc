// The fused recurrent-state decode ops (kSsmConvUpdate, kGatedDeltaNetUpdate,
// kSsmScanUpdate) on every CPU kernel this machine runs (reference, AVX2, top ISA tier, top
// tier on two threads): hand-computed cases, the scratch rule (a sequence reading a
// slot that another sequence writes in the same op sees the OLD state, in
// both processing orders), run-time id errors that leave everything
// untouched, structural validation, and bit-identity with the unfused path
// (gather by memcpy, plain op, scatter) on strided pools. The parity harness
// (tests/parity/cases_fused.cc) covers the realistic shapes.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace folio {
namespace fused_recurrent_test {

struct NamedBackend {
  std::string name;
  std::unique_ptr<CpuBackend> backend;
};

// Reference, AVX2 (capped by the machine), top tier, top tier on two threads.
std::vector<NamedBackend>& backends() {
  static ThreadPool pool(2);
  static std::vector<NamedBackend> b = [] {
    std::vector<NamedBackend> v;
    v.push_back(
        {"ref", std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kScalar, true, nullptr})});
    v.push_back(
        {"avx2", std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kAvx2, false, nullptr})});
    v.push_back({"top", std::make_unique<CpuBackend>(CpuBackendOptions{})});
    v.push_back(
        {"top-mt2", std::make_unique<CpuBackend>(CpuBackendOptions{Isa::kAmx, false, &pool})});
    return v;
  }();
  return b;
}

// On an AVX-512 machine the top tier must pick the AVX-512 kernel for a
// SIMD-shaped op, so that these tests provably exercise it.
void expect_top_kernel(const NamedBackend& nb, const Op& op, const char* avx512_name) {
  if (nb.name == "top" && active_isa() >= Isa::kAvx512) {
    EXPECT_EQ(nb.backend->kernel_name(op), avx512_name);
  }
}

TensorView view(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  TensorView t = TensorView::contiguous(v.data(), DType::F32, shape);
  EXPECT_EQ(t.nelements(), static_cast<int64_t>(v.size()));
  return t;
}
TensorView view(std::vector<int32_t>& v) {
  return TensorView::contiguous(v.data(), DType::I32, {static_cast<int64_t>(v.size())});
}

std::vector<float> random_vec(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The first backend's (the reference's) output and pool are kept; every
// later backend's must be the same bits.
template <class Update>
void expect_same_as_first(const Update& u, std::vector<float>& first_out,
                          std::vector<float>& first_pool) {
  if (first_out.empty()) {
    first_out = u.out, first_pool = u.pool;
  } else {
    EXPECT_EQ(u.out, first_out) << "differs from the reference backend";
    EXPECT_EQ(u.pool, first_pool) << "differs from the reference backend";
  }
}

// A fused update (GdnUpdate, ScanUpdate) with an id past the pool, a
// negative destination or a duplicate destination fails on every backend
// and writes neither its output nor the pool.
template <class Update>
void expect_bad_slots_write_nothing() {
  for (auto& nb : backends()) {
    SCOPED_TRACE(nb.name);
    for (const auto& [ids, dst] :
         std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>>{
             {{0, 9, 1}, {0, 1, 2}}, {{0, 1, 2}, {0, 1, -2}}, {{0, 1, 2}, {4, 1, 4}}}) {
      Update u;
      std::mt19937 rng(3);
      u.fill(rng);
      u.ids = ids;
      u.dst_slots = dst;
      const std::vector<float> pool = u.pool, out = u.out;
      Status st = nb.backend->run(u.op());
      EXPECT_FALSE(st.ok());
      EXPECT_EQ(u.pool, pool);
      EXPECT_EQ(u.out, out);
    }
  }
}

// ---------------------------------------------------------------------------
// Conv update. Integer-valued inputs keep every sum exact, so expectations are
// plain numbers.

struct ConvUpdate {
  int k = 3, channels = 2, n_seq = 2, n_slots = 3;
  std::vector<float> x, w, bias, pool, out;  // x [ch, n_seq], w [K, ch], pool [K-1, ch, n_slots]
  std::vector<int32_t> ids, dst_slots;
  bool silu = false;

  void resize() {
    x.assign(static_cast<size_t>(channels * n_seq), 0.0f);
    w.assign(static_cast<size_t>(k * channels), 0.0f);
    pool.assign(static_cast<size_t>((k - 1) * channels * n_slots), 0.0f);
    out.assign(static_cast<size_t>(channels * n_seq), -7.0f);
  }
  float& tap(int slot, int c, int j) {
    return pool[static_cast<size_t>((slot * channels + c) * (k - 1) + j)];
  }
  float& wat(int j, int c) { return w[static_cast<size_t>(c * k + j)]; }
  float& xat(int c, int s) { return x[static_cast<size_t>(s * channels + c)]; }
  float at(int c, int s) const { return out[static_cast<size_t>(s * channels + c)]; }

  Op op() {
    Op o;
    o.kind = OpKind::kSsmConvUpdate;
    o.params = SsmConvParams{silu};
    o.src[0] = view(x, {channels, n_seq});
    o.src[1] = view(w, {k, channels});
    if (!bias.empty()) o.src[2] = view(bias, {channels});
    o.src[3] = view(pool, {k - 1, channels, n_slots});
    o.src[4] = view(ids);
    if (!dst_slots.empty()) o.src[5] = view(dst_slots);
    o.dst = view(out, {channels, n_seq});
    o.dst2 = o.src[3];
    return o;
  }
};

// Slot s, channel c holds taps {slot * 10 + c * 2 + 1, + 2, ...}.
void fill_taps(ConvUpdate& cu) {
  for (int s = 0; s < cu.n_slots; ++s)
    for (int c = 0; c < cu.channels; ++c)
      for (int j = 0; j < cu.k - 1; ++j)
        cu.tap(s, c, j) = static_cast<float>(s * 10 + c * 2 + j + 1);
}

TEST(FusedConvUpdate, HandCase) {
  for (auto& nb : backends()) {
    SCOPED_TRACE(nb.name);
    ConvUpdate cu;
    cu.resize();
    fill_taps(cu);  // slot 0: ch0 [1 2] ch1 [3 4]; slot 1: [11 12] [13 14]; slot 2: [21 22] [23 24]
    cu.wat(0, 0) = 1, cu.wat(1, 0) = 10, cu.wat(2, 0) = 100;  // tap 0 multiplies the oldest input
    cu.wat(0, 1) = 2, cu.wat(1, 1) = -1, cu.wat(2, 1) = 3;
    cu.xat(0, 0) = 5, cu.xat(1, 0) = -2;  // sequence 0: reads slot 2, writes slot 1
    cu.xat(0, 1) = 7, cu.xat(1, 1) = 4;   // sequence 1: slot 0 in place
    cu.ids = {2, 0};
    cu.dst_slots = {1, 0};
    ASSERT_TRUE(nb.backend->run(cu.op()).ok());
    EXPECT_EQ(cu.at(0, 0), 21 + 220 + 500);
    EXPECT_EQ(cu.at(1, 0), 46 - 24 - 6);
    EXPECT_EQ(cu.at(0, 1), 1 + 20 + 700);
    EXPECT_EQ(cu.at(1, 1), 6 - 4 + 12);
    const std::vector<float> want_pool = {
        2,  7,  4,  4,    // slot 0: shifted, x of sequence 1 appended
        22, 5,  24, -2,   // slot 1: slot 2 shifted, x of sequence 0
        21, 22, 23, 24};  // slot 2: untouched
    EXPECT_EQ(cu.pool, want_pool);

    // Bias and SiLU: the bias is added last, SiLU is x / (1 + exp(-x)).
    fill_taps(cu);
    cu.bias = {0.5f, -1.0f};
    cu.silu = true;
    ASSERT_TRUE(nb.backend->run(cu.op()).ok());
    const float pre = (21.0f + 220.0f + 500.0f) + 0.5f;
    EXPECT_EQ(cu.at(0, 0), pre / (1.0f + std::exp(-pre)));
    const float pre1 = (6.0f - 4.0f + 12.0f) - 1.0f;
    EXPECT_EQ(cu.at(1, 1), pre1 / (1.0f + std::exp(-pre1)));
  }
}

TEST(FusedConvUpdate, DestinationsDefaultToIds) {
  for (auto& nb : backends()) {
    SCOPED_TRACE(nb.name);
    ConvUpdate cu;
    cu.k = 2, cu.channels = 1, cu.n_seq = 2, cu.n_slots = 2;
    cu.resize();
    fill_taps(cu);  // slot 0: [1], slot 1: [11]
    cu.wat(0, 0) = 2, cu.wat(1, 0) = 3;
    cu.xat(0, 0) = 4, cu.xat(0, 1) = 5;
    cu.ids = {1, 0};
    ASSERT_TRUE(nb.backend->run(cu.op()).ok());
    EXPECT_EQ(cu.at(0, 0), 22 + 12);
    EXPECT_EQ(cu.at(0, 1), 2 + 15);
    EXPECT_EQ(cu.pool, (std::vector<float>{5, 4}));
  }
}

// Sequence a reads slot x while sequence b writes it: a must see the old
// taps, whichever of the two runs first; 48 channels cover the SIMD blocks
// and the scalar tail of remainder channels (48 = 3 blocks; 53 adds 5).
TEST(FusedConvUpdate, ReadsTheOldStateOfASlotAnotherSequenceWrites) {
  for (int channels : {48, 53}) {
    for (int order = 0; order < 2; ++order) {
      for (auto& nb : backends()) {
        SCOPED_TRACE(nb.name + " channels " + std::to_string(channels) + " order " +
                     std::to_string(order));
        ConvUpdate cu;
        cu.k = 4, cu.channels = channels, cu.n_seq = 2, cu.n_slots = 3;
        cu.resize();
        fill_taps(cu);
        for (int c = 0; c < channels; ++c) {
          for (int j = 0; j < 4; ++j) cu.wat(j, c) = static_cast<float>((c + j) % 5 - 2);
          cu.xat(c, 0) = static_cast<float>(100 + c);
          cu.xat(c, 1) = static_cast<float>(200 + c);
        }
        // order 0: sequence 0 reads slot 1 (writes 2), sequence 1 updates slot 1 in place.
        // order 1: sequence 0 updates slot 1 in place, sequence 1 reads slot 1 (writes 0).
        const int reader = order == 0 ? 0 : 1, writer = 1 - reader;
        cu.ids = {1, 1};
        cu.dst_slots = order == 0 ? std::vector<int32_t>{2, 1} : std::vector<int32_t>{1, 0};
        const std::vector<float> old = cu.pool;
        ASSERT_TRUE(nb.backend->run(cu.op()).ok());
        const int reader_dst = cu.dst_slots[static_cast<size_t>(reader)];
        for (int c = 0; c < channels; ++c) {
          const float* taps = &old[static_cast<size_t>((1 * channels + c) * 3)];
          for (int s : {reader, writer}) {
            float want = 0.0f;
            for (int j = 0; j < 3; ++j) want += taps[j] * cu.wat(j, c);
            want += cu.xat(c, s) * cu.wat(3, c);
            EXPECT_EQ(cu.at(c, s), want) << "sequence " << s << " channel " << c;
          }
          for (int j = 0; j < 2; ++j) {
            EXPECT_EQ(cu.tap(reader_dst, c, j), taps[j + 1]);
            EXPECT_EQ(cu.tap(1, c, j), taps[j + 1]);
          }
          EXPECT_EQ(cu.tap(reader_dst, c, 2), cu.xat(c, reader));
          EXPECT_EQ(cu.tap(1, c, 2), cu.xat(c, writer));
        }
      }
    }
  }
}

// Random inputs, every supported width: the fused op equals the unfused
// path (window assembled by memcpy, the plain ssm_conv, shifted taps
// scattered) on the same backend, bit for bit, and every backend agrees.
// 37 channels: two SIMD blocks and a scalar tail.
TEST(FusedConvUpdate, EqualsUnfusedPathOnEveryBackend) {
  for (int k : {2, 3, 4, 5, 8}) {
    for (bool silu : {false, true}) {
      std::vector<float> first_out, first_pool;
      for (auto& nb : backends()) {
        SCOPED_TRACE(nb.name + " K " + std::to_string(k) + (silu ? " silu" : ""));
        std::mt19937 rng(static_cast<unsigned>(k));
        ConvUpdate cu;
        cu.k = k, cu.channels = 37, cu.n_seq = 4, cu.n_slots = 6, cu.silu = silu;
        cu.resize();
        cu.x = random_vec(cu.x.size(), -2, 2, rng);
        cu.w = random_vec(cu.w.size(), -1, 1, rng);
        cu.pool = random_vec(cu.pool.size(), -2, 2, rng);
        if (k % 2 == 1) cu.bias = random_vec(static_cast<size_t>(cu.channels), -1, 1, rng);
        cu.ids = {
            3, 3, 0,
            5};  // seq 0 in place; 1 reads slot 3 (seq 0 writes it); 3 reads an unwritten slot
        cu.dst_slots = {3, 1, 0, 2};

        // Unfused: window [K, ch, n_seq], plain op, scatter.
        const int taps = k - 1;
        std::vector<float> window(static_cast<size_t>(k * cu.channels * cu.n_seq));
        std::vector<float> want_out(cu.out.size()), want_pool = cu.pool;
        for (int s = 0; s < cu.n_seq; ++s) {
          for (int c = 0; c < cu.channels; ++c) {
            float* rec = &window[static_cast<size_t>((s * cu.channels + c) * k)];
            std::memcpy(rec, &cu.tap(cu.ids[s], c, 0), static_cast<size_t>(taps) * sizeof(float));
            rec[taps] = cu.xat(c, s);
          }
        }
        Op plain;
        plain.kind = OpKind::kSsmConv;
        plain.params = SsmConvParams{silu};
        plain.src[0] = view(window, {k, cu.channels, cu.n_seq});
        plain.src[1] = view(cu.w, {k, cu.channels});
        if (!cu.bias.empty()) plain.src[2] = view(cu.bias, {cu.channels});
        plain.dst = view(want_out, {cu.channels, 1, cu.n_seq});
        ASSERT_TRUE(nb.backend->run(plain).ok());
        for (int s = 0; s < cu.n_seq; ++s) {
          for (int c = 0; c < cu.channels; ++c) {
            const float* rec = &window[static_cast<size_t>((s * cu.channels + c) * k)];
            const size_t at = static_cast<size_t>((cu.dst_slots[s] * cu.channels + c) * taps);
            std::memcpy(&want_pool[at], rec + 1, static_cast<size_t>(taps) * sizeof(float));
          }
        }

        expect_top_kernel(nb, cu.op(), "ssm_conv_update.avx512");
        ASSERT_TRUE(nb.backend->run(cu.op()).ok());
        EXPECT_EQ(cu.out, want_out);
        EXPECT_EQ(cu.pool, want_pool);
        if (first_out.empty()) {
          first_out = cu.out, first_pool = cu.pool;
        } else {
          EXPECT_EQ(cu.out, first_out) << "differs from the reference backend";
          EXPECT_EQ(cu.pool, first_pool) << "differs from the reference backend";
        }
      }
    }
  }
}

// Run-time id errors: nothing written, neither the pool nor dst.
TEST(FusedConvUpdate, BadIdsAreErrorsAndWriteNothing) {
  struct Bad {
    std::vector<int32_t> ids, dst_slots;
    StatusCode code;
  };
  const Bad cases[] = {
      {{0, 3}, {0, 1}, StatusCode::kOutOfRange},       // id past the pool
      {{-1, 1}, {0, 1}, StatusCode::kOutOfRange},      // negative id
      {{0, 1}, {0, 7}, StatusCode::kOutOfRange},       // destination past the pool
      {{0, 1}, {2, 2}, StatusCode::kInvalidArgument},  // duplicate destination
      {{1, 1}, {}, StatusCode::kInvalidArgument},      // duplicate (destinations = ids)
  };
  for (const Bad& bad : cases) {
    for (auto& nb : backends()) {
      SCOPED_TRACE(nb.name);
      ConvUpdate cu;
      cu.k = 4, cu.channels = 32, cu.n_seq = 2, cu.n_slots = 3;
      cu.resize();
      fill_taps(cu);
      std::fill(cu.w.begin(), cu.w.end(), 1.0f);
      std::fill(cu.x.begin(), cu.x.end(), 3.0f);
      cu.ids = bad.ids;
      cu.dst_slots = bad.dst_slots;
      const std::vector<float> pool = cu.pool, out = cu.out;
      Status st = nb.backend->run(cu.op());
      EXPECT_EQ(st.code(), bad.code) << st.to_string();
      EXPECT_EQ(cu.pool, pool);
      EXPECT_EQ(cu.out, out);
    }
  }
}

TEST(FusedConvUpdate, Validation) {
  ConvUpdate cu;
  cu.resize();
  cu.ids = {0, 1};
  EXPECT_TRUE(validate_op(cu.op()).ok());
  Op o = cu.op();
  o.dst2 = TensorView{};  // the pool must be named as the in-place output
  EXPECT_FALSE(validate_op(o).ok());
  o = cu.op();
  std::vector<float> other(cu.pool.size());
  o.dst2 = view(other, {cu.k - 1, cu.channels, cu.n_slots});  // not the pool itself
  EXPECT_FALSE(validate_op(o).ok());
  o = cu.op();
  o.src[4] = TensorView::contiguous(cu.ids.data(), DType::I32, {1});  // one id for two sequences
  EXPECT_FALSE(validate_op(o).ok());
  o = cu.op();
  o.src[3].ne[0] = cu.k;  // taps must be K - 1
  o.dst2 = o.src[3];
  EXPECT_FALSE(validate_op(o).ok());
  o = cu.op();
  o.src[4].dtype = DType::F32;
  EXPECT_FALSE(validate_op(o).ok());
  // dst inside the pool: invalid, and so refused before anything runs.
  o = cu.op();
  o.dst.data = cu.pool.data();
  EXPECT_FALSE(validate_op(o).ok());
  EXPECT_EQ(backends()[0].backend->run(o).code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Gated DeltaNet update.

// The unfused path of a fused state update `fused` on `b`: gather each
// sequence's state (`shape` [row length, rows per head, heads, n_seq]; a
// pool row every `row_stride` floats) by ids (memcpy), run the plain op
// `plain_kind` in place on the gathered states, scatter them to the
// destinations (dst_slots, else ids). Returns (out, pool after).
std::pair<std::vector<float>, std::vector<float>> unfused_state_update(
    Backend& b, const Op& fused, OpKind plain_kind, const std::vector<float>& pool,
    const std::vector<int32_t>& ids, const std::vector<int32_t>& dst_slots,
    std::array<int64_t, 4> shape, int64_t row_stride) {
  const auto [len, rows, heads, n_seq] = shape;
  auto state_row = [&](int64_t s, int64_t h, int64_t r) {
    return static_cast<size_t>(((s * heads + h) * rows + r) * len);
  };
  auto pool_row = [&](int64_t slot, int64_t h, int64_t r) {
    return static_cast<size_t>(((slot * heads + h) * rows + r) * row_stride);
  };
  const size_t row_bytes = static_cast<size_t>(len) * sizeof(float);
  std::vector<float> states(static_cast<size_t>(len * rows * heads * n_seq));
  std::vector<float> o(static_cast<size_t>(fused.dst.nelements()));
  for (int64_t s = 0; s < n_seq; ++s)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(&states[state_row(s, h, r)], &pool[pool_row(ids[s], h, r)], row_bytes);
  Op plain = fused;
  plain.kind = plain_kind;
  plain.src[5] = view(states, {len, rows, heads, n_seq});
  plain.src[6] = plain.src[7] = TensorView{};
  plain.dst = view(o, {fused.dst.ne[0], fused.dst.ne[1], fused.dst.ne[2], fused.dst.ne[3]});
  plain.dst2 = plain.src[5];
  EXPECT_TRUE(b.run(plain).ok());
  std::vector<float> after = pool;
  const std::vector<int32_t>& to = dst_slots.empty() ? ids : dst_slots;
  for (int64_t s = 0; s < n_seq; ++s)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(&after[pool_row(to[s], h, r)], &states[state_row(s, h, r)], row_bytes);
  return {o, after};
}

struct GdnUpdate {
  int64_t sk = 16, sv = 16, hk = 1, hv = 2, n_seq = 3, n_slots = 5;
  int64_t row_pad = 0;  // extra floats after every state row of the pool (a strided pool)
  std::vector<float> q, k, v, g, beta, pool, out;
  std::vector<int32_t> ids, dst_slots;
  GatedDeltaNetParams params;

  int64_t row_stride() const { return sk + row_pad; }
  void fill(std::mt19937& rng) {
    q = random_vec(static_cast<size_t>(sk * hk * n_seq), -1, 1, rng);
    k = random_vec(static_cast<size_t>(sk * hk * n_seq), -1, 1, rng);
    v = random_vec(static_cast<size_t>(sv * hv * n_seq), -1, 1, rng);
    g = random_vec(static_cast<size_t>(hv * n_seq), -1.0f, -0.01f, rng);
    beta = random_vec(static_cast<size_t>(hv * n_seq), 0.05f, 0.95f, rng);
    pool = random_vec(static_cast<size_t>(row_stride() * sv * hv * n_slots), -0.5f, 0.5f, rng);
    out.assign(static_cast<size_t>(sv * hv * n_seq), -7.0f);
    params.scale = 1.0f / std::sqrt(static_cast<float>(sk));
  }
  TensorView pool_view() {
    TensorView t = TensorView::contiguous(pool.data(), DType::F32, {sk, sv, hv, n_slots});
    const size_t row = static_cast<size_t>(row_stride()) * sizeof(float);
    t.nb = {sizeof(float), row, row * static_cast<size_t>(sv), row * static_cast<size_t>(sv * hv)};
    return t;
  }
  Op op() {
    Op o;
    o.kind = OpKind::kGatedDeltaNetUpdate;
    o.params = params;
    o.src[0] = view(q, {sk, hk, 1, n_seq});
    o.src[1] = view(k, {sk, hk, 1, n_seq});
    o.src[2] = view(v, {sv, hv, 1, n_seq});
    o.src[3] = view(g, {hv, 1, n_seq});
    o.src[4] = view(beta, {hv, 1, n_seq});
    o.src[5] = pool_view();
    o.src[6] = view(ids);
    if (!dst_slots.empty()) o.src[7] = view(dst_slots);
    o.dst = view(out, {sv, hv, 1, n_seq});
    o.dst2 = o.src[5];
    return o;
  }
  float* row(int64_t slot, int64_t h, int64_t r) {
    return &pool[static_cast<size_t>(((slot * hv + h) * sv + r) * row_stride())];
  }

  // The unfused path on `b` (unfused_state_update): returns (out, pool after).
  std::pair<std::vector<float>, std::vector<float>> unfused(Backend& b) {
    return unfused_state_update(b, op(), OpKind::kGatedDeltaNet, pool, ids, dst_slots,
                                {sk, sv, hv, n_seq}, row_stride());
  }
};

// S_k = S_v = 1, no normalisation, decay 1: S' = S + beta (v - S k) k,
// out = S' q. Sequence 0 reads slot 1 (written by sequence 1 in place) and
// writes slot 0.
TEST(FusedGatedDeltaNetUpdate, HandCase) {
  for (auto& nb : backends()) {
    SCOPED_TRACE(nb.name);
    GdnUpdate gu;
    gu.sk = gu.sv = 1, gu.hk = gu.hv = 1, gu.n_seq = 2, gu.n_slots = 2;
    std::mt19937 rng(1);
    gu.fill(rng);
    gu.params.l2_norm_qk = false;
    gu.params.scale = 1.0f;
    gu.q = {2, 3};
    gu.k = {1, 2};
    gu.v = {5, 10};
    gu.g = {0, 0};
    gu.beta = {0.5f, 0.25f};
    gu.pool = {4, 2};  // slot 0, slot 1
    gu.ids = {1, 1};
    gu.dst_slots = {0, 1};
    ASSERT_TRUE(nb.backend->run(gu.op()).ok());
    // Sequence 0 on the old slot 1: S = 2, m = 2, d = 0.5 * 3 = 1.5, S' = 3.5, out = 7.
    // Sequence 1 on slot 1: S = 2, m = 4, d = 0.25 * 6 = 1.5, S' = 2 + 3 = 5, out = 15.
    EXPECT_EQ(gu.out, (std::vector<float>{7, 15}));
    EXPECT_EQ(gu.pool, (std::vector<float>{3.5f, 5}));
  }
}

// Random states on a strided pool (padded rows) with crossing ids: the fused
// op equals the unfused path on the same backend, bit for bit, and the
// kernels of every tier agree. Shapes with S % 16 == 0 reach the SIMD
// kernels; S = 24 falls back to the reference on every tier.
TEST(FusedGatedDeltaNetUpdate, EqualsUnfusedPathOnEveryBackend) {
  for (int64_t s_dim : {16, 32, 24}) {
    for (HeadMap map : {HeadMap::kDiv, HeadMap::kMod}) {
      std::vector<float> first_out, first_pool;
      for (auto& nb : backends()) {
        SCOPED_TRACE(nb.name + " S " + std::to_string(s_dim));
        GdnUpdate gu;
        gu.sk = gu.sv = s_dim, gu.hk = 2, gu.hv = 4, gu.n_seq = 4, gu.n_slots = 6, gu.row_pad = 3;
        std::mt19937 rng(static_cast<unsigned>(s_dim));
        gu.fill(rng);
        gu.params.head_map = map;
        gu.ids = {
            3, 3, 0,
            5};  // seq 0 in place; 1 reads slot 3 (seq 0 writes it); 3 reads an unwritten slot
        gu.dst_slots = {3, 1, 0, 2};
        const auto [want_out, want_pool] = gu.unfused(*nb.backend);
        if (s_dim % 16 == 0) expect_top_kernel(nb, gu.op(), "gated_delta_net_update.avx512");
        ASSERT_TRUE(nb.backend->run(gu.op()).ok());
        EXPECT_EQ(gu.out, want_out);
        EXPECT_EQ(gu.pool, want_pool);
        expect_same_as_first(gu, first_out, first_pool);
      }
    }
  }
}

TEST(FusedGatedDeltaNetUpdate, BadIdsAreErrorsAndWriteNothing) {
  expect_bad_slots_write_nothing<GdnUpdate>();
}

TEST(FusedGatedDeltaNetUpdate, Validation) {
  GdnUpdate gu;
  std::mt19937 rng(5);
  gu.fill(rng);
  gu.ids = {0, 1, 2};
  EXPECT_TRUE(validate_op(gu.op()).ok());
  Op o = gu.op();
  o.dst2 = TensorView{};
  EXPECT_FALSE(validate_op(o).ok());
  o = gu.op();
  o.src[0].ne = {gu.sk, gu.hk, 3, 1};  // two tokens of one sequence: not a decode step
  o.src[1].ne = o.src[0].ne;
  EXPECT_FALSE(validate_op(o).ok());
  o = gu.op();
  o.src[7] = TensorView::contiguous(gu.ids.data(), DType::I32, {2});  // too few destinations
  EXPECT_FALSE(validate_op(o).ok());
  o = gu.op();
  o.src[5].ne[2] = gu.hv + 1;  // pool heads
  o.dst2 = o.src[5];
  EXPECT_FALSE(validate_op(o).ok());
  o = gu.op();
  o.dst.data = gu.pool.data();  // dst inside the pool
  EXPECT_FALSE(validate_op(o).ok());
}

// ---------------------------------------------------------------------------
// Mamba-2 scan update. x, B and C are strided views of one conv output
// [P H + 2 N G, n_seq] (as in the model); the pool's rows may be padded.

struct ScanUpdate {
  int64_t p = 16, n = 8, h = 2, g = 1, n_seq = 3, n_slots = 5;
  int64_t row_pad = 0;  // extra floats after every state row of the pool (a strided pool)
  std::vector<float> xbc, dt, a, pool, out;
  std::vector<int32_t> ids, dst_slots;

  int64_t width() const { return p * h + 2 * n * g; }
  int64_t row_stride() const { return n + row_pad; }
  void fill(std::mt19937& rng) {
    xbc = random_vec(static_cast<size_t>(width() * n_seq), -1, 1, rng);
    dt = random_vec(static_cast<size_t>(h * n_seq), -4, 22, rng);  // softplus's both branches
    a = random_vec(static_cast<size_t>(h), -2, -0.01f, rng);
    pool = random_vec(static_cast<size_t>(row_stride() * p * h * n_slots), -0.5f, 0.5f, rng);
    out.assign(static_cast<size_t>(p * h * n_seq), -7.0f);
  }
  // [ne0, ne1, 1, n_seq] at float offset `off` of each conv output row.
  TensorView xbc_view(int64_t off, int64_t ne0, int64_t ne1) {
    TensorView t = TensorView::contiguous(xbc.data() + off, DType::F32, {ne0, ne1, 1, n_seq});
    const size_t f = sizeof(float), row = static_cast<size_t>(width()) * f;
    t.nb = {f, static_cast<size_t>(ne0) * f, row, row};
    return t;
  }
  TensorView pool_view() {
    TensorView t = TensorView::contiguous(pool.data(), DType::F32, {n, p, h, n_slots});
    const size_t row = static_cast<size_t>(row_stride()) * sizeof(float);
    t.nb = {sizeof(float), row, row * static_cast<size_t>(p), row * static_cast<size_t>(p * h)};
    return t;
  }
  Op op() {
    Op o;
    o.kind = OpKind::kSsmScanUpdate;
    o.src[0] = xbc_view(0, p, h);
    o.src[1] = view(dt, {h, 1, n_seq});
    o.src[2] = view(a, {1, h});
    o.src[3] = xbc_view(p * h, n, g);
    o.src[4] = xbc_view(p * h + n * g, n, g);
    o.src[5] = pool_view();
    o.src[6] = view(ids);
    if (!dst_slots.empty()) o.src[7] = view(dst_slots);
    o.dst = view(out, {p, h, 1, n_seq});
    o.dst2 = o.src[5];
    return o;
  }
  float* row(int64_t slot, int64_t head, int64_t r) {
    return &pool[static_cast<size_t>(((slot * h + head) * p + r) * row_stride())];
  }

  // The unfused path on `b` (unfused_state_update, the plain kSsmScan with
  // T = 1): returns (out, pool after).
  std::pair<std::vector<float>, std::vector<float>> unfused(Backend& b) {
    return unfused_state_update(b, op(), OpKind::kSsmScan, pool, ids, dst_slots, {n, p, h, n_seq},
                                row_stride());
  }
};

// dt = 21 takes softplus's linear branch (sp = 21) and A = 0 makes the
// decay exp(0) = 1, so with integer inputs every value is exact:
//   S'[r, i] = S[r, i] + B[i] * (x[r] * 21),  y[r] = sum_i S'[r, i] C[i].
// Sequence 0 reads slot 1, which sequence 1 updates in place, and writes
// slot 0: it must see slot 1's old state. P = 8: the SIMD kernels take it.
TEST(FusedSsmScanUpdate, HandCase) {
  for (auto& nb : backends()) {
    SCOPED_TRACE(nb.name);
    ScanUpdate su;
    su.p = 8, su.n = 2, su.h = 1, su.g = 1, su.n_seq = 2, su.n_slots = 2;
    std::mt19937 rng(1);
    su.fill(rng);
    su.dt = {21, 21};
    su.a = {0};
    for (int64_t s = 0; s < su.n_seq; ++s) {
      float* r = &su.xbc[static_cast<size_t>(s * su.width())];
      for (int64_t i = 0; i < su.p; ++i) r[i] = static_cast<float>(i % 3 - 1 + s);  // x
      r[8] = 1, r[9] = -2;                                                          // B
      r[10] = 3, r[11] = static_cast<float>(1 + s);                                 // C
    }
    for (int64_t slot = 0; slot < 2; ++slot)
      for (int64_t r = 0; r < su.p; ++r)
        for (int64_t i = 0; i < su.n; ++i)
          su.row(slot, 0, r)[i] = static_cast<float>(slot * 10 + r - i);
    const std::vector<float> old = su.pool;
    su.ids = {1, 1};
    su.dst_slots = {0, 1};
    ASSERT_TRUE(nb.backend->run(su.op()).ok());
    for (int64_t s = 0; s < su.n_seq; ++s) {
      const float* r = &su.xbc[static_cast<size_t>(s * su.width())];
      for (int64_t p = 0; p < su.p; ++p) {
        float want_y = 0;
        for (int64_t i = 0; i < su.n; ++i) {
          const float prior = old[static_cast<size_t>((1 * su.p + p) * su.n + i)];  // slot 1
          const float next = prior + r[8 + i] * (r[p] * 21);
          want_y += next * r[10 + i];
          EXPECT_EQ(su.row(su.dst_slots[static_cast<size_t>(s)], 0, p)[i], next)
              << "sequence " << s << " row " << p << " i " << i;
        }
        EXPECT_EQ(su.out[static_cast<size_t>(s * su.p + p)], want_y) << "sequence " << s;
      }
    }
  }
}

// Random inputs on a strided pool (padded rows) with crossing ids: the fused
// op equals the unfused path (gather, kSsmScan with T = 1, scatter) on the
// same backend, bit for bit, and the kernels of every tier agree. P a
// multiple of 16 reaches the SIMD kernels (P = 48: three blocks, a partial
// group on every tier); P = 12 runs the reference on every tier. One group (G = 1) and
// several (G = H and G = H / 2); destinations given or equal to the ids.
TEST(FusedSsmScanUpdate, EqualsUnfusedPathOnEveryBackend) {
  const struct {
    int64_t p, n, h, g;
    bool dst_slots;
  } shapes[] = {{16, 16, 4, 2, true},
                {64, 32, 2, 1, true},
                {48, 8, 3, 3, true},
                {12, 16, 2, 1, true},
                {32, 16, 4, 1, false}};
  for (const auto& sh : shapes) {
    std::vector<float> first_out, first_pool;
    for (auto& nb : backends()) {
      SCOPED_TRACE(nb.name + " P " + std::to_string(sh.p) + " N " + std::to_string(sh.n) + " H " +
                   std::to_string(sh.h) + " G " + std::to_string(sh.g));
      ScanUpdate su;
      su.p = sh.p, su.n = sh.n, su.h = sh.h, su.g = sh.g, su.n_seq = 4, su.n_slots = 6,
      su.row_pad = 3;
      std::mt19937 rng(static_cast<unsigned>(sh.p * 100 + sh.g));
      su.fill(rng);
      if (sh.dst_slots) {
        su.ids = {
            3, 3, 0,
            5};  // seq 0 in place; 1 reads slot 3 (seq 0 writes it); 3 reads an unwritten slot
        su.dst_slots = {3, 1, 0, 2};
      } else {
        su.ids = {4, 1, 0, 5};  // every sequence updates its own slot, not in slot order
      }
      const auto [want_out, want_pool] = su.unfused(*nb.backend);
      ASSERT_TRUE(nb.backend->run(su.op()).ok());
      EXPECT_EQ(su.out, want_out);
      EXPECT_EQ(su.pool, want_pool);
      if (sh.p % 16 == 0 && nb.name != "ref" && active_isa() >= Isa::kAvx2) {
        EXPECT_EQ(nb.backend->kernel_name(su.op()).rfind("ssm_scan_update.avx", 0), 0u)
            << nb.backend->kernel_name(su.op());
      }
      expect_same_as_first(su, first_out, first_pool);
    }
  }
}

TEST(FusedSsmScanUpdate, BadIdsAreErrorsAndWriteNothing) {
  expect_bad_slots_write_nothing<ScanUpdate>();
}

TEST(FusedSsmScanUpdate, Validation) {
  ScanUpdate su;
  std::mt19937 rng(5);
  su.fill(rng);
  su.ids = {0, 1, 2};
  EXPECT_TRUE(validate_op(su.op()).ok());
  Op o = su.op();
  o.dst2 = TensorView{};  // the pool must be named as the in-place output
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  std::vector<float> other(su.pool.size());
  o.dst2 = TensorView::contiguous(other.data(), DType::F32, o.src[5].ne);  // not the pool itself
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  o.src[0].ne = {su.p, su.h, 3, 1};  // three tokens of one sequence: not a decode step
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  o.src[6] = TensorView::contiguous(su.ids.data(), DType::I32, {2});  // too few ids
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  o.src[5].ne[1] = su.p + 1;  // pool rows
  o.dst2 = o.src[5];
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  o.src[3].ne[1] = 3;  // groups must divide heads
  o.src[4].ne[1] = 3;
  EXPECT_FALSE(validate_op(o).ok());
  o = su.op();
  o.dst.data = su.pool.data();  // dst inside the pool: refused before anything runs
  EXPECT_FALSE(validate_op(o).ok());
  EXPECT_EQ(backends()[0].backend->run(o).code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// The plain ops' optimised kernels are bit-identical to their references
// (prefill GDN with several tokens; decode conv), so fused == unfused holds
// on every tier whichever of the two kernels the tier picks.

TEST(PlainRecurrentKernels, BitIdenticalToTheReference) {
  std::mt19937 rng(11);
  const int64_t sk = 32, hk = 2, hv = 4, n_t = 5, n_seq = 2;
  std::vector<float> q = random_vec(static_cast<size_t>(sk * hk * n_t * n_seq), -1, 1, rng), k = q;
  std::shuffle(k.begin(), k.end(), rng);
  std::vector<float> v = random_vec(static_cast<size_t>(sk * hv * n_t * n_seq), -1, 1, rng);
  std::vector<float> g = random_vec(static_cast<size_t>(hv * n_t * n_seq), -1, -0.01f, rng);
  std::vector<float> beta = random_vec(static_cast<size_t>(hv * n_t * n_seq), 0.05f, 0.95f, rng);
  const std::vector<float> state0 =
      random_vec(static_cast<size_t>(sk * sk * hv * n_seq), -0.5f, 0.5f, rng);
  std::vector<float> first;
  for (auto& nb : backends()) {
    std::vector<float> state = state0, out(v.size());
    Op o;
    o.kind = OpKind::kGatedDeltaNet;
    o.params = GatedDeltaNetParams{0.17f, true, 1e-6f, HeadMap::kMod};
    o.src[0] = view(q, {sk, hk, n_t, n_seq});
    o.src[1] = view(k, {sk, hk, n_t, n_seq});
    o.src[2] = view(v, {sk, hv, n_t, n_seq});
    o.src[3] = view(g, {hv, n_t, n_seq});
    o.src[4] = view(beta, {hv, n_t, n_seq});
    o.src[5] = view(state, {sk, sk, hv, n_seq});
    o.dst = view(out, {sk, hv, n_t, n_seq});
    o.dst2 = o.src[5];
    ASSERT_TRUE(nb.backend->run(o).ok()) << nb.name;
    out.insert(out.end(), state.begin(), state.end());
    if (first.empty()) {
      first = out;
    } else {
      EXPECT_EQ(out, first) << nb.backend->kernel_name(o);
    }
  }

  const int64_t width = 4, channels = 83;  // 5 SIMD blocks and a scalar tail
  std::vector<float> x = random_vec(static_cast<size_t>(width * channels * n_seq), -2, 2, rng);
  std::vector<float> w = random_vec(static_cast<size_t>(width * channels), -1, 1, rng);
  std::vector<float> bias = random_vec(static_cast<size_t>(channels), -1, 1, rng);
  for (bool silu : {false, true}) {
    std::vector<float> conv_first;
    for (auto& nb : backends()) {
      std::vector<float> out(static_cast<size_t>(channels * n_seq));
      Op o;
      o.kind = OpKind::kSsmConv;
      o.params = SsmConvParams{silu};
      o.src[0] = view(x, {width, channels, n_seq});
      o.src[1] = view(w, {width, channels});
      o.src[2] = view(bias, {channels});
      o.dst = view(out, {channels, 1, n_seq});
      ASSERT_TRUE(nb.backend->run(o).ok()) << nb.name;
      if (conv_first.empty()) {
        conv_first = out;
      } else {
        EXPECT_EQ(out, conv_first) << nb.backend->kernel_name(o);
      }
    }
  }
}

}  // namespace
}  // namespace folio
