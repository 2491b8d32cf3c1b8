// The reference attention kernels (flash_attn.ref, sdpa.ref) checked on
// hand-computed cases, against each other, across K/V types and layouts, and
// on bad index data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "quant/quant.h"

namespace folio {
namespace ref_attention_test {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One attention problem with f32 K/V held as floats (contiguous layout:
// k [d, n_kv, n_ctx, n_seq]); `pack` turns K/V into another dtype.
struct Attn {
  int d = 4, dv = 4, n_head = 1, n_kv = 1, n_ctx = 1, n_seq = 1, n_tokens = 1;
  std::vector<float> q, k, v, sinks, out;
  std::vector<int32_t> seq_idx, pos, kv_len;
  AttentionParams params;
  DType kv_type = DType::F32;
  std::vector<uint8_t> kq, vq;  // packed K/V when kv_type != F32

  void resize() {
    q.assign(static_cast<size_t>(d * n_head * n_tokens), 0.0f);
    k.assign(static_cast<size_t>(d * n_kv * n_ctx * n_seq), 0.0f);
    v.assign(static_cast<size_t>(dv * n_kv * n_ctx * n_seq), 0.0f);
    out.assign(static_cast<size_t>(dv * n_head * n_tokens), 123.0f);  // sentinel
    seq_idx.assign(static_cast<size_t>(n_tokens), 0);
    pos.assign(static_cast<size_t>(n_tokens), 0);
    kv_len.assign(static_cast<size_t>(n_seq), 0);
  }
  float* krow(int h, int p, int s) {
    return &k[static_cast<size_t>(((s * n_ctx + p) * n_kv + h) * d)];
  }
  float* vrow(int h, int p, int s) {
    return &v[static_cast<size_t>(((s * n_ctx + p) * n_kv + h) * dv)];
  }
  float* qrow(int h, int i) { return &q[static_cast<size_t>((i * n_head + h) * d)]; }
  float* orow(int h, int i) { return &out[static_cast<size_t>((i * n_head + h) * dv)]; }

  // Quantizes K/V to `t` and replaces the float copies by the dequantized values.
  void pack(DType t) {
    kv_type = t;
    kq.resize(row_size(t, d) * static_cast<size_t>(n_kv * n_ctx * n_seq));
    vq.resize(row_size(t, dv) * static_cast<size_t>(n_kv * n_ctx * n_seq));
    quant::quantize_row_ref(t, k.data(), kq.data(), static_cast<int64_t>(k.size()));
    quant::quantize_row_ref(t, v.data(), vq.data(), static_cast<int64_t>(v.size()));
    quant::dequantize_row_ref(t, kq.data(), k.data(), static_cast<int64_t>(k.size()));
    quant::dequantize_row_ref(t, vq.data(), v.data(), static_cast<int64_t>(v.size()));
  }

  Op op(OpKind kind = OpKind::kFlashAttn) {
    Op o;
    o.kind = kind;
    o.src[0] = TensorView::contiguous(q.data(), DType::F32, {d, n_head, n_tokens});
    void* kd = kv_type == DType::F32 ? static_cast<void*>(k.data()) : kq.data();
    void* vd = kv_type == DType::F32 ? static_cast<void*>(v.data()) : vq.data();
    o.src[1] = TensorView::contiguous(kd, kv_type, {d, n_kv, n_ctx, n_seq});
    o.src[2] = TensorView::contiguous(vd, kv_type, {dv, n_kv, n_ctx, n_seq});
    o.src[3] = TensorView::contiguous(seq_idx.data(), DType::I32, {n_tokens});
    o.src[4] = TensorView::contiguous(pos.data(), DType::I32, {n_tokens});
    o.src[5] = TensorView::contiguous(kv_len.data(), DType::I32, {n_seq});
    if (!sinks.empty()) o.src[7] = TensorView::contiguous(sinks.data(), DType::F32, {n_head});
    o.dst = TensorView::contiguous(out.data(), DType::F32, {dv, n_head, n_tokens});
    o.params = params;
    return o;
  }
};

Status run_ref(const Op& op) {
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  return ref.run(op);
}

std::vector<float> run_out(Attn& a, OpKind kind = OpKind::kFlashAttn) {
  std::fill(a.out.begin(), a.out.end(), 123.0f);
  Status s = run_ref(a.op(kind));
  EXPECT_TRUE(s.ok()) << s.to_string();
  return a.out;
}

double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref += static_cast<double>(b[i]) * b[i];
  }
  return err / ref;
}

bool all_finite(const std::vector<float>& x) {
  return std::all_of(x.begin(), x.end(), [](float f) { return std::isfinite(f); });
}

// A random problem: several sequences of different lengths, several query
// tokens each (the last positions of each cache), rows past kv_len NaN.
Attn random_problem(int d, int n_kv, int gqa, std::mt19937& rng) {
  Attn a;
  a.d = a.dv = d;
  a.n_kv = n_kv;
  a.n_head = n_kv * gqa;
  a.n_seq = 3;
  a.n_ctx = 45;
  const std::vector<int> len = {40, 7, 23}, nq = {5, 1, 3};
  a.n_tokens = 9;
  a.resize();
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : a.q) x = u(rng);
  for (float& x : a.k) x = u(rng);
  for (float& x : a.v) x = u(rng);
  int i = 0;
  for (int s = 0; s < a.n_seq; ++s) {
    a.kv_len[s] = len[s];
    for (int j = 0; j < nq[s]; ++j, ++i) {
      a.seq_idx[i] = s;
      a.pos[i] = len[s] - nq[s] + j;
    }
  }
  a.params.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return a;
}

