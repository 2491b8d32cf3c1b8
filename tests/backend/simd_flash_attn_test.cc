// The optimised flash-attention kernels (flash_attn.scalar / .avx2 / .avx512,
// drivers/flash_attn_tiled.h) on what the parity cases do not pin down:
//   - bit-identical outputs for 1, 2, 3 and 4 threads, in both schedules
//     (a chunk per work item, and split-K with partials reduced afterwards);
//   - paged == contiguous, exactly, for block sizes 8 ... 128 (and one that
//     is not a power of two), shuffled physical blocks, NaN in every unused
//     K/V row and invalid ids in the padding entries of the block table;
//   - a row's output does not depend on the batch around it: a decode token
//     alone or batched with other sequences, and a prefill run whole or as
//     two chunks, give the same bits (the canonical order of
//     flash_attn_tiled.h);
//   - bad index data is an error that writes nothing.
// Accuracy against the reference is the parity harness's job.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/quant.h"

namespace folio {
namespace simd_flash_attn_test {

// NaN in every element of a packed row (f32 / f16 values, q8_0 scales).
void poison_row(DType t, uint8_t* row, int64_t n) {
  const uint16_t nan16 = 0x7e00;
  if (t == DType::F32) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < n; ++i) std::memcpy(row + 4 * i, &nan, 4);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(row + 2 * i, &nan16, 2);
  } else {
    for (int64_t b = 0; b < n / 32; ++b) std::memcpy(row + 34 * b, &nan16, 2);
  }
}

// An attention problem over a contiguous cache [D, n_kv, n_ctx, n_seq]; ops
// over any subset of its query tokens, in either layout.
struct Problem {
  int d = 128, dv = 128, n_head = 8, n_kv = 2;
  DType kv = DType::F16;
  std::vector<int> kv_len;
  std::vector<std::pair<int32_t, int32_t>> tokens;  // (sequence, position)
  AttentionParams params;
  bool sinks = false;

  int n_ctx = 0;
  std::vector<float> q;  // [d, n_head, tokens]
  std::vector<float> sink_logits;
  std::vector<uint8_t> k, v;  // contiguous cache

  // Tokens `n` per sequence at the end of each cache.
  void add_tail_tokens(const std::vector<int>& n) {
    for (size_t s = 0; s < n.size(); ++s) {
      for (int j = 0; j < n[s]; ++j) {
        tokens.emplace_back(static_cast<int32_t>(s), kv_len[s] - n[s] + j);
      }
    }
  }

  void fill(std::mt19937& rng) {
    n_ctx = *std::max_element(kv_len.begin(), kv_len.end()) + 5;
    const int64_t n_seq = static_cast<int64_t>(kv_len.size());
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    q.resize(static_cast<size_t>(d) * n_head * tokens.size());
    for (float& x : q) x = u(rng);
    sink_logits.resize(static_cast<size_t>(n_head));
    for (float& x : sink_logits) x = 4.0f * u(rng);
    auto fill_cache = [&](std::vector<uint8_t>& c, int dim) {
      const size_t rb = row_size(kv, dim);
      c.resize(rb * static_cast<size_t>(n_kv * n_ctx * n_seq));
      std::vector<float> row(static_cast<size_t>(dim));
      for (int64_t s = 0; s < n_seq; ++s) {
        for (int p = 0; p < n_ctx; ++p) {
          for (int h = 0; h < n_kv; ++h) {
            uint8_t* dst = c.data() + rb * static_cast<size_t>((s * n_ctx + p) * n_kv + h);
            if (p >= kv_len[s]) {
              poison_row(kv, dst, dim);
              continue;
            }
            for (float& x : row) x = u(rng);
            quant::quantize_row_ref(kv, row.data(), dst, dim);
          }
        }
      }
    };
    fill_cache(k, d);
    fill_cache(v, dv);
  }

  // Index data and views of one op; `which` picks tokens of `tokens`.
  struct Built {
    std::vector<float> q, out;
    std::vector<int32_t> seq, pos, len, table;
    std::vector<uint8_t> kp, vp;  // paged storage
    Op op;
  };

