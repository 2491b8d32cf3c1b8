// The rope kernels on memoised tables (drivers/rope_tables.h: rope.tables,
// rope.avx2, rope.avx512, rope.neon; every tier of this machine's ladder)
// give the reference's bytes exactly (same double arithmetic), in the
// normal, neox and multi-section (mrope, imrope) modes, with partial
// rotation, freq factors and YaRN, also in place; and the memo of angle
// tables never serves a table for other inputs: positions (of any section)
// or freq factor values changed in the same buffers between calls still
// give the reference's result.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace folio {
namespace rope_tables_test {

struct RopeCase {
  RopeMode mode;
  int64_t head_dim, n_dims, n_head, n_tok;
  bool freq_factors;
  float ext_factor;
  std::array<int, 4> sections = {0, 0, 0, 0};  // the multi-section modes' (t, h, w, e)
};

bool multi_section(RopeMode m) {
  return m == RopeMode::kMrope || m == RopeMode::kImrope;
}

class RopeRun {
 public:
  RopeRun(const RopeCase& c, uint32_t seed) : c_(c) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    x_.resize(static_cast<size_t>(c.head_dim * c.n_head * c.n_tok));
    for (float& v : x_) v = dist(rng);
    // Section s of token t at pos[s * n_tok + t] in the multi-section modes.
    const int64_t n_sec = multi_section(c.mode) ? 4 : 1;
    pos_.resize(static_cast<size_t>(c.n_tok * n_sec));
    for (int64_t i = 0; i < c.n_tok * n_sec; ++i)
      pos_[static_cast<size_t>(i)] =
          static_cast<int32_t>((i % c.n_tok) * 37 % 5000 + 911 * (i / c.n_tok));
    ff_.resize(static_cast<size_t>(c.n_dims / 2));
    for (size_t i = 0; i < ff_.size(); ++i) ff_[i] = 1.0f + 0.25f * static_cast<float>(i % 5);
    params_.mode = c.mode;
    params_.n_dims = static_cast<int>(c.n_dims);
    params_.freq_base = 10000.0f;
    params_.ext_factor = c.ext_factor;
    params_.sections = c.sections;
    if (c.ext_factor != 0.0f) {
      params_.freq_scale = 0.25f;
      params_.n_ctx_orig = 4096;
    }
  }

  std::vector<int32_t>& positions() { return pos_; }
  std::vector<float>& freq_factors() { return ff_; }

  // Runs rope on `backend`; in_place: dst is the input buffer (a copy of x).
  std::vector<float> run(CpuBackend& backend, bool in_place = false) {
    std::vector<float> in = x_, out(x_.size(), -7.0f);
    Op op;
    op.kind = OpKind::kRope;
    op.src[0] = TensorView::contiguous(in.data(), DType::F32, {c_.head_dim, c_.n_head, c_.n_tok});
    op.src[1] =
        TensorView::contiguous(pos_.data(), DType::I32, {static_cast<int64_t>(pos_.size())});
    if (c_.freq_factors)
      op.src[2] = TensorView::contiguous(ff_.data(), DType::F32, {c_.n_dims / 2});
    op.dst = in_place ? op.src[0]
                      : TensorView::contiguous(out.data(), DType::F32,
                                               {c_.head_dim, c_.n_head, c_.n_tok});
    op.params = params_;
    const Status s = backend.run(op);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return in_place ? in : out;
  }

  std::string kernel(CpuBackend& backend) {
    Op op;
    op.kind = OpKind::kRope;
    op.src[0] = TensorView::contiguous(x_.data(), DType::F32, {c_.head_dim, c_.n_head, c_.n_tok});
    op.src[1] =
        TensorView::contiguous(pos_.data(), DType::I32, {static_cast<int64_t>(pos_.size())});
    op.dst = op.src[0];
    op.params = params_;
    return backend.kernel_name(op);
  }

 private:
  RopeCase c_;
  std::vector<float> x_, ff_;
  std::vector<int32_t> pos_;
  RopeParams params_;
};