// Rows past kv_len set to NaN (all-ones bytes: an f32 / f16 NaN, a q8_0
// block with a NaN scale): they must never reach the output. Call after pack().
void poison_tail(Attn& a) {
  for (int s = 0; s < a.n_seq; ++s) {
    for (int p = a.kv_len[s]; p < a.n_ctx; ++p) {
      for (int h = 0; h < a.n_kv; ++h) {
        if (a.kv_type == DType::F32) {
          std::fill(a.krow(h, p, s), a.krow(h, p, s) + a.d, kNaN);
          std::fill(a.vrow(h, p, s), a.vrow(h, p, s) + a.dv, kNaN);
          continue;
        }
        const size_t row = static_cast<size_t>((s * a.n_ctx + p) * a.n_kv + h);
        const size_t kb = row_size(a.kv_type, a.d), vb = row_size(a.kv_type, a.dv);
        std::memset(a.kq.data() + row * kb, 0xff, kb);
        std::memset(a.vq.data() + row * vb, 0xff, vb);
      }
    }
  }
}

TEST(RefAttention, SingleKeyOutputsItsValue) {
  Attn a;
  a.resize();
  a.q = {0.3f, -1.0f, 2.0f, 0.5f};
  a.k = {1.0f, 2.0f, -3.0f, 0.25f};
  a.v = {1.0f, -2.0f, 3.5f, 4.0f};
  a.kv_len = {1};
  for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
    EXPECT_EQ(run_out(a, kind), a.v) << op_kind_name(kind);
  }
}

TEST(RefAttention, TwoKeysWithKnownScores) {
  Attn a;
  a.d = 2, a.dv = 2, a.n_ctx = 2;
  a.resize();
  a.q = {1.0f, 0.0f};
  a.k = {0.5f, 0.0f, 2.0f, 0.0f};  // scores 0.5 and 2
  a.v = {1.0f, 0.0f, 0.0f, 1.0f};
  a.kv_len = {2};
  a.pos = {1};
  const double e0 = std::exp(0.5), e1 = std::exp(2.0);
  for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
    const std::vector<float> o = run_out(a, kind);
    EXPECT_NEAR(o[0], e0 / (e0 + e1), 1e-7);
    EXPECT_NEAR(o[1], e1 / (e0 + e1), 1e-7);
  }
}

// Keys 0..2 with v_p = e_p, q.k_p = p: the output is the softmax of the visible scores.
Attn three_positions() {
  Attn a;
  a.d = 3, a.dv = 3, a.n_ctx = 3, a.n_tokens = 3;
  a.resize();
  for (int i = 0; i < 3; ++i) {
    a.qrow(0, i)[0] = 1.0f;
    a.krow(0, i, 0)[0] = static_cast<float>(i);
    a.vrow(0, i, 0)[i] = 1.0f;
    a.pos[i] = i;
  }
  a.kv_len = {3};
  return a;
}