  std::unique_ptr<Built> build(const std::vector<int>& which, const std::vector<int>& lens,
                               int block_size, std::mt19937& rng) {
    auto b = std::make_unique<Built>();
    const int64_t n_seq = static_cast<int64_t>(kv_len.size());
    const int64_t nt = static_cast<int64_t>(which.size());
    for (int i : which) {
      b->q.insert(b->q.end(), q.begin() + static_cast<int64_t>(i) * d * n_head,
                  q.begin() + static_cast<int64_t>(i + 1) * d * n_head);
      b->seq.push_back(tokens[static_cast<size_t>(i)].first);
      b->pos.push_back(tokens[static_cast<size_t>(i)].second);
    }
    b->len = lens;
    b->out.assign(static_cast<size_t>(dv * n_head * nt), 7.0f);
    Op& op = b->op;
    op.kind = OpKind::kFlashAttn;
    op.src[0] = TensorView::contiguous(b->q.data(), DType::F32, {d, n_head, nt});
    op.src[3] = TensorView::contiguous(b->seq.data(), DType::I32, {nt});
    op.src[4] = TensorView::contiguous(b->pos.data(), DType::I32, {nt});
    op.src[5] = TensorView::contiguous(b->len.data(), DType::I32, {n_seq});
    if (sinks) op.src[7] = TensorView::contiguous(sink_logits.data(), DType::F32, {n_head});
    op.dst = TensorView::contiguous(b->out.data(), DType::F32, {dv, n_head, nt});
    AttentionParams p = params;
    if (block_size == 0) {
      op.src[1] = TensorView::contiguous(k.data(), kv, {d, n_kv, n_ctx, n_seq});
      op.src[2] = TensorView::contiguous(v.data(), kv, {dv, n_kv, n_ctx, n_seq});
      p.layout = KvLayout::kContiguous;
      op.params = p;
      return b;
    }
    // Paged: blocks of every sequence in a shuffled physical order, two spare
    // blocks, NaN wherever no valid row was copied, invalid padding ids.
    const int bs = block_size;
    std::vector<int> used(static_cast<size_t>(n_seq));
    int total = 0, most = 0;
    for (int64_t s = 0; s < n_seq; ++s) {
      used[s] = (lens[s] + bs - 1) / bs;
      total += used[s];
      most = std::max(most, used[s]);
    }
    const int n_blocks = total + 2, max_blocks = most + 3;
    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const size_t kb = row_size(kv, d), vb = row_size(kv, dv);
    const size_t n_rows = static_cast<size_t>(n_blocks) * bs * n_kv;
    b->kp.resize(kb * n_rows);
    b->vp.resize(vb * n_rows);
    for (size_t r = 0; r < n_rows; ++r) {
      poison_row(kv, b->kp.data() + r * kb, d);
      poison_row(kv, b->vp.data() + r * vb, dv);
    }
    b->table.assign(static_cast<size_t>(max_blocks * n_seq), 0);
    int next = 0;
    for (int64_t s = 0; s < n_seq; ++s) {
      for (int blk = 0; blk < max_blocks; ++blk) {
        int32_t id = blk % 2 == 0 ? -1 : (1 << 30);
        if (blk < used[s]) id = perm[static_cast<size_t>(next++)];
        b->table[static_cast<size_t>(s * max_blocks + blk)] = id;
        if (blk >= used[s]) continue;
        for (int r = 0; r < bs && blk * bs + r < lens[s]; ++r) {
          for (int h = 0; h < n_kv; ++h) {
            const size_t src = static_cast<size_t>((s * n_ctx + blk * bs + r) * n_kv + h);
            const size_t dst = static_cast<size_t>((id * bs + r) * n_kv + h);
            std::memcpy(b->kp.data() + dst * kb, k.data() + src * kb, kb);
            std::memcpy(b->vp.data() + dst * vb, v.data() + src * vb, vb);
          }
        }
      }
    }
    op.src[1] = TensorView::contiguous(b->kp.data(), kv, {d, n_kv, bs, n_blocks});
    op.src[2] = TensorView::contiguous(b->vp.data(), kv, {dv, n_kv, bs, n_blocks});
    op.src[6] = TensorView::contiguous(b->table.data(), DType::I32, {max_blocks, n_seq});
    p.layout = KvLayout::kPaged;
    p.block_size = bs;
    op.params = p;
    return b;
  }