// The kernel each tier runs rope with.
std::string rope_kernel_of(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "rope.tables";
    case Isa::kNeon:
    case Isa::kNeonDotprod:
    case Isa::kNeonI8mm: return "rope.neon";
    case Isa::kAvx2:
    case Isa::kAvx2Vnni: return "rope.avx2";
    case Isa::kAvx512:
    case Isa::kAmx: return "rope.avx512";
  }
  return "";
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

TEST(RopeTables, SameBytesAsTheReference) {
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  ThreadPool pool(2);
  const RopeCase cases[] = {
      {RopeMode::kNeox, 256, 256, 4, 1, false, 0.0f},   // gemma-like decode
      {RopeMode::kNeox, 128, 128, 8, 67, false, 0.0f},  // prefill (parallel rows)
      {RopeMode::kNormal, 64, 64, 3, 5, false, 0.0f},   // llama
      {RopeMode::kNormal, 80, 52, 2, 3, true, 0.0f},    // partial, tail pairs, freq factors
      {RopeMode::kNeox, 96, 36, 2, 4, true, 1.0f},      // YaRN, tail pairs
      {RopeMode::kMrope, 128, 128, 4, 5, false, 0.0f, {16, 24, 24, 0}},  // qwen2-vl
      {RopeMode::kMrope, 64, 64, 2, 6, true, 0.0f, {8, 8, 8, 8}},       // 4 sections
      {RopeMode::kImrope, 128, 128, 4, 7, false, 0.0f, {24, 20, 20, 0}},  // qwen3-vl
      {RopeMode::kImrope, 256, 64, 2, 5, false, 1.0f, {11, 11, 10, 0}},   // qwen3.5 partial, YaRN
      {RopeMode::kImrope, 128, 128, 8, 40, false, 0.0f, {8, 8, 8, 8}},    // e pairs, parallel rows
  };
  for (Isa isa : isa_ladder(active_isa())) {
    CpuBackend simd(CpuBackendOptions{isa, false, &pool});
    for (const RopeCase& c : cases) {
      RopeRun r(c, 3);
      EXPECT_EQ(r.kernel(simd), rope_kernel_of(isa));
      const std::vector<float> want = r.run(ref);
      EXPECT_TRUE(same_bytes(r.run(simd), want))
          << isa_name(isa) << " mode " << static_cast<int>(c.mode) << " n_dims " << c.n_dims;
      EXPECT_TRUE(same_bytes(r.run(simd, /*in_place=*/true), want)) << isa_name(isa) << " in place";
      // Again: now from the memo.
      EXPECT_TRUE(same_bytes(r.run(simd), want)) << isa_name(isa) << " memoised table";
    }
  }
}

TEST(RopeTables, MemoFollowsChangedPositionsAndFreqFactors) {
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  for (Isa isa : isa_ladder(active_isa())) {
    CpuBackend simd(CpuBackendOptions{isa, false, nullptr});
    RopeRun r({RopeMode::kNeox, 64, 64, 2, 3, true, 0.0f}, 9);
    for (int step = 0; step < 6; ++step) {
      // Same buffers, new contents: positions advance (decode), and every
      // other step the freq factors change.
      for (int32_t& p : r.positions()) p += 1;
      if (step % 2 == 1) r.freq_factors()[step] *= 1.5f;
      EXPECT_TRUE(same_bytes(r.run(simd), r.run(ref))) << isa_name(isa) << " step " << step;
    }
    // imrope: a change in one section's positions alone (here w's) is seen.
    RopeRun m({RopeMode::kImrope, 64, 64, 2, 3, false, 0.0f, {8, 8, 8, 8}}, 11);
    for (int step = 0; step < 3; ++step) {
      for (size_t t = 6; t < 9; ++t) m.positions()[t] += 5;
      EXPECT_TRUE(same_bytes(m.run(simd), m.run(ref))) << isa_name(isa) << " imrope step " << step;
    }
  }
}

}  // namespace
}  // namespace folio