// softmax over scores p in [lo, hi] (score of p = p), as a 3-vector.
std::vector<double> soft(int lo, int hi) {
  std::vector<double> w(3, 0.0);
  double z = 0;
  for (int p = lo; p <= hi; ++p) z += std::exp(static_cast<double>(p));
  for (int p = lo; p <= hi; ++p) w[p] = std::exp(static_cast<double>(p)) / z;
  return w;
}

void expect_rows(const std::vector<float>& out, const std::vector<std::vector<double>>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    for (size_t c = 0; c < 3; ++c) EXPECT_NEAR(out[i * 3 + c], want[i][c], 1e-6) << i << "," << c;
  }
}

TEST(RefAttention, CausalMaskHidesLaterPositions) {
  Attn a = three_positions();
  for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
    a.params.causal = true;
    expect_rows(run_out(a, kind), {soft(0, 0), soft(0, 1), soft(0, 2)});
    a.params.causal = false;
    expect_rows(run_out(a, kind), {soft(0, 2), soft(0, 2), soft(0, 2)});
  }
}

TEST(RefAttention, SlidingWindow) {
  Attn a = three_positions();
  for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
    a.params.window = 1;  // only the token's own position
    EXPECT_EQ(run_out(a, kind), std::vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}));
    a.params.window = 2;
    expect_rows(run_out(a, kind), {soft(0, 0), soft(0, 1), soft(1, 2)});
  }
}

TEST(RefAttention, Softcap) {
  Attn a;
  a.d = 1, a.dv = 2, a.n_ctx = 2;
  a.resize();
  a.q = {1.0f};
  a.k = {10.0f, 1.0f};  // raw scores 10 * 0.5 and 1 * 0.5
  a.v = {1.0f, 0.0f, 0.0f, 1.0f};
  a.kv_len = {2};
  a.pos = {1};
  a.params.scale = 0.5f;
  a.params.softcap = 2.0f;
  const double s0 = 2.0 * std::tanh(5.0 / 2.0), s1 = 2.0 * std::tanh(0.5 / 2.0);
  const double w0 = std::exp(s0) / (std::exp(s0) + std::exp(s1));
  for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
    const std::vector<float> o = run_out(a, kind);
    EXPECT_NEAR(o[0], w0, 1e-6);
    EXPECT_NEAR(o[1], 1.0 - w0, 1e-6);
  }
}

TEST(RefAttention, SinkJoinsTheDenominatorOnly) {
  Attn a;
  a.d = 1, a.dv = 2;
  a.resize();
  a.q = {1.0f};
  a.k = {1.0f};  // score 1
  a.v = {2.0f, -4.0f};
  a.kv_len = {1};
  for (float sink : {-1.0f, 0.0f, 1.0f, 2.5f}) {  // below, equal to and above the max score
    a.sinks = {sink};
    const double w = std::exp(1.0) / (std::exp(1.0) + std::exp(static_cast<double>(sink)));
    for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
      const std::vector<float> o = run_out(a, kind);
      EXPECT_NEAR(o[0], 2.0 * w, 1e-6) << sink;
      EXPECT_NEAR(o[1], -4.0 * w, 1e-6) << sink;
    }
  }
  // The sink is a raw logit: scale and softcap do not touch it.
  a.params.scale = 3.0f;
  a.params.softcap = 2.0f;
  a.sinks = {0.5f};
  const double s = 2.0 * std::tanh(3.0 / 2.0);
  const double w = std::exp(s) / (std::exp(s) + std::exp(0.5));
  EXPECT_NEAR(run_out(a)[0], 2.0 * w, 1e-6);
}