  std::vector<int> all() const {
    std::vector<int> w(tokens.size());
    std::iota(w.begin(), w.end(), 0);
    return w;
  }
};

// 1 seq x 3000 (split-K once threads outnumber its chunks), f16, 8 q / 2 kv heads.
Problem long_decode(std::mt19937& rng) {
  Problem pb;
  pb.kv_len = {3000};
  pb.add_tail_tokens({1});
  pb.params.scale = 0.09f;
  pb.fill(rng);
  return pb;
}

// Five decodes of mixed lengths, q8_0, window and sinks, gqa 4.
Problem batch_decode(std::mt19937& rng) {
  Problem pb;
  pb.kv = DType::Q8_0, pb.d = pb.dv = 64, pb.n_head = 8, pb.n_kv = 2, pb.sinks = true;
  pb.kv_len = {2100, 1, 513, 700, 1500};
  pb.add_tail_tokens({1, 1, 1, 1, 1});
  pb.params.scale = 0.125f, pb.params.window = 700;
  pb.fill(rng);
  return pb;
}

// Prefill chunks: 40 tokens after a 1460-token prefix, a fresh 21-token
// prompt; f32, d 80, softcap, gqa 1, tokens interleaved.
Problem prefill(std::mt19937& rng) {
  Problem pb;
  pb.kv = DType::F32, pb.d = pb.dv = 80, pb.n_head = 3, pb.n_kv = 3;
  pb.kv_len = {1500, 21};
  pb.add_tail_tokens({40, 21});
  std::shuffle(pb.tokens.begin(), pb.tokens.end(), rng);
  pb.params.scale = 0.3f, pb.params.softcap = 20.0f;
  pb.fill(rng);
  return pb;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SimdFlashAttn : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (active_isa() < GetParam()) GTEST_SKIP() << "hardware: " << isa_name(GetParam()) << " not available";
  }

  // Runs `op` on this tier with `threads` threads; returns its output.
  std::vector<float> run(Problem::Built& b, int threads) {
    std::unique_ptr<ThreadPool> pool;
    if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
    CpuBackend be(CpuBackendOptions{GetParam(), false, pool.get()});
    const std::string name = be.kernel_name(b.op);
    const std::string tier = GetParam() == Isa::kScalar ? "scalar" : isa_name(GetParam());
    EXPECT_EQ(name, "flash_attn." + tier) << b.op.describe();
    std::fill(b.out.begin(), b.out.end(), 7.0f);
    Status s = be.run(b.op);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return b.out;
  }
};

TEST_P(SimdFlashAttn, AnyThreadCountGivesTheSameBits) {
  std::mt19937 rng(11);
  for (Problem pb : {long_decode(rng), batch_decode(rng), prefill(rng)}) {
    for (int bs : {0, 16}) {
      auto b = pb.build(pb.all(), pb.kv_len, bs, rng);
      const std::vector<float> one = run(*b, 1);
      for (float x : one) ASSERT_TRUE(std::isfinite(x)) << b->op.describe();
      for (int threads : {2, 3, 4}) {
        EXPECT_TRUE(same_bits(run(*b, threads), one))
            << b->op.describe() << ", " << threads << " threads";
      }
    }
  }
}

TEST_P(SimdFlashAttn, PagedEqualsContiguousForEveryBlockSize) {
  std::mt19937 rng(12);
  for (Problem pb : {long_decode(rng), batch_decode(rng), prefill(rng)}) {
    auto contig = pb.build(pb.all(), pb.kv_len, 0, rng);
    const std::vector<float> want = run(*contig, 1);
    for (int bs : {8, 16, 24, 64, 128}) {
      auto paged = pb.build(pb.all(), pb.kv_len, bs, rng);
      EXPECT_TRUE(same_bits(run(*paged, 1), want)) << paged->op.describe() << " bs " << bs;
      EXPECT_TRUE(same_bits(run(*paged, 3), want)) << paged->op.describe() << " bs " << bs;
    }
  }
}