TEST(RefAttention, NoVisibleKeyOutputsZeros) {
  Attn a;
  a.n_seq = 2, a.n_tokens = 3, a.n_ctx = 2;
  a.resize();
  std::fill(a.q.begin(), a.q.end(), 1.0f);
  std::fill(a.k.begin(), a.k.end(), 1.0f);
  std::fill(a.v.begin(), a.v.end(), 1.0f);
  a.kv_len = {0, 2};
  a.seq_idx = {0, 1, 1};
  a.pos = {0, -1, 1};  // empty sequence; a position before every key; a normal token
  for (bool with_sinks : {false, true}) {
    a.sinks = with_sinks ? std::vector<float>{3.0f} : std::vector<float>{};
    for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
      const std::vector<float> o = run_out(a, kind);
      for (int c = 0; c < 8; ++c) EXPECT_EQ(o[c], 0.0f) << c;
      for (int c = 8; c < 12; ++c) EXPECT_GT(o[c], 0.0f) << c;
    }
  }
}

TEST(RefAttention, GqaMapsQueryHeadsToKvGroups) {
  Attn a;
  a.n_head = 4, a.n_kv = 2;
  a.resize();
  std::fill(a.q.begin(), a.q.end(), 1.0f);
  std::fill(a.k.begin(), a.k.end(), 1.0f);
  std::fill(a.vrow(0, 0, 0), a.vrow(0, 0, 0) + 4, 1.0f);
  std::fill(a.vrow(1, 0, 0), a.vrow(1, 0, 0) + 4, 2.0f);
  a.kv_len = {1};
  const std::vector<float> o = run_out(a);
  for (int h = 0; h < 4; ++h) EXPECT_EQ(o[h * 4], h < 2 ? 1.0f : 2.0f) << h;
}

TEST(RefAttention, FlashAgreesWithSdpa) {
  std::mt19937 rng(7);
  for (DType t : {DType::F32, DType::F16, DType::Q8_0}) {
    for (int gqa : {1, 4}) {
      Attn a = random_problem(64, 2, gqa, rng);
      if (t != DType::F32) a.pack(t);
      a.sinks.resize(static_cast<size_t>(a.n_head));
      std::uniform_real_distribution<float> u(-1.0f, 3.0f);
      for (float& x : a.sinks) x = u(rng);
      a.params.softcap = 3.0f;
      a.params.window = 9;
      const std::vector<float> flash = run_out(a, OpKind::kFlashAttn);
      const std::vector<float> sdpa = run_out(a, OpKind::kSdpa);
      EXPECT_TRUE(all_finite(flash));
      EXPECT_LT(nmse(flash, sdpa), 1e-10) << dtype_name(t) << " gqa " << gqa;
    }
  }
}

TEST(RefAttention, QuantizedKvReadsAsItsDequantizedValues) {
  std::mt19937 rng(11);
  for (DType t : {DType::F16, DType::Q8_0}) {
    Attn a = random_problem(64, 2, 2, rng);
    a.pack(t);  // a.k / a.v now hold the dequantized values
    const std::vector<float> packed = run_out(a);
    a.kv_type = DType::F32;
    const std::vector<float> floats = run_out(a);
    EXPECT_EQ(std::memcmp(packed.data(), floats.data(), packed.size() * 4), 0) << dtype_name(t);
  }
}

// K/V of `a` (contiguous, kv_type) scattered into blocks of `bs` positions in
// a shuffled physical order; padding table entries hold invalid ids and every
// unused row is NaN.
struct Paged {
  std::vector<uint8_t> k, v;
  std::vector<int32_t> blocks;
  int n_blocks = 0, max_blocks = 0;

  Op op(Attn& a, const Op& contig, int bs, std::mt19937& rng) {
    std::vector<int> used(static_cast<size_t>(a.n_seq));
    int total = 0;
    for (int s = 0; s < a.n_seq; ++s) {
      used[s] = (a.kv_len[s] + bs - 1) / bs;
      total += used[s];
      max_blocks = std::max(max_blocks, used[s] + 1);
    }
    n_blocks = total + 1;
    std::vector<int> perm(static_cast<size_t>(n_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const size_t krow = contig.src[1].row_bytes(), vrow = contig.src[2].row_bytes();
    const size_t rows = static_cast<size_t>(a.n_kv * bs * n_blocks);
    // NaN everywhere first (all-ones bytes, as poison_tail).
    k.assign(krow * rows, 0xff);
    v.assign(vrow * rows, 0xff);
    blocks.assign(static_cast<size_t>(max_blocks * a.n_seq), -1);
    TensorView kp = TensorView::contiguous(k.data(), a.kv_type, {a.d, a.n_kv, bs, n_blocks});
    TensorView vp = TensorView::contiguous(v.data(), a.kv_type, {a.dv, a.n_kv, bs, n_blocks});
    int next = 0;
    for (int s = 0; s < a.n_seq; ++s) {
      for (int b = 0; b < used[s]; ++b) {
        const int id = perm[static_cast<size_t>(next++)];
        blocks[static_cast<size_t>(s * max_blocks + b)] = id;
        for (int r = 0; r < bs && b * bs + r < a.kv_len[s]; ++r) {
          for (int h = 0; h < a.n_kv; ++h) {
            std::memcpy(kp.row<void>(h, r, id), contig.src[1].row<void>(h, b * bs + r, s), krow);
            std::memcpy(vp.row<void>(h, r, id), contig.src[2].row<void>(h, b * bs + r, s), vrow);
          }
        }
      }
    }
    Op o = contig;
    o.src[1] = kp;
    o.src[2] = vp;
    o.src[6] = TensorView::contiguous(blocks.data(), DType::I32, {max_blocks, a.n_seq});
    auto& p = std::get<AttentionParams>(o.params);
    p.layout = KvLayout::kPaged;
    p.block_size = bs;
    return o;
  }
};

TEST(RefAttention, PagedIsByteIdenticalToContiguous) {
  std::mt19937 rng(3);
  for (DType t : {DType::F32, DType::F16, DType::Q8_0}) {
    Attn a = random_problem(64, 2, 2, rng);
    if (t != DType::F32) a.pack(t);
    poison_tail(a);
    a.params.window = 12;
    for (OpKind kind : {OpKind::kFlashAttn, OpKind::kSdpa}) {
      const std::vector<float> contig = run_out(a, kind);
      ASSERT_TRUE(all_finite(contig)) << dtype_name(t);
      for (int bs : {8, 16, 32}) {
        Paged pg;
        const Op op = pg.op(a, a.op(kind), bs, rng);
        std::fill(a.out.begin(), a.out.end(), 123.0f);
        ASSERT_TRUE(run_ref(op).ok());
        EXPECT_EQ(std::memcmp(a.out.data(), contig.data(), contig.size() * 4), 0)
            << dtype_name(t) << " bs " << bs << " " << op_kind_name(kind);
      }
    }
  }
}

TEST(RefAttention, BadIndexDataIsAnErrorAndWritesNothing) {
  std::mt19937 rng(5);
  Attn a = random_problem(32, 1, 1, rng);
  Paged pg;
  const Op paged = pg.op(a, a.op(), 16, rng);
  ASSERT_TRUE(run_ref(paged).ok());
  auto expect_error = [&](const Op& op, const char* what) {
    std::fill(a.out.begin(), a.out.end(), 123.0f);
    const Status s = run_ref(op);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_TRUE(std::all_of(a.out.begin(), a.out.end(), [](float f) { return f == 123.0f; }))
        << what;
  };
  int32_t& first = pg.blocks[0];
  const int32_t saved = first;
  first = pg.n_blocks;  // one past the pool
  expect_error(paged, "block id == n_blocks");
  first = -2;
  expect_error(paged, "negative block id");
  first = saved;
  a.kv_len[0] = pg.max_blocks * 16 + 1;
  expect_error(paged, "kv_len past the block table");
  a.kv_len[0] = 40;
  a.kv_len[1] = a.n_ctx + 1;
  expect_error(a.op(), "kv_len past n_ctx");
  a.kv_len[1] = -1;
  expect_error(a.op(), "negative kv_len");
  a.kv_len[1] = 7;
  a.seq_idx[2] = a.n_seq;
  expect_error(a.op(), "seq_idx == n_seq");
  a.seq_idx[2] = -1;
  expect_error(a.op(), "negative seq_idx");
}

}  // namespace
}  // namespace folio