// The rows of `part` (indices into the problem's tokens) in `whole`'s output.
std::vector<float> rows_of(const Problem& pb, const std::vector<float>& whole,
                           const std::vector<int>& part) {
  const size_t row = static_cast<size_t>(pb.dv * pb.n_head);
  std::vector<float> out;
  for (int i : part) out.insert(out.end(), whole.begin() + i * row, whole.begin() + (i + 1) * row);
  return out;
}

TEST_P(SimdFlashAttn, DecodeRowsDoNotDependOnTheirBatch) {
  std::mt19937 rng(13);
  Problem pb = batch_decode(rng);
  for (int threads : {1, 3}) {
    auto whole = pb.build(pb.all(), pb.kv_len, 16, rng);
    const std::vector<float> all = run(*whole, threads);
    for (int i = 0; i < static_cast<int>(pb.tokens.size()); ++i) {
      auto alone = pb.build({i}, pb.kv_len, 64, rng);
      EXPECT_TRUE(same_bits(run(*alone, threads), rows_of(pb, all, {i})))
          << "token " << i << ", " << threads << " threads";
    }
  }
}

TEST_P(SimdFlashAttn, ChunkedPrefillEqualsWholePrefill) {
  std::mt19937 rng(14);
  Problem pb;
  pb.kv = DType::F16, pb.d = pb.dv = 64, pb.n_head = 4, pb.n_kv = 2, pb.sinks = true;
  pb.kv_len = {1100};
  pb.add_tail_tokens({70});  // positions 1030..1099
  pb.params.scale = 0.125f, pb.params.window = 600;
  pb.fill(rng);
  std::vector<int> first(33), second(37);
  std::iota(first.begin(), first.end(), 0);
  std::iota(second.begin(), second.end(), 33);
  for (int threads : {1, 2}) {
    auto whole = pb.build(pb.all(), pb.kv_len, 16, rng);
    const std::vector<float> all = run(*whole, threads);
    // The first chunk runs before the second one's K/V exist: kv_len ends at its last token.
    auto a = pb.build(first, {pb.tokens[32].second + 1}, 32, rng);
    auto b = pb.build(second, pb.kv_len, 0, rng);
    EXPECT_TRUE(same_bits(run(*a, threads), rows_of(pb, all, first))) << threads << " threads";
    EXPECT_TRUE(same_bits(run(*b, threads), rows_of(pb, all, second))) << threads << " threads";
    // The last token on its own, as a decode step would compute it.
    auto last = pb.build({69}, pb.kv_len, 0, rng);
    EXPECT_TRUE(same_bits(run(*last, threads), rows_of(pb, all, {69}))) << threads << " threads";
  }
}

// Head dimensions that are not multiples of the vector width (row tails,
// zero padding in both the buffered and the packed path) against the
// reference, and paged == contiguous for them.
TEST_P(SimdFlashAttn, OddHeadDimsMatchTheReference) {
  std::mt19937 rng(16);
  CpuBackend ref(CpuBackendOptions{Isa::kScalar, true, nullptr});
  const struct {
    int d, dv;
    DType kv;
  } dims[] = {{8, 8, DType::F16},    {40, 24, DType::F32},  {66, 66, DType::F32},
              {72, 136, DType::F16}, {136, 72, DType::F16}, {160, 96, DType::Q8_0}};
  for (const auto& dm : dims) {
    Problem pb;
    pb.d = dm.d, pb.dv = dm.dv, pb.kv = dm.kv, pb.n_head = 4, pb.n_kv = 2, pb.sinks = true;
    pb.kv_len = {150, 90, 1};
    pb.add_tail_tokens({1, 20, 1});  // a decode, a prefill chunk, a first token
    pb.params.scale = 0.2f, pb.params.softcap = 10.0f;
    pb.fill(rng);
    auto contig = pb.build(pb.all(), pb.kv_len, 0, rng);
    ASSERT_TRUE(ref.run(contig->op).ok());
    const std::vector<float> want = contig->out;
    const std::vector<float> got = run(*contig, 1);
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
      norm += want[i] * static_cast<double>(want[i]);
    }
    EXPECT_LT(err / norm, 1e-10) << contig->op.describe();
    auto paged = pb.build(pb.all(), pb.kv_len, 8, rng);
    EXPECT_TRUE(same_bits(run(*paged, 2), got)) << paged->op.describe();
  }
}

TEST_P(SimdFlashAttn, BadIndexDataIsAnErrorAndWritesNothing) {
  std::mt19937 rng(15);
  Problem pb = batch_decode(rng);
  CpuBackend be(CpuBackendOptions{GetParam(), false, nullptr});
  {
    auto b = pb.build(pb.all(), pb.kv_len, 16, rng);
    b->table[0] = 1 << 30;  // a used entry of sequence 0
    EXPECT_EQ(be.run(b->op).code(), StatusCode::kOutOfRange);
    for (float x : b->out) ASSERT_EQ(x, 7.0f);
  }
  {
    auto b = pb.build(pb.all(), pb.kv_len, 0, rng);
    b->len[2] = pb.n_ctx + 1;  // beyond the contiguous capacity
    EXPECT_EQ(be.run(b->op).code(), StatusCode::kOutOfRange);
    for (float x : b->out) ASSERT_EQ(x, 7.0f);
  }
}

// The SIMD tiers run one body over the traits type (simd/flash_attn.h):
// AVX2 and AVX-512 give the same bytes, in both feeds (prefill tile buffers,
// decode rows read in place), every K/V type, softcap, sinks, windows and
// head dimensions with row tails.
TEST(SimdFlashAttnTiers, Avx2AndAvx512GiveTheSameBytes) {
  if (active_isa() < Isa::kAvx512) GTEST_SKIP() << "hardware: avx512 not available";
  std::mt19937 rng(17);
  std::vector<Problem> problems = {long_decode(rng), batch_decode(rng), prefill(rng)};
  const struct {
    int d, dv;
    DType kv;
    int n_head;
  } dims[] = {{40, 24, DType::F32, 4},
              {72, 136, DType::F16, 8},
              {160, 96, DType::Q8_0, 8},
              {128, 128, DType::F16, 8}};
  for (const auto& dm : dims) {
    Problem pb;
    pb.d = dm.d, pb.dv = dm.dv, pb.kv = dm.kv, pb.n_head = dm.n_head, pb.n_kv = 2;
    pb.sinks = true;
    pb.kv_len = {150, 90, 1, 700};
    pb.add_tail_tokens({1, 20, 1, 67});  // decodes, prefill chunks, a first token
    pb.params.scale = 0.2f, pb.params.softcap = dm.kv == DType::F16 ? 0.0f : 10.0f;
    pb.fill(rng);
    problems.push_back(pb);
  }
  CpuBackend avx2{CpuBackendOptions{Isa::kAvx2, false, nullptr}};
  CpuBackend avx512{CpuBackendOptions{Isa::kAvx512, false, nullptr}};
  for (Problem& pb : problems) {
    for (int bs : {0, 16}) {
      auto b = pb.build(pb.all(), pb.kv_len, bs, rng);
      ASSERT_EQ(avx2.kernel_name(b->op), "flash_attn.avx2");
      ASSERT_EQ(avx512.kernel_name(b->op), "flash_attn.avx512");
      ASSERT_TRUE(avx2.run(b->op).ok());
      const std::vector<float> want = b->out;
      std::fill(b->out.begin(), b->out.end(), 7.0f);
      ASSERT_TRUE(avx512.run(b->op).ok());
      for (float x : want) ASSERT_TRUE(std::isfinite(x)) << b->op.describe();
      EXPECT_TRUE(same_bits(b->out, want)) << b->op.describe() << " bs " << bs;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, SimdFlashAttn,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace folio
